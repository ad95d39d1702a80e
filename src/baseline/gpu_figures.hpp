// gpudoc::baseline GPU figures — what gpudoc adds to a workload's own figures from the trace it
// recorded while the workload ran: the workload's peak GPU memory, the mean utilization of the
// GPUs it used, the energy they drew, and when they did the job's steady work (steady_busy_span):
// from the command's start to that work (its start-up: imports, CUDA context, loading, the GPU
// work of initialising) and the work's own span, which start-up jitter does not move. The trace
// starts just before the command is spawned (workload_run.cpp), so its t = 0 is the start.
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
#include <vector>

#include "telemetry/trace.hpp"

namespace gpudoc::baseline {

struct GpuFigures {
  std::optional<double> memory_peak_bytes;         // sum over the tree's processes of each one's peak
  std::optional<double> utilization_mean_percent;  // mean of the used GPUs' utilization samples
  std::optional<double> energy_joules;             // energy counter's rise, else integrated power
  std::optional<double> startup_s;                 // trace start to the steady work's first sample
  std::optional<double> active_s;                  // the steady work's first to last sample
  std::string scope;                               // "process tree" or "whole GPU"
  std::string absent_reason;                       // why nothing could be read
  std::vector<int> gpus{};                         // the trace positions of the scope's GPUs
};

struct BusySpan {
  double start = 0, end = 0;  // trace seconds
};
inline constexpr std::size_t kSteadySamples = 3;
// When the GPUs did the job's steady work: from the first to the last stretch of kSteadySamples
// utilization samples (0.6 s at 200 ms) all at or above half the median busy level L, on any of
// the GPUs, its edges read to a fraction of a sample (a sample is the busy share of the period
// before it: at v % it was busy v / L of that period); a job that never holds its level that long
// (bursts): its first to last busy sample.
// Samples before `not_before` are not the job's. nullopt when no sample is busy.
[[nodiscard]] std::optional<BusySpan> steady_busy_span(const std::vector<const telemetry::Series*>& util,
                                                       double not_before);

[[nodiscard]] GpuFigures gpu_figures_from_trace(const std::string& trace_path, const std::set<pid_t>& tree);

}  // namespace gpudoc::baseline
