#include "baseline/regression_report.hpp"

#include <fmt/format.h>

#include <map>

#include "diagnose/diagnose.hpp"
#include "findings/finding.hpp"
#include "gpu/metrics.hpp"
#include "telemetry/input.hpp"

namespace gpudoc::baseline {

GpuSnapshot gpu_snapshot(gpu::Backend* backend, const std::string& no_gpu_reason) {
  GpuSnapshot s;
  if (backend == nullptr) {
    s.lines.push_back("GPU state: not available (" + no_gpu_reason.substr(0, no_gpu_reason.find('\n')) + ")");
    return s;
  }
  auto n = backend->device_count();
  for (int i = 0; n && i < *n; ++i) {
    auto info = backend->device_info(i);
    std::map<gpu::Metric, double> v;
    for (auto group : {gpu::MetricGroup::kFast, gpu::MetricGroup::kSlow})
      if (auto r = backend->read(i, group); r)
        for (const auto& m : r->metrics) v[m.metric] = m.value;
    auto get = [&](gpu::Metric m) -> std::optional<double> {
      auto it = v.find(m);
      return it == v.end() ? std::nullopt : std::optional<double>(it->second);
    };
    auto show = [](std::optional<double> x, const char* unit) {
      return x ? fmt::format("{:.0f} {}", *x, unit) : std::string("—");
    };
    nlohmann::json j = {{"gpu", i}, {"name", info ? info->name : ""}};
    for (const auto& [m, val] : v) j[std::string(gpu::info(m).name)] = val;
    const auto reasons = get(gpu::Metric::kClockEventReasonsMask);
    const std::string reason_names =
        reasons ? gpu::clock_event_reason_names(static_cast<std::uint64_t>(*reasons)) : "—";
    j["clock_event_reasons"] = reason_names;
    std::string link = "—";
    if (auto gen = get(gpu::Metric::kPcieLinkGeneration), width = get(gpu::Metric::kPcieLinkWidth); gen && width) {
      link = fmt::format("Gen{:.0f} x{:.0f}", *gen, *width);
      if (info && info->pcie_link_generation_max && info->pcie_link_width_max)
        link += fmt::format(" (max Gen{} x{})", *info->pcie_link_generation_max, *info->pcie_link_width_max);
    }
    j["pcie_link"] = link;
    const auto limit = get(gpu::Metric::kPowerLimitWatts);
    // ECC and row remapping, from the same facts `gpudoc health` reads; what the GPU does not
    // report is said, not shown as 0.
    std::string ecc = "not reported";
    if (auto facts = backend->health_facts(i); facts) {
      const gpu::HealthFacts& h = *facts;
      if (h.ecc_current && !*h.ecc_current) {
        ecc = "off";
      } else if (h.ecc_volatile_corrected || h.ecc_volatile_uncorrected) {
        auto count = [](const std::optional<std::uint64_t>& c) { return c ? std::to_string(*c) : std::string("?"); };
        ecc = fmt::format("{} corrected, {} uncorrected since driver load", count(h.ecc_volatile_corrected),
                          count(h.ecc_volatile_uncorrected));
        j["ecc_volatile_corrected"] =
            h.ecc_volatile_corrected ? nlohmann::json(*h.ecc_volatile_corrected) : nlohmann::json();
        j["ecc_volatile_uncorrected"] =
            h.ecc_volatile_uncorrected ? nlohmann::json(*h.ecc_volatile_uncorrected) : nlohmann::json();
      }
      if (h.remap_pending && *h.remap_pending) ecc += "; a row remap is pending (reset the GPU)";
      if (h.remap_failed && *h.remap_failed) ecc += "; a row remap FAILED";
    }
    j["ecc"] = ecc;
    s.lines.push_back(fmt::format("GPU {} {}: SM {} mem {} | {} (HBM {}) | {} of {} | throttle: {} | PCIe {} | ECC: {}",
                                  i, info ? info->name : "?", show(get(gpu::Metric::kSmClockMhz), "MHz"),
                                  show(get(gpu::Metric::kMemoryClockMhz), "MHz"),
                                  show(get(gpu::Metric::kGpuTemperatureCelsius), "°C"),
                                  show(get(gpu::Metric::kMemoryTemperatureCelsius), "°C"),
                                  show(get(gpu::Metric::kPowerWatts), "W"), show(limit, "W"), reason_names, link, ecc));
    s.json.push_back(std::move(j));
  }
  return s;
}

nlohmann::json regression_findings(const std::string& trace_path, std::vector<std::string>& lines) {
  nlohmann::json out = nlohmann::json::array();
  if (trace_path.empty()) return out;
  lines.push_back(fmt::format("trace of the run kept at {} (gpudoc diagnose {})", trace_path, trace_path));
  auto trace = telemetry::read_telemetry_file(trace_path);
  if (!trace) {
    lines.push_back("diagnosis: " + trace.error().message());
    return out;
  }
  const diagnose::Diagnosis d = diagnose::diagnose(*trace, diagnose::Options{});
  for (const auto& f : d.findings) {
    if (f.severity < findings::Severity::kWarning) continue;
    lines.push_back(fmt::format("finding [{}] {}: {}", findings::to_string(f.severity), f.id, f.message));
    out.push_back(findings::to_json(f));
  }
  if (out.empty()) lines.push_back("diagnosis of the run's trace: no finding at or above warning");
  return out;
}

}  // namespace gpudoc::baseline
