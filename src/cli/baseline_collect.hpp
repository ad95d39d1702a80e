// What `gpudoc baseline record|check` measures: the three lines of a baseline (hardware
// benchmarks, the framework probe, the user's workload) run and turned into baseline::Figures,
// with the machine context. The gate logic itself is pure (src/baseline/compare.hpp); this is the
// part that runs things: benchmarks in process, the probe and the workload as child processes
// whose stdout gpudoc reads for `::gpudoc` lines while it passes the output on, under the
// telemetry recorder when a GPU is present.
//
//   cli::CollectSpec spec = cli::spec_from_json(stored_spec);
//   auto c = cli::collect(spec, {});           // Result<Collected>
//   c->figures;                                 // bench.*, probe.*, the workload's, wall_s, gpu_*
//
// Not thread-safe: it redirects gpudoc's own stdout while a command runs.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "baseline/compare.hpp"
#include "core/result.hpp"

namespace gpudoc::cli {

struct CollectSpec {
  bool bench = false;
  std::vector<std::string> bench_keys;   // empty: every benchmark
  std::string bench_mode = "quick";      // quick | default | full
  int device = 0;
  bool probe = false;
  std::vector<std::string> command;      // the workload; empty: none
  int repeat = 1;                        // runs of the probe and the workload (samples add up)
  double timeout_s = 0;                  // per workload run; 0: none
};
[[nodiscard]] nlohmann::json to_json(const CollectSpec& s);
[[nodiscard]] CollectSpec spec_from_json(const nlohmann::json& j);
[[nodiscard]] std::string kinds_of(const CollectSpec& s);   // "hardware,probe,workload"

// Which parts to run (a confirmation re-runs only the failing ones). Empty: everything.
struct CollectFilter {
  std::set<std::string> sources;          // "bench", "probe", "workload" (workload also gives "gpudoc")
  std::vector<std::string> bench_keys;    // when set, only these benchmarks
};

struct Collected {
  std::vector<baseline::Figure> figures;
  std::vector<std::string> notes;         // waivers, malformed metric lines, absent GPU figures
  std::optional<int> workload_exit_code;  // the first failing run's, else 0; absent without a workload
  bool workload_timed_out = false;
  std::string trace_path;                 // the last workload run's trace (GPU present), else empty
  nlohmann::json details = nlohmann::json::object();   // metrics-protocol counts, absent figures
};

// The machine this runs on: GPU models, driver and CUDA version from NVML when it loads.
[[nodiscard]] baseline::MachineContext probe_machine();

// Runs what spec asks (filtered). `echo_to_stderr`: pass the workload's output to stderr instead
// of stdout (for --json). `trace_dir`: where workload traces go.
// Errors: kEnvironment (a hardware baseline without a GPU, the probe unavailable), kBadInput (the
// command cannot be run), kUsage (an unknown benchmark key).
[[nodiscard]] core::Result<Collected> collect(const CollectSpec& spec, const CollectFilter& filter, bool echo_to_stderr,
                                              const std::string& trace_dir);

// A snapshot of every GPU's state for a regression report (clocks, temperatures, power, throttle
// reasons, PCIe link): text lines and JSON. Absent readings are said to be absent.
struct GpuSnapshot {
  std::vector<std::string> lines;
  nlohmann::json json = nlohmann::json::array();
};
[[nodiscard]] GpuSnapshot gpu_snapshot();

}  // namespace gpudoc::cli
