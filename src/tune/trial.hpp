// gpudoc::tune trial — one run of the job with a set of changes, for a fixed amount of work: the
// job's own `::gpudoc` figure (step_ms, or a throughput such as samples_per_s), read from its stdout
// as it runs; after the warm-up samples and the measured ones gpudoc stops the job's process group
// (baseline::run_workload's `enough`). A job that reports no figure is run to its end and its wall
// time is the sample. The trial's output (stdout and stderr) goes to a log in gpudoc's private
// folder (or --logs), never to the terminal; a failure keeps its last lines, and "out of memory" in
// them makes it an out-of-memory failure.
//
//   tune::TrialSpec spec{.arm = "omp_threads_1", .launch = tune::launch_with(cmd, {change}, shim),
//                        .work = work, .timeout_s = 60};
//   auto t = tune::run_trial(spec, env);        // Result<Trial>: samples, status, exit code, message
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "baseline/workload_run.hpp"
#include "core/result.hpp"
#include "core/temp_dir.hpp"
#include "tune/launch.hpp"

namespace gpudoc::tune {

// The figure a job's work is read from: `metric` when given (it must be among `figures`), else the
// first present of step_ms, step_s, iteration_ms, iter_ms, batch_ms, step_time_ms, then of
// samples_per_s, tokens_per_s, images_per_s, items_per_s, throughput; nullopt: none (wall time).
// Direction by the gate's default rule for the name (baseline::default_rule).
struct Figure {
  std::string name{};
  bool higher_is_better = false;
};
[[nodiscard]] std::optional<Figure> choose_figure(const std::map<std::string, std::vector<double>>& figures,
                                                  const std::optional<std::string>& metric);

// How the work of a trial is measured.
struct Work {
  std::string figure{};           // the `::gpudoc` figure; empty: the whole run's wall time
  bool higher_is_better = false;  // a throughput: a sample is its inverse (time per unit of work)
  std::size_t warmup = 3;         // samples left out at the start of every trial
  std::size_t steps = 20;         // samples measured after them; then the trial ends
  // The plain run that finds the figure: `figure` is empty and the first figure choose_figure
  // accepts (`metric` when given) is the one; Trial::figure says which, if any.
  bool detect = false;
  std::optional<std::string> metric{};
  [[nodiscard]] bool wall() const { return figure.empty() && !detect; }
};

enum class TrialStatus { kOk, kFailed, kOutOfMemory, kTimedOut, kTooFewSamples, kStopped };
[[nodiscard]] const char* to_string(TrialStatus s) noexcept;  // "ok", "failed", "out of memory", ...

struct Trial {
  std::string arm{};    // "unchanged", a change's id, "tuned"
  std::string block{};  // "process", "cuda", ..., "confirm process", "final"
  int number = 0;       // in the order the trials ran, from 1
  TrialStatus status = TrialStatus::kOk;
  int exit_code = 0;                           // as a shell reports it (gpudoc's stop: 128 + SIGTERM)
  double wall_s = 0;                           // spawn to exit
  std::optional<double> startup_s{};           // spawn to the first sample of the figure
  std::vector<double> samples{};               // time per unit of work after the warm-up (figure mode), or {wall_s}
  std::size_t figure_samples = 0;              // every sample of the figure the job printed, warm-up included
  std::vector<double> loss{};                  // the job's "loss" figure, every value in order
  std::optional<Figure> figure{};              // the figure the samples are of (Work::detect: the one found)
  std::vector<std::string> patches_applied{};  // the shim's patches that changed something
  std::vector<std::string> shim_notes{};       // what the shim did or could not do
  ShimSeen seen{};                             // what its `observe` patch saw (the plain run)
  std::string message{};                       // why it failed: the exit, the output's last lines
  std::string log_path{};                      // the kept log (--logs), else empty
  [[nodiscard]] bool ok() const { return status == TrialStatus::kOk; }
};

struct TrialSpec {
  std::string arm{};
  std::string block{};
  int number = 0;
  Launch launch{};
  Work work{};
  double timeout_s = 0;  // 0: none
  // The diagnosis run: the GPUs recorded into this trace while it runs, and kept running until it
  // has done its work and run this long past its first reported figure (its start-up, imports and
  // CUDA context, is not what the diagnosis needs to read).
  std::string trace_path{};
  double min_run_s = 0;
};

struct TrialEnv {
  core::PrivateDir* dir = nullptr;  // logs, the shim's reports
  const baseline::StopSignal* stop = nullptr;
  gpu::Backend* backend = nullptr;  // for the diagnosis run's trace
  core::Clock* clock = nullptr;
  std::string logs_dir{};  // keep each trial's log here (--logs); empty: in `dir`, removed after reading
  std::chrono::milliseconds stop_grace{2000};  // SIGTERM ... SIGKILL when the work is done
};

// Runs one trial. A job that fails, runs out of memory, times out or cannot be started is a trial
// with that status, not an error. Errors: kIo (a log or report file cannot be made or read), the
// recorder's (the diagnosis run's GPU sampling).
[[nodiscard]] core::Result<Trial> run_trial(const TrialSpec& spec, const TrialEnv& env);

// "out of memory" in a failed trial's output (CUDA's, PyTorch's OutOfMemoryError, cuBLAS's
// allocation failure), case-insensitive.
[[nodiscard]] bool mentions_out_of_memory(std::string_view output);

// The last `lines` lines of `output`, each at most 300 bytes.
[[nodiscard]] std::string last_lines(std::string_view output, std::size_t lines);

}  // namespace gpudoc::tune
