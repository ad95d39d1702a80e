// Runs the fuzz target's entry point (tests/fuzz/trace_reader_fuzz.cpp, compiled into this test)
// over the seed corpus and 2000 fixed-seed mutations of it, so CI exercises the reader's
// invariants with gcc, without libFuzzer. A broken invariant aborts the test with the reason.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "trace_test_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace gpudoc::telemetry {
namespace {

int run_one(const std::string& input) {
  return LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
}

std::vector<std::string> seed_corpus() {
  std::vector<std::string> seeds;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(GPUDOC_SOURCE_DIR "/tests/fuzz/corpus/trace"))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());  // directory order is unspecified; the run must repeat
  for (const auto& f : files) seeds.push_back(testing::slurp(f.string()));
  return seeds;
}

// Tokens that tend to reach the reader's edges.
const std::vector<std::string> kTokens = {
    "\n", "{", "}", "[", "]", ",", ":", "\"", "\\u0000", "\\ud800", "1e999", "-1", "-1.5", "100000001", "4096",
    "4294967296", "18446744073709551616", "null", "true", "0.0000001", "\"type\":\"end\"", "\"type\":\"header\"",
    "\"gpu\":1", "\"t\":", "\"power_watts\":", "\"kind\":\"xid\"", "\xff", "\r\n", " ",
};

std::string mutate(const std::string& in, const std::vector<std::string>& seeds, std::mt19937_64& rng) {
  std::string s = in;
  auto pick = [&](std::size_t n) { return n == 0 ? std::size_t{0} : std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };
  int steps = 1 + static_cast<int>(pick(4));
  for (int k = 0; k < steps; ++k) {
    switch (pick(8)) {
      case 0:  // flip a bit
        if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1u << pick(8));
        break;
      case 1:  // insert a token
        s.insert(pick(s.size() + 1), kTokens[pick(kTokens.size())]);
        break;
      case 2: {  // delete a range
        if (s.empty()) break;
        std::size_t at = pick(s.size());
        s.erase(at, 1 + pick(std::min<std::size_t>(16, s.size() - at)));
        break;
      }
      case 3:  // truncate
        s.resize(pick(s.size() + 1));
        break;
      case 4: {  // duplicate a line
        auto lines = testing::lines_of(s);
        if (lines.empty()) break;
        std::size_t i = pick(lines.size());
        lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(pick(lines.size() + 1)), lines[i]);
        s.clear();
        for (const auto& l : lines) s += l + "\n";
        break;
      }
      case 5: {  // swap two lines
        auto lines = testing::lines_of(s);
        if (lines.size() < 2) break;
        std::swap(lines[pick(lines.size())], lines[pick(lines.size())]);
        s.clear();
        for (const auto& l : lines) s += l + "\n";
        break;
      }
      case 6: {  // splice in a line of another seed
        auto lines = testing::lines_of(seeds[pick(seeds.size())]);
        if (!lines.empty()) s += lines[pick(lines.size())] + "\n";
        break;
      }
      default: {  // replace a digit with another number
        std::size_t at = s.find_first_of("0123456789", pick(s.size() + 1));
        if (at != std::string::npos) s.replace(at, 1, kTokens[pick(kTokens.size())]);
        break;
      }
    }
  }
  return s;
}

TEST(TraceFuzzCorpus, SeedsKeepTheInvariants) {
  auto seeds = seed_corpus();
  ASSERT_GE(seeds.size(), 3u);
  for (const auto& s : seeds) EXPECT_EQ(run_one(s), 0);
}

TEST(TraceFuzzCorpus, TwoThousandMutationsKeepTheInvariants) {
  auto seeds = seed_corpus();
  ASSERT_FALSE(seeds.empty());
  std::mt19937_64 rng(20260528);
  std::size_t accepted = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string input = mutate(seeds[static_cast<std::size_t>(i) % seeds.size()], seeds, rng);
    EXPECT_EQ(run_one(input), 0);
    if (parse_trace(input, "m").ok()) ++accepted;
  }
  // Mutations that still parse exercise the round trip; make sure there are some.
  EXPECT_GT(accepted, 50u);
}

}  // namespace
}  // namespace gpudoc::telemetry
