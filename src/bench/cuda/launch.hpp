// gpudoc::bench::cuda launch — the cost of launching work: back-to-back empty kernel launches,
// one launch between two events, and CUDA Graph replay per node. Plain C++ interface over
// launch.cu; no CUDA header is included.
//
//   cuda::LaunchOptions opt{.device = 0, .repetitions = 20};
//   auto t = cuda::run_launch(cuda::LaunchKind::kThroughput, opt);  // t->seconds: per launch
//
// Not thread-safe. Errors: every CUDA failure as a core::Error naming the call; kNotSupported
// without CUDA.
#pragma once

#include <string>
#include <vector>

#include "core/result.hpp"

namespace gpudoc::bench::cuda {

enum class LaunchKind {
  kThroughput,  // `launches` empty kernels back to back between two events; sample = time / launches
  kLatency,     // one empty kernel between two events; sample = that time
  kGraphNode,   // a graph of `graph_nodes` empty kernels replayed; sample = replay time / nodes
};

struct LaunchOptions {
  int device = 0;
  int warmup = 3;
  int repetitions = 20;    // samples
  int launches = 30000;    // kThroughput: launches per sample (~0.1 s: host jitter averages out)
  int graph_nodes = 1000;  // kGraphNode: kernels in the graph
};

struct LaunchTiming {
  std::vector<double> seconds;  // per launch (or per graph node), one entry per sample
  // Host accounting, kThroughput and kGraphNode (bench/host_cpu.hpp), one entry per sample, over
  // the interval in which the host issues the sample's work (between the two event records):
  int host_cpu = -1;                       // the CPU the thread ran on (sched_getcpu; -1 unknown)
  std::vector<double> issue_seconds;       // host wall time, per launch (per node)
  std::vector<double> thread_cpu_seconds;  // the thread's CPU time, per launch (per node)
  std::vector<double> steal_share;         // steal of that CPU / wall time; empty without /proc/stat
  // Outside the timed region the same launches are repeated with a kernel that increments a
  // counter; verified when the counter equals the number of launches (every launch really ran).
  bool verified = false;
  std::string verify_detail;
};

[[nodiscard]] core::Result<LaunchTiming> run_launch(LaunchKind kind, const LaunchOptions& options);

}  // namespace gpudoc::bench::cuda
