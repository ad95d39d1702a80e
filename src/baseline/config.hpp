// gpudoc::baseline config — how each figure of a baseline is judged: which direction is better
// and how large a change must be before it counts (the threshold), from a small JSON file with
// defaults for common names.
//
//   auto cfg = baseline::parse_config(R"({"metrics": {"step_ms": {"threshold_percent": 5}}})", "cfg.json");
//   baseline::Rule r = cfg->rule_for("step_ms", "ms", std::nullopt);   // lower is better, 5 %
//
// File (`gpudoc.baseline.json` in the working directory, or --config FILE):
//   {
//     "noise_k": 2,                 // a change inside noise_k x the measured noise is never a regression
//     "alpha": 0.05,                // significance level of the rank test
//     "metrics": {                  // exact names or globs with '*'; the first exact match wins,
//       "step_ms":  {"direction": "lower", "threshold_percent": 10},   //  then the longest glob
//       "wall_s":   {"min_change": 1.0},  // absolute, in the figure's unit: smaller changes are ok
//       "accuracy": {"direction": "higher", "threshold_percent": 1},
//       "hbm.*":    {"threshold_percent": 3}
//     }
//   }
// Pure functions; a Config is immutable after parsing and safe to share between threads.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/file.hpp"
#include "core/result.hpp"
#include "store/records.hpp"

namespace gpudoc::baseline {

// Which way a figure gets better, as the store keeps it (store/records.hpp).
using store::Direction;
using store::direction_from_string;
using store::to_string;

struct Rule {
  Direction direction = Direction::kUnknown;
  double threshold_percent = 5;  // a change smaller than this (relative to the baseline median) is ok
  double min_change = 0;         // a change smaller than this, in the figure's unit, is ok (resolution)
  std::string origin;            // "config: step_ms", "default: *_ms (time)", "benchmark"
  bool gated = true;             // false: compared and shown, never a failure (why_not_gated says why)
  std::string why_not_gated{};
  bool gate_from_config = false;  // `gated` was set by the config's "gate" (no default overrides it)
};

struct MetricOverride {
  std::string pattern;  // exact name or a glob with '*'
  std::optional<Direction> direction;
  std::optional<double> threshold_percent;
  std::optional<double> min_change;
  std::optional<bool> gate{};
};

inline constexpr double kDefaultNoiseK = 2.0;
inline constexpr double kDefaultAlpha = 0.05;

struct Config {
  double noise_k = kDefaultNoiseK;
  double alpha = kDefaultAlpha;
  std::vector<MetricOverride> metrics;
  std::string source = "built-in defaults";  // the file it came from

  // The rule for a figure: the config's entry (exact name first, then the longest matching glob)
  // over the figure's own direction (a benchmark knows it), over the built-in name defaults.
  // `unit` helps the defaults ("GB/s" is a bandwidth, "ms" a time).
  [[nodiscard]] Rule rule_for(std::string_view name, std::string_view unit,
                              std::optional<Direction> figure_direction) const;
};

// The built-in rule for a name and unit alone (documented in README "Baselines"):
//   bandwidth (unit GB/s, names with "bandwidth"/"gbps")        higher, 5 %
//   time (*_ms, *_us, *_s, time*, *_time*, units s/ms/us)       lower, 10 %
//   throughput (*_per_second, *_per_s, throughput*, *tflops*)    higher, 5 %
//   accuracy-like (accuracy*, *_accuracy, acc, f1, *score*)      higher, 1 %
//   loss (loss*, *_loss)                                         lower, 5 %
//   memory (*_bytes, *memory*)                                   lower, 10 %
//   energy (*joules*, *energy*)                                  lower, 10 %
//   wall_s (gpudoc's own wall time)                               lower, 10 %, changes under 0.2 s ignored
//                                                                (process start-up jitter); shown, not
//                                                                gated, when gpu_active_s is compared
//   gpu_active_s (the span of the steady GPU work)               lower, 5 %, changes under 0.2 s ignored
//   startup_s (start to the steady GPU work)                     lower, 10 %, changes under 0.5 s ignored;
//                                                                shown, not gated (it moves with the host)
//   anything else                                                unknown (shown, not gated)
[[nodiscard]] Rule default_rule(std::string_view name, std::string_view unit);

// True when `name` matches `pattern` ('*' matches any run of characters, including none).
[[nodiscard]] bool glob_match(std::string_view pattern, std::string_view name) noexcept;

// Parses a config file's text. Errors: kBadInput naming `source_name` and what is wrong
// ("gpudoc.baseline.json: metrics.step_ms.direction: expected \"lower\" or \"higher\", got \"up\"").
[[nodiscard]] core::Result<Config> parse_config(std::string_view text, std::string_view source_name);

// A config is a page of JSON; 4 MiB is far beyond any, and /dev/zero or an endless FIFO given as
// --config is refused there (docs/limits.md).
inline constexpr core::InputLimits kConfigInput{.max_bytes = 4 << 20, .what = "a baseline config"};

// Loads `path` when given (it must exist), else `gpudoc.baseline.json` in the working directory
// when present, else the built-in defaults. Errors: kIo for an unreadable file given by path,
// kBadInput as parse_config or beyond kConfigInput.
[[nodiscard]] core::Result<Config> load_config(const std::optional<std::string>& path);

}  // namespace gpudoc::baseline
