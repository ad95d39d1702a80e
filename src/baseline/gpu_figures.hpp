// gpudoc::baseline GPU figures — what gpudoc adds to a workload's own figures from the trace it
// recorded while the workload ran: the workload's peak GPU memory, the mean utilization of the
// GPUs it used, the energy they drew, and when they were busy: from the command's start to the
// first utilization sample above 0 (its start-up: imports, CUDA context, loading) and from there
// to the last one (its GPU work, which start-up jitter does not move). The trace starts just
// before the command is spawned (workload_run.cpp), so its t = 0 is the start.
//
//   baseline::GpuFigures g = baseline::gpu_figures_from_trace(trace_path, run.tree);
//   if (g.memory_peak_bytes) ...;   // absent (with absent_reason) rather than 0
//
// Scope: the GPUs where NVML listed a process of the workload's tree ("process tree"); when none
// is listed (no GPU use, or PIDs from another PID namespace than NVML's) the whole GPUs, said so.
// Pure apart from reading the trace file; thread-safe.
#pragma once

#include <sys/types.h>

#include <optional>
#include <set>
#include <string>

namespace gpudoc::baseline {

struct GpuFigures {
  std::optional<double> memory_peak_bytes;         // sum over the tree's processes of each one's peak
  std::optional<double> utilization_mean_percent;  // mean of the used GPUs' utilization samples
  std::optional<double> energy_joules;             // energy counter's rise, else integrated power
  std::optional<double> startup_s;                 // trace start to the first busy utilization sample
  std::optional<double> active_s;                  // first to last busy utilization sample
  std::string scope;                               // "process tree" or "whole GPU"
  std::string absent_reason;                       // why nothing could be read
};

[[nodiscard]] GpuFigures gpu_figures_from_trace(const std::string& trace_path, const std::set<pid_t>& tree);

}  // namespace gpudoc::baseline
