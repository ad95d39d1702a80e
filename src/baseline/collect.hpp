// gpudoc::baseline collect — what `gpudoc baseline record|check` measures: the three lines of a
// baseline (hardware benchmarks, the framework probe, the user's workload) run and turned into
// Figures, with the machine context. The gate itself is pure (compare.hpp); this is the part that
// runs things: benchmarks in process, the probe and the workload as child processes
// (workload_run.hpp), the GPUs recorded while the workload runs when a backend is given.
//
//   auto dir = core::PrivateDir::create("gpudoc-baseline");   // every file of the run goes there
//   baseline::CollectEnv env;
//   env.backend = backend;                  // may be null: no GPU figures, env.no_gpu_reason says why
//   env.work_dir = dir->path();
//   env.stop = &stop_signal;                // the CLI's signal handler writes it
//   auto c = baseline::collect(spec, {}, env);   // Result<Collected>
//   c->figures;                             // bench.*, probe.*, the workload's, wall_s, gpu_*
//   c->stopped_by;                          // SIGINT...: what was measured until then
//
// Not thread-safe: one collection at a time per process.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "baseline/compare.hpp"
#include "baseline/workload_run.hpp"
#include "core/clock.hpp"
#include "core/result.hpp"
#include "cost/job.hpp"
#include "gpu/backend.hpp"

namespace gpudoc::baseline {

struct CollectSpec {
  bool bench = false;
  std::vector<std::string> bench_keys;  // empty: every benchmark
  std::string bench_mode = "quick";     // quick | default | full
  int device = 0;
  bool probe = false;
  std::vector<std::string> command;  // the workload; empty: none
  int repeat = 1;                    // runs of the probe and the workload (samples add up)
  int check_repeat = 0;              // runs a check makes; 0: as repeat (a spec stored before it)
  double timeout_s = 0;              // per workload run; 0: none
};
// The spec as stored. A command argument that is not valid UTF-8 is shown with U+FFFD in
// "command" and kept byte for byte in "command_hex", from which spec_from_json restores it.
[[nodiscard]] nlohmann::json to_json(const CollectSpec& s);
// Errors: kBadInput when the stored JSON is not a spec (a damaged store).
[[nodiscard]] core::Result<CollectSpec> spec_from_json(const nlohmann::json& j);
[[nodiscard]] std::string kinds_of(const CollectSpec& s);  // "hardware,probe,workload"

// Which parts to run (a confirmation re-runs only the failing ones). Empty: everything.
struct CollectFilter {
  std::set<std::string> sources;        // "bench", "probe", "workload" (workload also gives "gpudoc")
  std::vector<std::string> bench_keys;  // when set, only these benchmarks
};

// What the caller hands down: the GPU backend (chosen once by the CLI), where files go, and how
// it asks to stop.
struct CollectEnv {
  gpu::Backend* backend = nullptr;  // null: no GPU figures (and no trace)
  core::Clock* clock = nullptr;     // the backend's clock (a replay runs on the trace's); null: the system's
  std::string no_gpu_reason;        // why backend is null
  std::string work_dir;             // a private folder (core::PrivateDir): probe, metrics, traces
  bool echo_to_stderr = false;      // the workload's output to stderr (gpudoc prints JSON)
  const StopSignal* stop = nullptr;
  std::chrono::milliseconds stop_grace = kDefaultStopGrace;
};

struct Collected {
  std::vector<Figure> figures;
  std::vector<std::string> notes;         // waivers, malformed metric lines, absent GPU figures
  std::optional<int> workload_exit_code;  // the first failing run's, else 0; absent without a workload
  bool workload_timed_out = false;
  std::optional<int> stopped_by;                      // the stop signal that ended the collection early
  std::string trace_path;                             // the last workload run's trace (GPU present), else empty
  nlohmann::json details = nlohmann::json::object();  // metrics-protocol counts, absent figures
  // What the workload's runs cost (every run, stopped ones too: their GPUs were paid for); unpriced,
  // the view prices it. Absent without a workload run that has a trace.
  std::optional<cost::JobCost> cost{};
};

// Figures built sample by sample, in first-seen order; each add is O(1) on average (a workload
// may report 100k distinct names).
class FigureAccumulator {
 public:
  void add(std::string_view name, std::string_view unit, std::string_view source, std::optional<Direction> direction,
           double value);
  void add_figure(Figure figure);  // a whole figure (a benchmark's); samples add up by name
  [[nodiscard]] std::vector<Figure>& figures() { return figures_; }

 private:
  std::vector<Figure> figures_;
  std::unordered_map<std::string, std::size_t> index_;
};

// What gpudoc's own figures of a run measured, from the run's details (figure_definitions, or for
// a run stored before they were, its gpu_figures_scope): name -> a sentence. Two runs whose
// sentence for a figure differs measured different things (compare.hpp: "redefined").
[[nodiscard]] std::map<std::string, std::string> figure_definitions(const nlohmann::json& details);
// The workload runs a run's details list (at least 1).
[[nodiscard]] int workload_runs(const nlohmann::json& details);

// The machine this runs on: GPU models, driver and CUDA version from the backend when there is
// one (else `no_gpu_reason` is kept in extra).
[[nodiscard]] MachineContext probe_machine(gpu::Backend* backend, const std::string& no_gpu_reason);

// Runs what spec asks (filtered). Stops early, with what was measured, when env.stop is set.
// Errors: kEnvironment (a hardware baseline without a GPU, the probe unavailable), kBadInput (the
// command cannot be run), kUsage (an unknown benchmark key), kIo (files in env.work_dir).
[[nodiscard]] core::Result<Collected> collect(const CollectSpec& spec, const CollectFilter& filter,
                                              const CollectEnv& env);

}  // namespace gpudoc::baseline
