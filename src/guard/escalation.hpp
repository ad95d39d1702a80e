// gpudoc::guard escalation — one GPU's level (0 to 3) from its forecasts, under a Policy.
// Pure and deterministic: times come with the ticks, no I/O, no clock. Never throws (short of
// memory). One Escalator per GPU.
//
//   guard::Escalator e(policy, device_info);          // thresholds resolved from the device's limits
//   for (auto& n : e.notes()) log(n);                 // triggers disabled for a missing limit
//   if (auto d = e.tick({.t = 12.5, .gpu_temp_forecast = 88.4})) act(*d);
//
// Rules (docs/guard-policy.md):
// - A level fires when any of its triggers does (value at or over its threshold; seconds_to_oom at
//   or under), or one of its fatal events is flagged. The highest level that fires above the
//   current one is entered at once (a fatal event goes straight to its level, level 3 by default).
// - A level is left only when every trigger of it is cleared (below its clear limit, or above it
//   for seconds_to_oom; a value absent this tick neither fires nor holds a level); then the GPU drops to the highest
//   lower level that still fires, or 0. A level entered by a fatal event is never left.
// - A level's actions are sent at most once per its min_interval_s; entering it sooner gives a
//   decision with no actions (rate_limited). Fatal events are not rate limited.
// - resume_noncritical (level 0 in the protocol) is sent when the GPU drops below every level that
//   paused non-critical work, once a pause was sent.
// - A trigger whose limit the device does not report is disabled and listed in notes(): never a
//   fixed number of degrees in its place.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpu/backend.hpp"
#include "guard/policy.hpp"

namespace gpudoc::guard {

struct FatalFlags {
  bool xid = false;  // a fatal XID class was seen
  bool ecc_uncorrectable = false;
  bool row_remap_failure = false;
  bool gpu_lost = false;
};

// One tick's view of a GPU; every value may be absent (an absent value never fires).
struct EscalationInput {
  double t = 0;  // seconds, any origin, non-decreasing
  std::optional<double> gpu_temp_now;
  std::optional<double> gpu_temp_forecast;
  std::optional<double> gpu_forecast_error;  // the forecaster's measured mean absolute error
  std::optional<double> memory_temp_forecast;
  std::optional<double> power_watts;
  std::optional<double> seconds_to_oom;
  FatalFlags fatal;
};

struct Decision {
  double t = 0;
  int level = 0;  // the level now (0 after a full de-escalation)
  int previous_level = 0;
  std::vector<ActionStep> actions;  // in order; empty when rate limited or nothing to send
  bool rate_limited = false;
  bool fatal = false;
  // What decided it, with the numbers and the thresholds they were compared with:
  // "level 2: gpu_temp_forecast 86.4 °C (now 82.0, in 5 s, error 0.6) >= slowdown - 1 = 86.0 °C
  // (slowdown 87 °C from the device)".
  std::string reason;
  // The deciding comparison, for the protocol's reason object (absent for a fatal event).
  std::optional<Metric> metric;
  std::optional<double> value;
  std::optional<double> threshold;
  LimitBase threshold_source = LimitBase::kNone;
};

class Escalator {
 public:
  Escalator(Policy policy, const gpu::DeviceInfo& info);
  // Feeds one tick; a decision when the level changed (or a resume is due), else nullopt.
  [[nodiscard]] std::optional<Decision> tick(const EscalationInput& in);
  [[nodiscard]] int level() const { return level_; }
  // One line per trigger disabled for a limit the device does not report.
  [[nodiscard]] const std::vector<std::string>& notes() const { return notes_; }
  [[nodiscard]] const Policy& policy() const { return policy_; }

 private:
  struct Resolved {
    Trigger trigger;
    std::optional<double> threshold, clear;  // absent: disabled
    std::optional<double> base_value;
  };
  struct LevelState {
    Level level;
    std::vector<Resolved> triggers;
    std::optional<double> last_sent_t;
  };
  [[nodiscard]] std::optional<std::string> fires(const LevelState& s, const EscalationInput& in, Decision& why) const;
  [[nodiscard]] bool fatal_fires(const LevelState& s, const EscalationInput& in, Decision& why) const;
  [[nodiscard]] bool cleared(const LevelState& s, const EscalationInput& in) const;
  [[nodiscard]] Decision escalate(LevelState& s, Decision why, bool fatal, const EscalationInput& in);
  [[nodiscard]] std::optional<Decision> deescalate(const EscalationInput& in);

  Policy policy_;
  std::vector<LevelState> levels_;  // by number
  std::vector<std::string> notes_;
  int level_ = 0;
  bool latched_ = false;  // entered by a fatal event
  bool paused_ = false;   // a pause_noncritical was sent and not resumed
};

}  // namespace gpudoc::guard
