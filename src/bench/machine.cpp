#include "bench/machine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "bench/engine.hpp"
#include "core/numeric.hpp"
#include "gpu/metrics.hpp"

namespace gpudoc::bench {
namespace {

template <typename T>
void put(nlohmann::json& j, const char* name, const std::optional<T>& v) {
  j[name] = v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

std::optional<Spread> spread_of(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return Spread{*lo, core::median(v), *hi};
}

nlohmann::json to_json(const std::optional<Spread>& s) {
  if (!s) return nullptr;
  return {{"min", s->min}, {"median", s->median}, {"max", s->max}};
}

}  // namespace

core::Result<MachineInfo> probe_machine(gpu::Backend& backend, const std::string& uuid) {
  auto sys = backend.system_info();
  if (!sys) return sys.error().with_context("reading the driver versions");
  auto n = backend.device_count();
  if (!n) return n.error().with_context("counting GPUs");
  std::optional<gpu::DeviceInfo> found;
  for (int i = 0; i < *n && !found; ++i) {
    auto d = backend.device_info(i);
    if (d && d->uuid == uuid) found = *d;
  }
  if (!found)
    return core::Error(core::ErrorKind::kNotSupported,
                       fmt::format("{} reports no GPU with UUID {} ({} GPUs)", backend.name(), uuid, *n));
  MachineInfo m;
  m.backend = std::string(backend.name());
  m.nvml_index = found->index;
  m.driver_version = sys->driver_version;
  m.cuda_driver_version = sys->cuda_driver_version;
  m.nvml_version = sys->nvml_version;
  m.pci_bus_id = found->pci_bus_id;
  m.sm_clock_max_mhz = found->sm_clock_max_mhz;
  m.memory_clock_max_mhz = found->memory_clock_max_mhz;
  m.power_limit_default_watts = found->power_limit_default_watts;
  m.pcie_link_generation_max = found->pcie_link_generation_max;
  m.pcie_link_width_max = found->pcie_link_width_max;
  // One reading of the current values; a group that fails leaves its fields absent.
  for (gpu::MetricGroup g : {gpu::MetricGroup::kFast, gpu::MetricGroup::kSlow}) {
    auto r = backend.read(m.nvml_index, g);
    if (!r) continue;
    for (const gpu::MetricSample& s : r->metrics) {
      switch (s.metric) {
        case gpu::Metric::kSmClockMhz: m.sm_clock_mhz = s.value; break;
        case gpu::Metric::kMemoryClockMhz: m.memory_clock_mhz = s.value; break;
        case gpu::Metric::kPowerWatts: m.power_watts = s.value; break;
        case gpu::Metric::kGpuTemperatureCelsius: m.temperature_celsius = s.value; break;
        case gpu::Metric::kClockEventReasonsMask:
          m.clock_event_reasons_mask = static_cast<std::uint64_t>(s.value);
          break;
        case gpu::Metric::kPowerLimitWatts: m.power_limit_watts = s.value; break;
        case gpu::Metric::kPcieLinkGeneration: m.pcie_link_generation = static_cast<int>(std::lround(s.value)); break;
        case gpu::Metric::kPcieLinkWidth: m.pcie_link_width = static_cast<int>(std::lround(s.value)); break;
        default: break;
      }
    }
  }
  return m;
}

nlohmann::json to_json(const MachineInfo& m) {
  nlohmann::json j = {{"backend", m.backend},
                      {"nvml_index", m.nvml_index},
                      {"driver_version", m.driver_version},
                      {"cuda_driver_version", m.cuda_driver_version},
                      {"nvml_version", m.nvml_version},
                      {"pci_bus_id", m.pci_bus_id}};
  put(j, "sm_clock_mhz", m.sm_clock_mhz);
  put(j, "sm_clock_max_mhz", m.sm_clock_max_mhz);
  put(j, "memory_clock_mhz", m.memory_clock_mhz);
  put(j, "memory_clock_max_mhz", m.memory_clock_max_mhz);
  put(j, "power_watts", m.power_watts);
  put(j, "power_limit_watts", m.power_limit_watts);
  put(j, "power_limit_default_watts", m.power_limit_default_watts);
  put(j, "temperature_celsius", m.temperature_celsius);
  put(j, "pcie_link_generation", m.pcie_link_generation);
  put(j, "pcie_link_width", m.pcie_link_width);
  put(j, "pcie_link_generation_max", m.pcie_link_generation_max);
  put(j, "pcie_link_width_max", m.pcie_link_width_max);
  put(j, "clock_event_reasons_mask", m.clock_event_reasons_mask);
  j["clock_event_reasons"] = m.clock_event_reasons_mask
                                 ? nlohmann::json(gpu::clock_event_reason_names(*m.clock_event_reasons_mask))
                                 : nlohmann::json(nullptr);
  return j;
}

Conditions summarize_conditions(const std::vector<gpu::MetricSample>& samples, std::int64_t begin_unix_ns,
                                std::int64_t end_unix_ns) {
  Conditions c;
  std::vector<double> sm;
  std::vector<double> mem;
  std::vector<double> power;
  std::vector<double> temp;
  for (const gpu::MetricSample& s : samples) {
    if (s.time_unix_ns < begin_unix_ns || s.time_unix_ns > end_unix_ns) continue;
    switch (s.metric) {
      case gpu::Metric::kSmClockMhz: sm.push_back(s.value); break;
      case gpu::Metric::kMemoryClockMhz: mem.push_back(s.value); break;
      case gpu::Metric::kPowerWatts: power.push_back(s.value); break;
      case gpu::Metric::kGpuTemperatureCelsius: temp.push_back(s.value); break;
      case gpu::Metric::kClockEventReasonsMask:
        c.clock_event_reasons_mask = c.clock_event_reasons_mask.value_or(0) | static_cast<std::uint64_t>(s.value);
        break;
      default: continue;
    }
    ++c.readings;
  }
  c.sm_clock_mhz = spread_of(std::move(sm));
  c.memory_clock_mhz = spread_of(std::move(mem));
  c.power_watts = spread_of(std::move(power));
  c.temperature_celsius = spread_of(std::move(temp));
  return c;
}

nlohmann::json to_json(const Conditions& c) {
  nlohmann::json j = {{"readings", c.readings},
                      {"sm_clock_mhz", to_json(c.sm_clock_mhz)},
                      {"memory_clock_mhz", to_json(c.memory_clock_mhz)},
                      {"power_watts", to_json(c.power_watts)},
                      {"temperature_celsius", to_json(c.temperature_celsius)}};
  put(j, "clock_event_reasons_mask", c.clock_event_reasons_mask);
  j["clock_event_reasons"] = c.clock_event_reasons_mask
                                 ? nlohmann::json(gpu::clock_event_reason_names(*c.clock_event_reasons_mask))
                                 : nlohmann::json(nullptr);
  j["slowdown"] = c.clock_event_reasons_mask ? nlohmann::json(gpu::is_slowdown(*c.clock_event_reasons_mask))
                                             : nlohmann::json(nullptr);
  return j;
}

std::string slowdown_reasons(const Conditions& c) {
  if (!c.clock_event_reasons_mask) return "";
  std::uint64_t slow = 0;
  for (const auto& r : gpu::clock_event_reasons())
    if (r.is_slowdown) slow |= r.bit;
  const std::uint64_t mask = *c.clock_event_reasons_mask & slow;
  return mask == 0 ? "none" : gpu::clock_event_reason_names(mask);
}

std::string describe(const Conditions& c) {
  std::string out;
  auto add = [&](const std::string& s) { out += (out.empty() ? "" : ", ") + s; };
  if (c.sm_clock_mhz) {
    if (c.sm_clock_mhz->min == c.sm_clock_mhz->max)
      add(fmt::format("SM {:.0f} MHz", c.sm_clock_mhz->min));
    else
      add(fmt::format("SM {:.0f}–{:.0f} MHz", c.sm_clock_mhz->min, c.sm_clock_mhz->max));
  }
  if (c.power_watts) add(fmt::format("≤ {:.0f} W", c.power_watts->max));
  if (c.temperature_celsius) add(fmt::format("≤ {:.0f} °C", c.temperature_celsius->max));
  if (c.clock_event_reasons_mask) add("slowdown: " + slowdown_reasons(c));
  return out;
}

void attach_conditions(Report& report, const std::vector<gpu::MetricSample>& samples) {
  std::int64_t begin = 0;
  std::int64_t end = 0;
  for (Outcome& o : report.outcomes) {
    if (o.started_unix_ns == 0) continue;
    o.conditions = summarize_conditions(samples, o.started_unix_ns, o.ended_unix_ns);
    if (begin == 0 || o.started_unix_ns < begin) begin = o.started_unix_ns;
    end = std::max(end, o.ended_unix_ns);
  }
  if (begin != 0) report.conditions = summarize_conditions(samples, begin, end);
}

}  // namespace gpudoc::bench
