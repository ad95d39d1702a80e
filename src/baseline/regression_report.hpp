// gpudoc::baseline regression report — what `baseline check` adds when a figure regressed: the
// state of every GPU now (clocks, temperatures, power, throttle reasons, PCIe link, ECC) and what
// gpudoc's diagnosis finds in the trace recorded during the run.
//
//   baseline::GpuSnapshot s = baseline::gpu_snapshot(backend, no_gpu_reason);   // lines + JSON
//   nlohmann::json f = baseline::regression_findings(collected.trace_path, s.lines);
//
// Absent readings are said to be absent, never shown as 0. Not thread-safe (reads the backend).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu/backend.hpp"

namespace gpudoc::baseline {

struct GpuSnapshot {
  std::vector<std::string> lines;  // one per GPU, for people
  nlohmann::json json = nlohmann::json::array();
};

// backend may be null: then one line says why there is no GPU state (no_gpu_reason, first line).
[[nodiscard]] GpuSnapshot gpu_snapshot(gpu::Backend* backend, const std::string& no_gpu_reason);

// The findings at or above warning of `gpudoc diagnose` over the run's trace, as JSON; `lines`
// gets where the trace is kept and one line per finding. Without a trace (no GPU): nothing.
[[nodiscard]] nlohmann::json regression_findings(const std::string& trace_path, std::vector<std::string>& lines);

}  // namespace gpudoc::baseline
