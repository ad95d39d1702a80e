// gpudoc::baseline gate — `gpudoc baseline record` and `check` as calls: record a run of a
// baseline's three lines (collect.hpp) as its golden run, and check a new run against the golden
// one (the noise-aware comparison, a confirmation re-run of what failed, and on a failure the GPU
// state and the diagnosis of the run's trace), each stored with its machine context. Also what
// `list`, `show` and `history` read from the store. The CLI parses flags into these requests,
// hands in the GPU backend it chose and the stop signal its handler writes, and prints what comes
// back (view/baseline_report.hpp); nothing here prints.
//
//   auto dir = core::PrivateDir::create("gpudoc-baseline");       // every file of the run goes there
//   baseline::GateEnv env;
//   env.backend = backend;                 // may be null: no GPU figures, env.no_gpu_reason says why
//   env.stop = &stop_signal;               // the CLI's signal handler writes it
//   env.dir = &*dir;
//   auto store = baseline::open_store(flag, baseline::StoreUse::kWrite);   // fails now, not after the run
//   auto spec = baseline::record_spec({.command = {"python3", "train.py"}});   // Result<CollectSpec>
//   auto rec = baseline::record(*store, "train", *spec, env);              // Result<Recorded>
//
//   auto plan = baseline::plan_check({.name = "train"});      // everything it may refuse, before it runs
//   auto out = baseline::check(*plan, env, {});               // Result<CheckOutcome>: verdict, exit code
//
// Stopping: when env.stop is set the run ends early (collect.hpp); what was measured is stored
// marked interrupted and the exit code is 128 + the signal; when nothing was measured, nothing is
// stored (run_id 0). Not thread-safe: one record or check at a time per process.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "baseline/collect.hpp"
#include "baseline/compare.hpp"
#include "baseline/config.hpp"
#include "core/result.hpp"
#include "core/temp_dir.hpp"
#include "store/database.hpp"
#include "telemetry/backend_source.hpp"

namespace gpudoc::baseline {

// What the caller hands down to a record or check.
struct GateEnv {
  gpu::Backend* backend = nullptr;  // null: no GPU figures, no trace; no_gpu_reason says why
  core::Clock* clock = nullptr;     // the backend's clock; null: the system's
  std::string no_gpu_reason;
  const StopSignal* stop = nullptr;
  std::chrono::milliseconds stop_grace = kDefaultStopGrace;
  bool echo_to_stderr = false;      // the workload's output to stderr (the caller prints JSON)
  core::PrivateDir* dir = nullptr;  // the run's private folder; kept when a failed check keeps its trace
  // Each note of a collection (waivers, malformed metric lines, absent GPU figures), as it comes.
  std::function<void(const std::string&)> on_note;
  // What the gate does next, for a person ("possible regression in workload; running again ...").
  std::function<void(const std::string&)> on_progress;
};

// A GateEnv on the run's backend (without one, the first line of why not), the stop signal and the
// run's private folder; the caller adds what it prints (on_note, on_progress, echo_to_stderr).
[[nodiscard]] GateEnv gate_env(const telemetry::BackendOrReason& backend, const StopSignal& stop,
                               core::PrivateDir& dir);

// The exit code of a run stopped by signal `sig`: 128 + sig, as a shell reports it.
[[nodiscard]] int exit_code_for_signal(int sig) noexcept;
// {"signal": 2, "signal_name": "SIGINT"}: stored in an interrupted run's details, printed by --json.
[[nodiscard]] nlohmann::json interruption_json(int sig);

// ---- the store, opened for one command ----

enum class StoreUse { kRead, kWrite };
// Opens the store at `path_flag` (store::default_store_path). kRead opens it read-only (a read-only file
// or folder works); kWrite also checks that a write would succeed now, so that a read-only, locked
// or damaged store fails before minutes of measuring. Errors: store::Database::open's and check_writable's.
[[nodiscard]] core::Result<store::Database> open_store(const std::optional<std::string>& path_flag, StoreUse use);

struct NamedBaseline {
  store::Database store;
  store::BaselineInfo info;
};
// The store holding baseline `name`. Errors: kUsage when the store file does not exist yet (saying
// how to record one) or holds no such baseline (saying how to list them); open_store's.
[[nodiscard]] core::Result<NamedBaseline> open_named(const std::optional<std::string>& path_flag,
                                                     const std::string& name, StoreUse use);

// ---- record ----

// What `baseline record` was asked to run, as given on the command line.
struct RecordRequest {
  bool bench = false;
  std::vector<std::string> bench_keys{};  // words, each a comma-separated list of keys or groups
  bool quick = false;
  bool full = false;
  int device = 0;
  bool probe = false;
  std::vector<std::string> command{};  // the workload; empty: none
  int repeat = 0;                      // 0: kGoldenRuns with a workload (checks then run it once), else once
  double timeout_s = 0;                // 0: none
};

// Workload runs of a golden run when --repeat is not given: the fewest that measure the spread of
// a figure with one value per run (compare.hpp), so it gates from the first check. Checks of such
// a baseline run the workload once; with --repeat N, record and checks run it N times.
inline constexpr int kGoldenRuns = kMinRunsForNoise;

// The spec a record runs and stores. Errors: kUsage for --quick with --full, nothing to record (no
// benchmarks, probe or workload), a negative --repeat or --timeout.
[[nodiscard]] core::Result<CollectSpec> record_spec(const RecordRequest& request);

struct Recorded {
  Collected got;
  store::NewBaseline baseline;  // as stored: kinds, spec, the run (machine, verdict)
  std::int64_t run_id = 0;      // 0: stopped before anything was measured, nothing stored
  bool existed = false;         // the name was there before: re-recorded, or (interrupted) its golden run stays
  std::optional<int> stopped_by;
  int exit_code = 0;  // 0, or 128 + the stop signal
  [[nodiscard]] bool interrupted() const { return stopped_by.has_value(); }
};

// Runs `spec` and stores it as baseline `name`'s golden run in `store` (opened with kWrite). A run
// stopped after it measured something is stored marked interrupted (it never replaces a golden
// run, store/baseline_runs.hpp). Errors: collect's; kTimeout (the workload timed out), kBadInput (it exited
// non-zero, or the run produced no figures) — nothing is stored; the store's.
[[nodiscard]] core::Result<Recorded> record(store::Database& store, const std::string& name, const CollectSpec& spec,
                                            const GateEnv& env);

// ---- check ----

struct CheckRequest {
  std::string name;
  std::optional<std::string> store_path{};   // --store
  std::optional<std::string> config_path{};  // --config
  std::vector<std::string> command{};        // replaces the recorded workload when not empty
  int repeat = 0;                            // 0: as recorded
  double timeout_s = 0;                      // 0: as recorded
};

// Everything a check needs and may refuse on, settled before anything runs.
struct CheckPlan {
  Config cfg;
  store::Database store;
  store::BaselineInfo info;
  store::StoredRun golden;
  CollectSpec spec;  // the recorded one with the request's overrides (repeat: this check's runs)
  // The golden run's workload runs and what earlier checks measured of its per-run figures, and
  // what its figures meant (compare.hpp).
  CompareContext context;
  bool command_replaced = false;  // the request ran another command than the recorded one
};

// Errors: kUsage (a negative --repeat or --timeout, no such store or baseline); kBadInput (a golden
// run that was interrupted or is damaged in the store — the gate cannot judge against it — or a
// stored spec that cannot be read); the config's and the store's (opened with kWrite).
[[nodiscard]] core::Result<CheckPlan> plan_check(const CheckRequest& request);

struct CheckOptions {
  bool allow_different_machine = false;  // compare even when GPU model, driver or CUDA differ
  bool confirm = true;                   // re-run what failed before calling it a regression
};

struct CheckOutcome {
  MachineContext machine;                        // this one
  std::vector<std::string> machine_differences;  // from the golden run's (allowed by the options)
  Collected got;
  std::optional<Collected> rerun;         // the confirmation run
  Comparison cmp;                         // the final comparison (confirmed when re-run)
  nlohmann::json confirmation = nullptr;  // {"sources", "figures"} of the re-run
  std::string workload_failure;           // why the workload itself failed, or empty
  std::optional<int> stopped_by;
  bool trace_kept = false;            // got.trace_path stays (in the kept private folder) for the report
  std::string verdict;                // ok, regression, workload_failed, interrupted
  int exit_code = 0;                  // 0 ok, 1 a failure, 128 + N stopped by signal N
  nlohmann::json snapshot = nullptr;  // the GPU state on a failure
  nlohmann::json findings = nlohmann::json::array();  // the trace's diagnosis on a failure
  std::vector<std::string> failure_lines;             // both, for people
  std::int64_t run_id = 0;  // the stored check; 0: stopped before anything was measured, nothing stored
};

// Which parts a confirmation runs again: the sources of the failing figures, and when only
// benchmarks failed, only the failing benchmarks.
[[nodiscard]] CollectFilter confirmation_filter(const Comparison& c);

// Runs the plan's spec on this machine and compares it with the golden run; a failure (not a
// failed workload, not a stop) is run again for the failing parts and must be seen twice unless
// options.confirm is false. The check (and its confirmation) is stored as runs of the baseline.
// Errors: kEnvironment when this machine differs from the golden run's and the options do not
// allow it (before anything runs); collect's (with "confirmation run" for the re-run); the store's.
[[nodiscard]] core::Result<CheckOutcome> check(CheckPlan& plan, const GateEnv& env, const CheckOptions& options);

// ---- what list and history read ----

struct LastCheck {
  std::int64_t run_id = 0;
  std::int64_t time_unix_ns = 0;
  std::string verdict;
};
struct BaselineSummary {
  store::BaselineInfo info;
  std::optional<LastCheck> last_check;
};
struct BaselineList {
  std::string store_path;
  bool store_exists = false;  // false: no store file yet (it is not created by listing)
  std::vector<BaselineSummary> baselines;
};
// Every baseline of the store at `path_flag`, with its last check. Errors: the store's.
[[nodiscard]] core::Result<BaselineList> list_store(const std::optional<std::string>& path_flag);

// `baseline show` and `baseline history`: one baseline read from the store (never created or
// written), its golden run, its last runs, and the rules of the config at `config_path`
// (load_config).
struct BaselineRecord {
  std::string store_path;
  store::BaselineInfo info;
  store::StoredRun golden;
  std::vector<store::StoredRun> runs;  // oldest first
  Config config;
};
// `runs`: how many of the last runs to read (0: all; nullopt: none). Errors: open_named's,
// load_config's, the store's.
[[nodiscard]] core::Result<BaselineRecord> read_baseline(const std::optional<std::string>& path_flag,
                                                         const std::string& name,
                                                         const std::optional<std::string>& config_path,
                                                         std::optional<int> runs);

}  // namespace gpudoc::baseline
