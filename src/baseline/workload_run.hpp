// gpudoc::baseline workload run — one run of a command for a baseline (the user's workload, or
// the framework probe): spawned in its own process group with its stdout read for `::gpudoc`
// lines (and passed on), timed from its spawn to its exit, its process tree watched (for the GPU
// figures), and the GPUs recorded into a trace while it runs when a backend is given.
//
//   baseline::WorkloadOptions o;
//   o.metrics_path = dir.file("metrics.jsonl");   // inside a core::PrivateDir: made new, never followed
//   o.stop = &stop_signal;                         // the CLI's Ctrl-C state
//   auto run = baseline::run_workload({"python3", "train.py"}, o);   // Result<WorkloadRun>
//   run->metrics.figures();                        // what the workload printed
//   run->stopped_by;                               // SIGINT... when gpudoc was asked to stop
//
// Stopping: a timeout or a stop signal sends SIGTERM to the command's whole process group (and
// every process of its tree), then SIGKILL after the grace period (at once on a second signal):
// core::GroupStopper, the stop policy of every command.
// The terminal's Ctrl-C reaches gpudoc alone: the command is in another process group, so gpudoc
// decides how it ends and measures what it did until then. For the same reason it cannot read the
// terminal: when gpudoc's stdin is one, the command's stdin is /dev/null.
//
// Not thread-safe: one run at a time per process (it watches every child of gpudoc).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "baseline/metrics_protocol.hpp"
#include "core/clock.hpp"
#include "core/process.hpp"
#include "core/result.hpp"
#include "gpu/backend.hpp"

namespace gpudoc::baseline {

// How the caller says "stop": its signal handler stores the first stop signal's number and counts
// them (lock-free atomics: safe in a signal handler). The baseline code only reads it. The stop
// policy and its grace period are core's (core/process.hpp), the same for every command.
using StopSignal = core::StopSignal;

inline constexpr std::chrono::milliseconds kDefaultStopGrace = core::kStopGrace;

struct WorkloadOptions {
  gpu::Backend* backend = nullptr;  // with one: the GPUs are recorded into trace_path while it runs
  core::Clock* clock = nullptr;     // the backend's clock (a replay's runs on the trace's); null: the system's
  std::string trace_path;
  std::string metrics_path;     // $GPUDOC_METRICS: created new (O_EXCL|O_NOFOLLOW), read back after
  double timeout_s = 0;         // 0: none
  bool echo_to_stderr = false;  // pass the command's stdout to gpudoc's stderr (gpudoc prints JSON)
  const StopSignal* stop = nullptr;
  std::chrono::milliseconds stop_grace = kDefaultStopGrace;  // SIGTERM ... SIGKILL
  std::vector<std::string> extra_env{};  // "NAME=VALUE" for the command (core::SpawnOptions::extra_env)
  std::vector<int> cpu_affinity{};       // the command's CPUs (core::SpawnOptions::cpu_affinity); empty: as gpudoc's
  int echo_fd = -1;                      // >= 0: the command's stdout is passed on here (wins over echo_to_stderr)
  int stderr_fd = -1;                    // >= 0: the command's stderr goes here
  // Called on the reader thread after each `::gpudoc` line of the command's stdout was read into
  // WorkloadRun::metrics. Returning true says the run has done the work it was run for: the
  // command's group is then stopped as on a timeout, and WorkloadRun::work_done says so (not a
  // failure). `gpudoc tune` runs each trial for a fixed number of steps this way.
  std::function<bool(const MetricsCollector&)> enough{};
};

struct WorkloadRun {
  int exit_code = 0;  // as a shell reports it (128 + N for signal N)
  bool timed_out = false;
  std::optional<int> stopped_by;  // the stop signal gpudoc received while it ran
  bool work_done = false;         // WorkloadOptions::enough said so and gpudoc stopped the command
  double wall_s = 0;              // from the spawn to the exit, seconds
  MetricsCollector metrics;
  std::vector<nlohmann::json> events;  // ::gpudoc lines with an "event" key (the first 1000)
  std::set<pid_t> tree;                // every process of the command seen
  pid_t pid = -1;
};

// Runs argv once. Errors: kBadInput (the command cannot be run, or wrote more than 64 MiB into
// $GPUDOC_METRICS), kIo (the metrics file cannot be made, the trace cannot be written), the
// recorder's (GPU sampling could not start).
[[nodiscard]] core::Result<WorkloadRun> run_workload(const std::vector<std::string>& argv,
                                                     const WorkloadOptions& options);

}  // namespace gpudoc::baseline
