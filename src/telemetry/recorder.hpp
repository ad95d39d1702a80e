// gpudoc::telemetry::record — samples GPUs into a trace file, into a trace in memory, or both, while
// a command runs, for a duration, or until stopped. The engine behind `gpudoc record`, `gpudoc
// diagnose --live / -- CMD` and `gpudoc doctor`, independent of the command line so it runs against
// the fake backend in tests. The trace in memory is the one reading the file back would give
// (telemetry::TraceBuilder).
//
//   telemetry::RecordOptions opt;
//   opt.output_path = "run.jsonl";
//   opt.command = {"python3", "train.py"};
//   auto r = telemetry::record(backend, clock, opt, stop_requests);   // Result<RecordResult>
//   return r->command_exit_code.value_or(0);
//
// The file is valid whatever happens: the end line is written on a normal end, on a stop request
// (SIGHUP, SIGINT, SIGTERM) and after a failed write; lines are flushed at least every flush_interval.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "gpu/backend.hpp"
#include "telemetry/sampler.hpp"

namespace gpudoc::telemetry {

struct RecordOptions {
  std::string output_path;  // "-" writes to stdout; empty: no file (in_memory, then)
  // Build the trace in memory too (RecordResult::trace), keeping what these options keep.
  std::optional<ReadOptions> in_memory;
  std::optional<core::Nanos> duration;  // stop after this long (with a command: whichever first)
  // Run this and record while it runs. Its stdout passes through gpudoc (a pipe: every byte is
  // passed on), and its ::gpudoc work lines become `step` events (telemetry/work.hpp).
  std::vector<std::string> command;
  bool command_stdout_to_stderr = false;  // the command's stdout goes to stderr (gpudoc prints a document)
  SamplerConfig sampler;
  core::Nanos flush_interval = std::chrono::milliseconds(500);
  // How often the recording loop wakes, in wall time, to see whether it should stop (command exit,
  // Ctrl-C, duration, the end of a replay). Each wake-up of an idle recorder costs CPU; a replay
  // played fast wakes more often so that it stops close to where it should.
  core::Nanos wake_interval = std::chrono::milliseconds(500);
  // Called about once a second with elapsed seconds and sample lines so far (progress display).
  std::function<void(double elapsed_s, std::uint64_t sample_lines)> on_progress;
  // Called once when the sampler runs, before the command (if any) is spawned: a caller that runs
  // its own command beside the recording starts it then, so the trace covers it from its start.
  std::function<void()> on_started;
};

struct RecordResult {
  double duration_s = 0;
  std::uint64_t sample_lines = 0;
  std::uint64_t dropped_records = 0;
  std::string end_reason;                // duration, command_exited, interrupted, all_gpus_lost, replay_ended
  std::optional<int> command_exit_code;  // as a shell reports it (128 + N for signal N)
  std::vector<GpuStats> gpus;
  std::size_t gpu_count = 0;
  std::optional<Trace> trace;  // with RecordOptions::in_memory: what the file holds, as read back
};

// Builds the trace header from the backend: system, every sampled GPU, the metric columns that
// at least one GPU supports, with their periods. Errors: the backend's.
[[nodiscard]] core::Result<TraceHeader> make_header(gpu::Backend& backend, core::Clock& clock,
                                                    const SamplerConfig& config,
                                                    const std::vector<std::string>& command);

// Records until the command exits, the duration passes, a replayed backend has played to its end
// (without a command), or a stop is requested: signal handlers increment stop_requests. The
// command runs in its own process group (core::workload_spawn_options). Without a command one
// request stops; with one, the stop policy stops the command's group (core::GroupStopper: SIGTERM,
// SIGKILL after the grace period or at a second request) and the recording goes on until the
// command has exited and its group is gone; the end line then says "interrupted".
// Errors: kBadInput (cannot run the command), kIo (cannot write the file), kInternal (neither a
// file nor a trace in memory asked for), the sampler's.
[[nodiscard]] core::Result<RecordResult> record(gpu::Backend& backend, core::Clock& clock, const RecordOptions& options,
                                                const std::atomic<int>& stop_requests);

}  // namespace gpudoc::telemetry
