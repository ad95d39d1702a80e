// What the gcc-side fuzz corpus tests share: a target's seeds (tests/fuzz/corpus/NAME), its entry
// point run on one input, and the mutations they apply to the seeds (a bit flipped, a token
// inserted, a range deleted, the input truncated, lines duplicated, swapped or spliced in from
// another seed, a digit replaced by a token), so CI exercises a parser's edges without libFuzzer.
// Each test executable compiles one target's entry point in.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "trace_test_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace gpudoc::telemetry::testing {

// The seeds of tests/fuzz/corpus/`corpus`, file name -> content, in name order (directory order is
// unspecified; a run must repeat).
inline std::map<std::string, std::string> fuzz_seed_files(const std::string& corpus) {
  std::map<std::string, std::string> seeds;
  for (const auto& e : std::filesystem::directory_iterator(GPUDOC_SOURCE_DIR "/tests/fuzz/corpus/" + corpus))
    if (e.is_regular_file()) seeds[e.path().filename().string()] = slurp(e.path().string());
  return seeds;
}

// The same, contents only.
inline std::vector<std::string> fuzz_seeds(const std::string& corpus) {
  std::vector<std::string> out;
  for (auto& [name, content] : fuzz_seed_files(corpus)) out.push_back(std::move(content));
  return out;
}

// The entry point's return value for `input` (0: a broken invariant aborts instead).
inline int run_fuzz_input(const std::string& input) {
  return LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
}

// The seconds the entry point took on `input`; infinity when it did not return 0, which fails every
// "took less than" check.
// hang guard: an input normally takes well under 0.1 s (the slowest seeds, ~10 ms); a bound of
// 10 s per input is 100x that on a loaded machine, and still stops a parser that loops or grows
// without bound.
inline constexpr double kFuzzInputHangGuardSeconds = 10.0;

inline double timed_fuzz_input(const std::string& input) {
  const auto a = std::chrono::steady_clock::now();
  const int r = run_fuzz_input(input);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
  return r == 0 ? s : std::numeric_limits<double>::infinity();
}

inline std::string join_lines(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

// 1 to 4 random steps over `in`; `tokens` are the strings likely to reach the parser's edges.
inline std::string mutate(const std::string& in, const std::vector<std::string>& seeds,
                          const std::vector<std::string>& tokens, std::mt19937_64& rng) {
  std::string s = in;
  auto pick = [&](std::size_t n) {
    return n == 0 ? std::size_t{0} : std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
  };
  int steps = 1 + static_cast<int>(pick(4));
  for (int k = 0; k < steps; ++k) {
    switch (pick(8)) {
      case 0:  // flip a bit
        if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1u << pick(8));
        break;
      case 1:  // insert a token
        s.insert(pick(s.size() + 1), tokens[pick(tokens.size())]);
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
        auto lines = lines_of(s);
        if (lines.empty()) break;
        std::size_t i = pick(lines.size());
        lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(pick(lines.size() + 1)), lines[i]);
        s = join_lines(lines);
        break;
      }
      case 5: {  // swap two lines
        auto lines = lines_of(s);
        if (lines.size() < 2) break;
        std::swap(lines[pick(lines.size())], lines[pick(lines.size())]);
        s = join_lines(lines);
        break;
      }
      case 6: {  // splice in a line of another seed
        auto lines = lines_of(seeds[pick(seeds.size())]);
        if (!lines.empty()) s += lines[pick(lines.size())] + "\n";
        break;
      }
      default: {  // replace a digit with another number
        std::size_t at = s.find_first_of("0123456789", pick(s.size() + 1));
        if (at != std::string::npos) s.replace(at, 1, tokens[pick(tokens.size())]);
        break;
      }
    }
  }
  return s;
}

}  // namespace gpudoc::telemetry::testing
