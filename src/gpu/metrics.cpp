#include "gpu/metrics.hpp"

#include <fmt/format.h>

#include <string>

#include "core/number_input.hpp"

namespace gpudoc::gpu {
namespace {

constexpr std::array<MetricInfo, kMetricCount> kMetricInfos = {{
#define GPUDOC_X(id, name, unit, group, desc) {Metric::id, name, unit, MetricGroup::group, desc},
    GPUDOC_METRICS(GPUDOC_X)
#undef GPUDOC_X
}};

constexpr std::array<GroupInfo, kMetricGroupCount> kGroupInfos = {{
#define GPUDOC_X(id, name, period, min_period, why) \
  {MetricGroup::id, name, std::chrono::milliseconds(period), std::chrono::milliseconds(min_period), why},
    GPUDOC_METRIC_GROUPS(GPUDOC_X)
#undef GPUDOC_X
}};

// Bits as documented for nvmlClocksEventReasons in nvml.h (driver r535+ names; the older
// "ClocksThrottleReasons" constants have the same values).
constexpr std::array<ClockEventReason, 9> kReasons = {{
    {0x1ULL, "gpu_idle", false},
    {0x2ULL, "applications_clocks_setting", false},
    {kClockEventSwPowerCap, "sw_power_cap", true},
    {0x8ULL, "hw_slowdown", true},
    {0x10ULL, "sync_boost", false},
    {0x20ULL, "sw_thermal_slowdown", true},
    {0x40ULL, "hw_thermal_slowdown", true},
    {0x80ULL, "hw_power_brake_slowdown", true},
    {0x100ULL, "display_clock_setting", false},
}};

}  // namespace

const MetricInfo& info(Metric m) { return kMetricInfos[index(m)]; }
const GroupInfo& info(MetricGroup g) { return kGroupInfos[index(g)]; }

const std::array<Metric, kMetricCount>& all_metrics() {
  static const auto all = [] {
    std::array<Metric, kMetricCount> a{};
    for (std::size_t i = 0; i < kMetricCount; ++i) a[i] = static_cast<Metric>(i);
    return a;
  }();
  return all;
}

const std::array<MetricGroup, kMetricGroupCount>& all_groups() {
  static const auto all = [] {
    std::array<MetricGroup, kMetricGroupCount> a{};
    for (std::size_t i = 0; i < kMetricGroupCount; ++i) a[i] = static_cast<MetricGroup>(i);
    return a;
  }();
  return all;
}

std::optional<Metric> metric_from_name(std::string_view name) {
  for (const auto& m : kMetricInfos)
    if (m.name == name) return m.metric;
  return std::nullopt;
}

std::optional<MetricGroup> group_from_name(std::string_view name) {
  for (const auto& g : kGroupInfos)
    if (g.name == name) return g.group;
  return std::nullopt;
}

MetricSet metrics_in(MetricGroup g) {
  MetricSet s;
  for (const auto& m : kMetricInfos)
    if (m.group == g) s.set(index(m.metric));
  return s;
}

const std::array<ClockEventReason, 9>& clock_event_reasons() { return kReasons; }

bool is_slowdown(std::uint64_t mask) {
  for (const auto& r : kReasons)
    if ((mask & r.bit) && r.is_slowdown) return true;
  return false;
}

std::string clock_event_reason_names(std::uint64_t mask) {
  std::string out;
  std::uint64_t known = 0;
  for (const auto& r : kReasons) {
    known |= r.bit;
    if (mask & r.bit) {
      if (!out.empty()) out += ',';
      out += r.name;
    }
  }
  if (mask & ~known) {
    if (!out.empty()) out += ',';
    out += "other";
  }
  return out.empty() ? "none" : out;
}

core::Result<std::pair<MetricGroup, std::chrono::milliseconds>> parse_group_period(std::string_view text) {
  const auto eq = text.find('=');
  if (eq == std::string_view::npos)
    return core::Error(core::ErrorKind::kUsage, fmt::format("{}: expected GROUP=MS, e.g. fast=100", text));
  const std::string_view name = text.substr(0, eq);
  const std::string_view value = text.substr(eq + 1);
  const auto g = group_from_name(name);
  if (!g) {
    std::string names;
    for (MetricGroup gg : all_groups()) names += fmt::format("{}{}", names.empty() ? "" : ", ", info(gg).name);
    return core::Error(core::ErrorKind::kUsage, fmt::format("{}: unknown group '{}' (groups: {})", text, name, names));
  }
  // The one checked reading of a number flag (core/number_input.hpp): a day at most, so any clock
  // holds a period in nanoseconds.
  auto read = core::parse_number(
      "", value, {.min = 0, .max = 86'400'000, .whole = true, .unit = "milliseconds", .note = "0 turns the group off"},
      text);
  if (!read) return read.error();
  const auto ms = static_cast<long>(*read);
  const GroupInfo& gi = info(*g);
  if (ms != 0 && ms < gi.min_period.count())
    return core::Error(core::ErrorKind::kUsage,
                       fmt::format("{}: {} ms is faster than the sensor allows (minimum {} ms: {})", text, ms,
                                   gi.min_period.count(), gi.why));
  return std::pair{*g, std::chrono::milliseconds(ms)};
}

std::string describe_groups() {
  std::array<std::chrono::milliseconds, kMetricGroupCount> periods{};
  for (MetricGroup g : all_groups()) periods[index(g)] = info(g).default_period;
  return describe_groups(periods);
}

std::string describe_groups(const std::array<std::chrono::milliseconds, kMetricGroupCount>& periods) {
  std::string out;
  for (MetricGroup g : all_groups()) {
    const auto& gi = info(g);
    const auto ms = periods[index(g)].count();
    out += fmt::format("  {:<12} {:>9} (min {} ms): {}\n", gi.name, ms == 0 ? "off" : fmt::format("{} ms", ms),
                       gi.min_period.count(), gi.why);
  }
  return out;
}

}  // namespace gpudoc::gpu
