// gpudoc::guard policy — when the guard escalates and what it advises, read from a small
// line-based file (docs/guard-policy.md). Pure: parse_policy works on text; load_policy reads a file.
//
//   core::Result<guard::Policy> p = guard::load_policy("guard.policy");   // errors: "FILE:LINE: ..."
//   guard::Policy d = guard::default_policy();                            // parse of default_policy_text()
//
// The grammar, one statement a line ('#' starts a comment anywhere; blank lines are ignored):
//
//   horizon_s = NUMBER                 forecast horizon in seconds, 0 < NUMBER <= 600 (default 5)
//   noncritical = WORD...              processes paused at a level with pause_noncritical: a process
//                                      name, or re:REGEX (ECMAScript) matched against the whole name;
//                                      global wherever it appears, repeated lines add up
//   [level1] | [level2] | [level3]     starts a level; a level in the file replaces that default
//                                      level whole, a level not in the file keeps its default
//   when = METRIC OP LIMIT             (in a level, repeatable) the level fires when any `when` does
//   clear_below = LIMIT                (after a `when ... >=`) hysteresis: that trigger is cleared
//                                      only below this; without it, below its own threshold
//   clear_above = LIMIT                (after a `when ... <=`) the same for seconds_to_oom
//   fatal = EVENT, ...                 (in a level) these events fire the level and latch it
//   action = ACTION, ...               (in a level, required) what is advised, in order
//   min_interval_s = NUMBER            (in a level) its actions are sent at most this often
//
//   METRIC: gpu_temp_forecast, memory_temp_forecast (°C, OP >=), power (W, OP >=),
//           seconds_to_oom (s, OP <=)
//   LIMIT for a temperature or power: BASE, BASE - NUMBER or BASE + NUMBER, where BASE is what the
//           GPU itself reports: slowdown, max_operating, shutdown, memory_max (°C), power_limit (W).
//           A fixed number of degrees or watts is refused. LIMIT for seconds_to_oom: NUMBER.
//   EVENT:  xid (a fatal XID class), ecc_uncorrectable, row_remap_failure, gpu_lost
//   ACTION: shrink_batch FACTOR (0 < FACTOR < 1), checkpoint_now, pause_noncritical, stop.
//           resume_noncritical is sent by the guard itself when a paused level clears. A GPU reset
//           is never an action (the guard only suggests one in its log).
//
// A level needs an action and at least one `when` or `fatal`. Unknown keys, sections and words are
// errors, each named "FILE:LINE: what is wrong; what is allowed".
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/file.hpp"
#include "core/result.hpp"

namespace gpudoc::guard {

enum class Metric { kGpuTempForecast, kMemoryTempForecast, kPower, kSecondsToOom };
enum class LimitBase { kNone, kSlowdown, kMaxOperating, kShutdown, kMemoryMax, kPowerLimit };
enum class Action { kShrinkBatch, kCheckpointNow, kPauseNoncritical, kResumeNoncritical, kStop };
enum class FatalEvent { kXid, kEccUncorrectable, kRowRemapFailure, kGpuLost };

// BASE + offset (BASE from the device), or a plain number when base is kNone (seconds only).
struct Limit {
  LimitBase base = LimitBase::kNone;
  double offset = 0;
};

struct Trigger {
  Metric metric = Metric::kGpuTempForecast;
  Limit threshold;
  std::optional<Limit> clear;  // hysteresis; absent: the threshold itself
  std::string text;            // as written, for reasons: "gpu_temp_forecast >= slowdown - 8"
  int line = 0;                // where it was written (0: built in)
};

struct ActionStep {
  Action action = Action::kCheckpointNow;
  double factor = 0;  // shrink_batch only
};

struct Level {
  int number = 0;  // 1, 2 or 3
  std::vector<Trigger> triggers;
  std::vector<FatalEvent> fatal;
  std::vector<ActionStep> actions;
  double min_interval_s = 0;
};

struct Policy {
  double horizon_s = 5.0;
  std::vector<Level> levels;             // by number, 1 to 3
  std::vector<std::string> noncritical;  // names, or "re:REGEX"
};

// "gpu_temp_forecast", "slowdown", "shrink_batch", "gpu_lost", ...: the words of the grammar.
[[nodiscard]] const char* to_string(Metric m) noexcept;
[[nodiscard]] const char* to_string(LimitBase b) noexcept;
[[nodiscard]] const char* to_string(Action a) noexcept;
[[nodiscard]] const char* to_string(FatalEvent e) noexcept;
// The inverse of to_string(Action): "shrink_batch" -> kShrinkBatch; nullopt for any other word.
[[nodiscard]] std::optional<Action> action_from_string(std::string_view name) noexcept;
// The actions a job that does not acknowledge may receive as signals (`gpudoc guard --signal`):
// "checkpoint" (or "checkpoint_now", SIGUSR1) and "stop" (SIGTERM), comma-separated; empty items
// are skipped. Errors: kUsage naming the first other word.
[[nodiscard]] core::Result<std::vector<Action>> signal_opt_in_from_text(const std::string& text);
// true for seconds_to_oom: it fires when the value is at or below the threshold.
[[nodiscard]] bool fires_below(Metric m) noexcept;

// The built-in policy as text (documented in docs/guard-policy.md) and parsed.
[[nodiscard]] std::string_view default_policy_text() noexcept;
[[nodiscard]] Policy default_policy();

// Parses text over the defaults; file_name names it in errors (kBadInput, "FILE:LINE: ...").
[[nodiscard]] core::Result<Policy> parse_policy(std::string_view text, std::string_view file_name);
// A policy file is a page of lines; 4 MiB is far beyond any, and /dev/zero or an endless FIFO given
// as --policy is refused there (docs/limits.md).
inline constexpr core::InputLimits kPolicyInput{.max_bytes = 4 << 20, .what = "a guard policy"};
// Reads and parses a policy file (kIo when it cannot be read; kBadInput beyond kPolicyInput).
[[nodiscard]] core::Result<Policy> load_policy(const std::string& path);

}  // namespace gpudoc::guard
