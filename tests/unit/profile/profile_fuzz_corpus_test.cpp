// Runs the profile fuzz target's entry point (tests/fuzz/profile_fuzz.cpp, compiled into this test)
// over its seed corpus (tests/fuzz/corpus/profile: slices of two real H200 records files, one cut off
// mid-line as a killed job leaves it, a sampled run, CUDA graphs and copies, names built to break
// the HTML page) and 400 fixed-seed mutations, so CI exercises the reading and analysis of odd
// records with gcc, without libFuzzer. A broken invariant aborts the test with the reason; each
// input must also end (a hang guard far above its normal time).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "unit/telemetry/fuzz_mutate.hpp"

namespace gpudoc::profile {
namespace {

using telemetry::testing::fuzz_seeds;
using telemetry::testing::kFuzzInputHangGuardSeconds;
using telemetry::testing::timed_fuzz_input;

// Strings likely to reach the reader's and the analysis's edges: field and line breaks, escapes,
// times at and past the 64-bit bounds, backwards windows, tags and bytes that are not UTF-8.
const std::vector<std::string> kTokens = {"\n",
                                          "\t",
                                          "\\",
                                          "\\t",
                                          "\\n",
                                          "0",
                                          "1",
                                          "-1",
                                          "18446744073709551615",
                                          "18446744073709551616",
                                          "4294967295",
                                          "\nO\t1\n",
                                          "\nF\t0\n",
                                          "\nO\t18446744073709551615\n",
                                          "\nF\t1796106955813493149\n",
                                          "\nE\t1\t0\n",
                                          "\nN\t2\t1\t5\t7\tstep\t\n",
                                          "\nN\t4\t1\t4\t7\t\t\n",
                                          "\nK\t1\t0\t0\t7\t1\t1\t1\t1\t1\t1\t1\t0\tk\n",
                                          "\nR\t9\t3\t211\t1\t7\n",
                                          "\nC\tR\t211\tcudaStreamSynchronize\n",
                                          "\nH\tgpudoc-profile\t2\t1\t1\n",
                                          "</script>",
                                          "<img src=x>",
                                          "\xff",
                                          "\xc3",
                                          "\r\n",
                                          "_Z",
                                          "_ZN1aIiE1bEv("};

TEST(ProfileFuzzCorpus, SeedsKeepTheInvariants) {
  const auto seeds = fuzz_seeds("profile");
  ASSERT_GE(seeds.size(), 6u);
  for (const auto& s : seeds) EXPECT_LT(timed_fuzz_input(s), kFuzzInputHangGuardSeconds);  // hang guard
}

TEST(ProfileFuzzCorpus, MutationsKeepTheInvariants) {
  const auto seeds = fuzz_seeds("profile");
  ASSERT_FALSE(seeds.empty());
  std::mt19937_64 rng(20261201);
  for (int i = 0; i < 400; ++i) {
    const std::string input =
        telemetry::testing::mutate(seeds[static_cast<std::size_t>(i) % seeds.size()], seeds, kTokens, rng);
    EXPECT_LT(timed_fuzz_input(input), kFuzzInputHangGuardSeconds) << "mutation " << i;  // hang guard
  }
}

}  // namespace
}  // namespace gpudoc::profile
