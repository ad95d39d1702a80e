// Runs the fuzz target's entry point (tests/fuzz/trace_reader_fuzz.cpp, compiled into this test)
// over the seed corpus and 2000 fixed-seed mutations of it, so CI exercises the reader's
// invariants with gcc, without libFuzzer. A broken invariant aborts the test with the reason.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "fuzz_mutate.hpp"
#include "trace_test_util.hpp"

namespace gpudoc::telemetry {
namespace {

using testing::fuzz_seeds;
using testing::run_fuzz_input;

// Tokens that tend to reach the reader's edges.
const std::vector<std::string> kTokens = {
    "\n",
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\"",
    "\\u0000",
    "\\ud800",
    "1e999",
    "-1",
    "-1.5",
    "100000001",
    "4096",
    "4294967296",
    "18446744073709551616",
    "null",
    "true",
    "0.0000001",
    "\"type\":\"end\"",
    "\"type\":\"header\"",
    "\"gpu\":1",
    "\"t\":",
    "\"power_watts\":",
    "\"kind\":\"xid\"",
    "\xff",
    "\r\n",
    " ",
};

std::string mutate(const std::string& in, const std::vector<std::string>& seeds, std::mt19937_64& rng) {
  return testing::mutate(in, seeds, kTokens, rng);
}

TEST(TraceFuzzCorpus, SeedsKeepTheInvariants) {
  auto seeds = fuzz_seeds("trace");
  ASSERT_GE(seeds.size(), 3u);
  for (const auto& s : seeds) EXPECT_EQ(run_fuzz_input(s), 0);
}

TEST(TraceFuzzCorpus, TwoThousandMutationsKeepTheInvariants) {
  auto seeds = fuzz_seeds("trace");
  ASSERT_FALSE(seeds.empty());
  std::mt19937_64 rng(20260528);
  std::size_t accepted = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string input = mutate(seeds[static_cast<std::size_t>(i) % seeds.size()], seeds, rng);
    EXPECT_EQ(run_fuzz_input(input), 0);
    if (parse_trace(input, "m").ok()) ++accepted;
  }
  // Mutations that still parse exercise the round trip; make sure there are some.
  EXPECT_GT(accepted, 50u);
}

}  // namespace
}  // namespace gpudoc::telemetry
