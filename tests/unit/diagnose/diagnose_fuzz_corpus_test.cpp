// Runs the diagnosis fuzz target's entry point (tests/fuzz/diagnose_fuzz.cpp, compiled into this
// test) over its seed corpus (tests/fuzz/corpus/diagnose: a span bomb, a CSV three years long, a
// trace cut off mid-line, small real-shaped traces of every pattern) and 300 fixed-seed mutations,
// so CI exercises the diagnosis of odd input with gcc, without libFuzzer. A broken invariant
// aborts the test with the reason; each input must also finish in well under a second.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "unit/telemetry/fuzz_mutate.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace gpudoc::diagnose {
namespace {

double run_one(const std::string& input) {
  const auto a = std::chrono::steady_clock::now();
  EXPECT_EQ(LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(input.data()), input.size()), 0);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
}

std::vector<std::string> seed_corpus() {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(GPUDOC_SOURCE_DIR "/tests/fuzz/corpus/diagnose"))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());  // directory order is unspecified; the run must repeat
  std::vector<std::string> seeds;
  for (const auto& f : files) seeds.push_back(telemetry::testing::slurp(f.string()));
  return seeds;
}

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

TEST(DiagnoseFuzzCorpus, SeedsKeepTheInvariantsQuickly) {
  const auto seeds = seed_corpus();
  ASSERT_GE(seeds.size(), 7u);
  for (const auto& s : seeds) EXPECT_LT(run_one(s), 1.0);
}

TEST(DiagnoseFuzzCorpus, MutationsKeepTheInvariantsQuickly) {
  const auto seeds = seed_corpus();
  ASSERT_FALSE(seeds.empty());
  std::mt19937_64 rng(20261130);
  for (int i = 0; i < 300; ++i) {
    const std::string input =
        telemetry::testing::mutate(seeds[static_cast<std::size_t>(i) % seeds.size()], seeds, kTokens, rng);
    EXPECT_LT(run_one(input), 1.0) << "mutation " << i;
  }
}

}  // namespace
}  // namespace gpudoc::diagnose
