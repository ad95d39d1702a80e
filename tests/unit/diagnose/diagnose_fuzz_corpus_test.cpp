// Runs the diagnosis fuzz target's entry point (tests/fuzz/diagnose_fuzz.cpp, compiled into this
// test) over its seed corpus (tests/fuzz/corpus/diagnose: a span bomb, a CSV three years long, a
// trace cut off mid-line, small real-shaped traces of every pattern) and 300 fixed-seed mutations,
// so CI exercises the diagnosis of odd input with gcc, without libFuzzer. A broken invariant
// aborts the test with the reason; each input must also end (a hang guard far above its normal time).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "unit/telemetry/fuzz_mutate.hpp"

namespace gpudoc::diagnose {
namespace {

using telemetry::testing::fuzz_seeds;
using telemetry::testing::kFuzzInputHangGuardSeconds;
using telemetry::testing::timed_fuzz_input;

const std::vector<std::string> kTokens = {
    "\n",
    "{",
    "}",
    ",",
    "\"",
    "1e8",
    "99999999.9",
    "100000000",
    "-1",
    "0.1",
    "1e-7",
    "4096",
    "\"gpu\":1",
    "\"t\":",
    "\"gpu_utilization_percent\":",
    "\"gpm_sm_activity_percent\":",
    "\"power_watts\":",
    "\"type\":\"process\",\"t\":1,\"gpu\":0,\"pid\":3,\"sm_utilization_percent\":50",
    "\"kind\":\"process_exit\"",
    "2099/01/01 00:00:00.000",
    ", 100 %",
    "\xff",
    "\r\n",
};

TEST(DiagnoseFuzzCorpus, SeedsKeepTheInvariants) {
  const auto seeds = fuzz_seeds("diagnose");
  ASSERT_GE(seeds.size(), 7u);
  for (const auto& s : seeds) EXPECT_LT(timed_fuzz_input(s), kFuzzInputHangGuardSeconds);  // hang guard
}

TEST(DiagnoseFuzzCorpus, MutationsKeepTheInvariants) {
  const auto seeds = fuzz_seeds("diagnose");
  ASSERT_FALSE(seeds.empty());
  std::mt19937_64 rng(20261130);
  for (int i = 0; i < 300; ++i) {
    const std::string input =
        telemetry::testing::mutate(seeds[static_cast<std::size_t>(i) % seeds.size()], seeds, kTokens, rng);
    EXPECT_LT(timed_fuzz_input(input), kFuzzInputHangGuardSeconds) << "mutation " << i;  // hang guard
  }
}

}  // namespace
}  // namespace gpudoc::diagnose
