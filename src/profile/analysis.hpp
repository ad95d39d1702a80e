// gpudoc::profile analysis — from one process's CUPTI records to where each step's GPU time went
// and whether CUDA Graphs would help. Pure: records in, a Profile out; no I/O, no CUDA.
//
//   auto set = profile::read_records_file(path);
//   profile::Profile p = profile::analyse(*set, {});       // steps, busy, idle by cause, kernels
//   p.advice.verdict;  p.advice.predicted_step_ns;         // the CUDA Graph advice
//
// Steps come from NVTX ranges (the most frequent range name, preferring one with "step" in it),
// else from the host's synchronizations (what it repeats between them: .item(), synchronize,
// blocking copies), else from the repeating sequence of kernel names, else the whole run is one step; with sampling
// windows (RecordSet::windows) only steps wholly inside a window are analysed. Each idle gap
// of the GPU (no kernel, copy or memset of the analysed device running) is given one cause, tested
// in this order: allocation (a malloc/free call overlaps it), host work (a stretch of at least
// host_stretch_ns and half the gap without any CUDA call), pageable copy (a copy touching pageable
// host memory borders it), synchronization (the host sat in a synchronizing call when the GPU ran
// dry, or a device-to-host copy ended it), else launch (the host was busy issuing the next work).
// docs/profile.md gives the rules and the Graph prediction's formula. Thread-safe (no state).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "profile/energy.hpp"
#include "profile/records.hpp"

namespace gpudoc::profile {

enum class IdleCause { kLaunch, kSync, kPageableCopy, kAllocation, kHost };
inline constexpr std::size_t kIdleCauseCount = 5;
[[nodiscard]] const char* to_string(IdleCause c);  // "launch", "sync", "pageable_copy", "allocation", "host"

struct AnalysisOptions {
  std::size_t max_steps = 0;                // analyse at most this many steps (after the first); 0: all
  std::uint64_t host_stretch_ns = 100'000;  // a CUDA-call-free stretch this long is host work
  // Graph replay costs, measured on an H200 (docs/results/profile.md): per kernel node, the gap
  // between dependent kernels of a replayed graph; per replay, the host's cudaGraphLaunch.
  std::uint64_t graph_node_ns = 250;
  std::uint64_t graph_launch_ns = 5'000;
};

struct Step {
  std::uint64_t start_ns = 0, end_ns = 0;
  std::uint64_t busy_ns = 0;  // union of kernels, copies and memsets on the analysed device
  std::array<std::uint64_t, kIdleCauseCount> idle_ns{};
  std::uint64_t kernel_ns = 0;  // the kernels' own durations, summed
  std::size_t kernels = 0;
  std::size_t syncs = 0, allocations = 0, host_callbacks = 0, pageable_copies = 0, dtoh_copies = 0;
  std::uint64_t signature = 0;  // hash of the kernel sequence: names, grids, blocks
  [[nodiscard]] std::uint64_t wall_ns() const { return end_ns - start_ns; }
};

struct KernelStat {
  std::string name;  // demangled, shortened
  std::size_t count = 0;
  std::uint64_t total_ns = 0, min_ns = 0, max_ns = 0;
};

struct CopyVolume {
  std::string kind;  // "HtoD pinned", "DtoH pageable", "DtoD", "memset", ...
  std::size_t count = 0;
  std::uint64_t bytes = 0, total_ns = 0;
};

enum class Verdict { kRecommend, kAdviseAgainst, kFixFirst, kAlreadyGraphs, kNotEnoughData };
[[nodiscard]] const char* to_string(Verdict v);  // "recommend", "advise_against", "fix_first", ...

// What stands in the way of capturing a step, most frequent first.
enum class Blocker { kSync, kAllocation, kHostCallback, kPageableCopy, kDynamicShapes };
[[nodiscard]] const char* to_string(Blocker b);  // "sync", "allocation", "host_callback", ...

struct GraphAdvice {
  Verdict verdict = Verdict::kNotEnoughData;
  std::vector<Blocker> fix_first;       // for kFixFirst: what to fix, the first is the main one
  double launch_share = 0;              // launch-bound idle / step wall, median step
  double static_share = 0;              // steps whose kernel sequence equals the most common one
  std::uint64_t step_ns = 0;            // median step wall time, eager
  std::uint64_t predicted_step_ns = 0;  // the same step replayed as a graph
  std::size_t kernels_per_step = 0;
  double blockers_per_step[5] = {0, 0, 0, 0, 0};  // by Blocker
  std::string how;                                // "torch", "cpp": which recipe fits the program
};

// With sampling (gpudoc profile --sample), what tracing cost the program: its NVTX step ranges
// wholly inside the traced windows against those wholly between them (markers are recorded
// throughout). The steps analysed are the traced ones.
struct Sampling {
  std::size_t windows = 0;
  std::uint64_t traced_ns = 0;  // the windows' total length (an unclosed last one up to its last record)
  std::size_t steps_traced = 0, steps_untraced = 0;
  std::uint64_t step_traced_ns = 0, step_untraced_ns = 0;  // medians of the two
  // Means: of every step of the run (those across a window's edge too, which pay for switching
  // tracing) and of the untraced ones.
  std::uint64_t step_mean_ns = 0, step_untraced_mean_ns = 0;
  // step_traced / step_untraced - 1, with at least 3 steps of each; else not measured
  [[nodiscard]] bool measured() const { return steps_traced >= 3 && steps_untraced >= 3; }
  [[nodiscard]] double overhead() const {
    return measured() ? static_cast<double>(step_traced_ns) / static_cast<double>(step_untraced_ns) - 1.0 : 0.0;
  }
  // What tracing added to the whole run, from the run itself: its mean step against its mean
  // untraced step, minus 1 (a measure free of the host's drift between runs).
  [[nodiscard]] double run_overhead() const {
    return measured() && step_untraced_mean_ns > 0
               ? static_cast<double>(step_mean_ns) / static_cast<double>(step_untraced_mean_ns) - 1.0
               : 0.0;
  }
};

struct Profile {
  std::string step_source;  // "nvtx:NAME", "host-sync", "kernel-sequence", "whole-run"
  std::uint32_t device = 0;
  std::vector<Step> steps;
  std::uint64_t span_ns = 0, busy_ns = 0;
  std::array<std::uint64_t, kIdleCauseCount> idle_ns{};
  std::size_t kernel_count = 0;
  std::uint64_t kernel_ns = 0;
  std::vector<KernelStat> top_kernels;  // by total time, at most 15
  // Kernel durations: bucket i counts kernels in [2^i, 2^(i+1)) microseconds, bucket 0 below 2 us.
  std::array<std::size_t, 16> duration_histogram{};
  std::vector<CopyVolume> copies;
  std::size_t api_calls = 0, graph_launches = 0;
  GraphAdvice advice;
  Sampling sampling;                  // windows == 0: traced throughout
  std::uint64_t dropped = 0;          // by CUPTI (its buffers full)
  std::uint64_t over_file_limit = 0;  // counted, not written (the records file at its bound)
  bool complete = false;
  std::vector<std::string> warnings;
  DeviceEnergy energy{};  // the device's NVML energy counter on CUPTI's clock (device_energy)
};

[[nodiscard]] Profile analyse(const RecordSet& set, const AnalysisOptions& options);

// The Graph advice from analysed steps (analyse() calls it; exposed for tests).
[[nodiscard]] GraphAdvice advise(const std::vector<Step>& steps, const RecordSet& set, const AnalysisOptions& options);

// A kernel's demangled name without its parameter list and template arguments beyond 80 characters.
[[nodiscard]] std::string short_kernel_name(const std::string& mangled);

// What an API call does, from its name: launch, sync, allocation, host callback, memcpy, other.
enum class ApiClass { kLaunch, kSync, kAllocation, kHostCallback, kMemcpy, kOther };
[[nodiscard]] ApiClass classify_api(const std::string& name);

}  // namespace gpudoc::profile
