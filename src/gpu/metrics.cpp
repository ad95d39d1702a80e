#include "gpu/metrics.hpp"

#include <string>

namespace gpudoc::gpu {
namespace {

constexpr std::array<MetricInfo, kMetricCount> kMetricInfos = {{
#define GPUDOC_X(id, name, unit, group, desc) {Metric::id, name, unit, MetricGroup::group, desc},
    GPUDOC_METRICS(GPUDOC_X)
#undef GPUDOC_X
}};

constexpr std::array<GroupInfo, kMetricGroupCount> kGroupInfos = {{
#define GPUDOC_X(id, name, period, min_period, why)                                            \
  {MetricGroup::id, name, std::chrono::milliseconds(period), std::chrono::milliseconds(min_period), why},
    GPUDOC_METRIC_GROUPS(GPUDOC_X)
#undef GPUDOC_X
}};

// Bits as documented for nvmlClocksEventReasons in nvml.h (driver r535+ names; the older
// "ClocksThrottleReasons" constants have the same values).
constexpr std::array<ClockEventReason, 9> kReasons = {{
    {0x1ULL, "gpu_idle", false},
    {0x2ULL, "applications_clocks_setting", false},
    {0x4ULL, "sw_power_cap", true},
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

}  // namespace gpudoc::gpu
