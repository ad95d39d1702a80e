#include "guard/escalation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace gpudoc::guard {
namespace {

std::optional<double> base_value(LimitBase base, const gpu::DeviceInfo& info) {
  switch (base) {
    case LimitBase::kNone: return 0.0;
    case LimitBase::kSlowdown: return info.temperature_slowdown_celsius;
    case LimitBase::kMaxOperating: return info.temperature_gpu_max_celsius;
    case LimitBase::kShutdown: return info.temperature_shutdown_celsius;
    case LimitBase::kMemoryMax: return info.temperature_memory_max_celsius;
    case LimitBase::kPowerLimit: return info.power_limit_default_watts;
  }
  return std::nullopt;
}

std::optional<double> resolve(const Limit& limit, const gpu::DeviceInfo& info) {
  const auto base = base_value(limit.base, info);
  if (!base) return std::nullopt;
  return *base + limit.offset;
}

std::optional<double> value_of(Metric m, const EscalationInput& in) {
  switch (m) {
    case Metric::kGpuTempForecast: return in.gpu_temp_forecast;
    case Metric::kMemoryTempForecast: return in.memory_temp_forecast;
    case Metric::kPower: return in.power_watts;
    case Metric::kSecondsToOom: return in.seconds_to_oom;
  }
  return std::nullopt;
}

const char* unit_of(Metric m) {
  switch (m) {
    case Metric::kPower: return "W";
    case Metric::kSecondsToOom: return "s";
    default: return "°C";
  }
}

bool flagged(FatalEvent e, const FatalFlags& f) {
  switch (e) {
    case FatalEvent::kXid: return f.xid;
    case FatalEvent::kEccUncorrectable: return f.ecc_uncorrectable;
    case FatalEvent::kRowRemapFailure: return f.row_remap_failure;
    case FatalEvent::kGpuLost: return f.gpu_lost;
  }
  return false;
}

bool has_action(const Level& level, Action a) {
  return std::any_of(level.actions.begin(), level.actions.end(), [a](const ActionStep& s) { return s.action == a; });
}

}  // namespace

Escalator::Escalator(Policy policy, const gpu::DeviceInfo& info) : policy_(std::move(policy)) {
  for (const Level& level : policy_.levels) {
    LevelState s{.level = level, .triggers = {}, .last_sent_t = std::nullopt};
    for (const Trigger& t : level.triggers) {
      Resolved r{.trigger = t,
                 .threshold = resolve(t.threshold, info),
                 .clear = std::nullopt,
                 .base_value = base_value(t.threshold.base, info)};
      r.clear = t.clear ? resolve(*t.clear, info) : r.threshold;
      if (!r.threshold || !r.clear) {
        const LimitBase missing = !r.threshold ? t.threshold.base : t.clear->base;
        notes_.push_back(fmt::format(
            "level {}: '{}' is disabled: the device reports no {} limit (no fixed value is used in its place)",
            level.number, t.text, to_string(missing)));
        r.threshold.reset();
        r.clear.reset();
      }
      s.triggers.push_back(std::move(r));
    }
    levels_.push_back(std::move(s));
  }
}

std::optional<std::string> Escalator::fires(const LevelState& s, const EscalationInput& in, Decision& why) const {
  for (const Resolved& r : s.triggers) {
    const auto v = value_of(r.trigger.metric, in);
    if (!r.threshold || !v) continue;
    const bool below = fires_below(r.trigger.metric);
    if (below ? *v > *r.threshold : *v < *r.threshold) continue;
    const char* unit = unit_of(r.trigger.metric);
    std::string detail;
    if (r.trigger.metric == Metric::kGpuTempForecast) {
      detail = fmt::format(" (now {}, in {:g} s, error {})",
                           in.gpu_temp_now ? fmt::format("{:.1f}", *in.gpu_temp_now) : "unknown", policy_.horizon_s,
                           in.gpu_forecast_error ? fmt::format("{:.2f}", *in.gpu_forecast_error) : "not yet measured");
    }
    std::string source;
    if (r.trigger.threshold.base != LimitBase::kNone) {
      source = fmt::format(" ({} {:g} {} from the device)", to_string(r.trigger.threshold.base), *r.base_value, unit);
    }
    why.metric = r.trigger.metric;
    why.value = *v;
    why.threshold = *r.threshold;
    why.threshold_source = r.trigger.threshold.base;
    return fmt::format("level {}: {} {:.1f} {}{} {} {:.1f} {}{} [{}]", s.level.number, to_string(r.trigger.metric), *v,
                       unit, detail, below ? "<=" : ">=", *r.threshold, unit, source, r.trigger.text);
  }
  return std::nullopt;
}

bool Escalator::fatal_fires(const LevelState& s, const EscalationInput& in, Decision& why) const {
  std::string events;
  for (FatalEvent e : s.level.fatal) {
    if (flagged(e, in.fatal)) events += fmt::format("{}{}", events.empty() ? "" : ", ", to_string(e));
  }
  if (events.empty()) return false;
  why.reason = fmt::format("level {}: fatal event ({}); a GPU reset may be needed: that is for a person to do",
                           s.level.number, events);
  return true;
}

bool Escalator::cleared(const LevelState& s, const EscalationInput& in) const {
  for (const Resolved& r : s.triggers) {
    const auto v = value_of(r.trigger.metric, in);
    if (!r.clear || !v) continue;  // disabled, or not measured (a GPU without an HBM sensor)
    if (fires_below(r.trigger.metric) ? *v <= *r.clear : *v >= *r.clear) return false;
  }
  return true;
}

std::optional<Decision> Escalator::tick(const EscalationInput& in) {
  if (latched_) return std::nullopt;
  for (auto it = levels_.rbegin(); it != levels_.rend(); ++it) {
    if (it->level.number <= level_) break;
    Decision why;
    if (fatal_fires(*it, in, why)) return escalate(*it, std::move(why), true, in);
    if (auto reason = fires(*it, in, why)) {
      why.reason = std::move(*reason);
      return escalate(*it, std::move(why), false, in);
    }
  }
  return level_ > 0 ? deescalate(in) : std::nullopt;
}

Decision Escalator::escalate(LevelState& s, Decision why, bool fatal, const EscalationInput& in) {
  why.t = in.t;
  why.previous_level = level_;
  why.level = s.level.number;
  why.fatal = fatal;
  level_ = s.level.number;
  latched_ = fatal;
  const bool allowed = fatal || !s.last_sent_t || in.t - *s.last_sent_t >= s.level.min_interval_s;
  if (allowed) {
    why.actions = s.level.actions;
    s.last_sent_t = in.t;
    if (has_action(s.level, Action::kPauseNoncritical)) paused_ = true;
  } else {
    why.rate_limited = true;
    why.reason += fmt::format("; actions not sent: level {} sent them {:.1f} s ago, min_interval_s {:g}",
                              s.level.number, in.t - *s.last_sent_t, s.level.min_interval_s);
  }
  return why;
}

std::optional<Decision> Escalator::deescalate(const EscalationInput& in) {
  const auto current =
      std::find_if(levels_.begin(), levels_.end(), [this](const LevelState& s) { return s.level.number == level_; });
  if (current == levels_.end() || !cleared(*current, in)) return std::nullopt;
  int next = 0;
  bool still_paused = false;
  for (const LevelState& s : levels_) {
    if (s.level.number < level_ && !cleared(s, in)) next = s.level.number;
  }
  for (const LevelState& s : levels_) {
    if (s.level.number <= next && has_action(s.level, Action::kPauseNoncritical)) still_paused = true;
  }
  Decision d;
  d.t = in.t;
  d.previous_level = level_;
  d.level = next;
  std::string detail;
  for (const Resolved& r : current->triggers) {
    const auto v = value_of(r.trigger.metric, in);
    if (!r.clear || !v) continue;
    detail +=
        fmt::format("; {} {:.1f} {} {} {:.1f} {}", to_string(r.trigger.metric), *v,
                    fires_below(r.trigger.metric) ? ">" : "<", r.trigger.text, *r.clear, unit_of(r.trigger.metric));
  }
  d.reason = fmt::format("level {} cleared, now level {}{}", level_, next, detail);
  if (paused_ && !still_paused) {
    d.actions.push_back(ActionStep{.action = Action::kResumeNoncritical, .factor = 0});
    paused_ = false;
  }
  level_ = next;
  return d;
}

}  // namespace gpudoc::guard
