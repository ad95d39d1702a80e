// gpudoc baseline: golden baselines and the CI regression gate — record what this machine and a
// workload do, check later runs against it (exit 1 on a confirmed regression), and show history.
// Parse, call baseline/ (collect, compare, store), print with view/.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <csignal>
#include <cstdio>
#include <filesystem>

#include "baseline/collect.hpp"
#include "baseline/compare.hpp"
#include "baseline/config.hpp"
#include "baseline/regression_report.hpp"
#include "baseline/store.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/clock.hpp"
#include "core/file.hpp"
#include "core/log.hpp"
#include "core/process.hpp"
#include "core/temp_dir.hpp"
#include "core/text.hpp"
#include "core/utf8.hpp"
#include "view/baseline_html.hpp"
#include "view/baseline_report.hpp"

namespace gpudoc::cli {
namespace {

struct BaselineFlags {
  std::string sub;
  std::string name;
  std::optional<std::string> store;
  std::optional<std::string> config;
  bool json = false;
  // record / check
  bool bench = false;
  std::vector<std::string> bench_keys;
  bool quick = false;
  bool full = false;
  bool probe = false;
  int repeat = 0;  // 0: the stored value (check) or 1 (record)
  double timeout_s = 0;
  int device = 0;
  std::vector<std::string> command;
  // check
  bool allow_different_machine = false;
  bool no_confirm = false;
  // history
  int limit = 30;
  std::optional<std::string> html;
};

// A failed write (stdout closed by `| head -1`) is ignored: what was measured is stored first.
void print(const std::string& s) { std::fputs(s.c_str(), stdout); }

void print_notes(const std::vector<std::string>& notes) {
  for (const auto& n : notes) std::fprintf(stderr, "gpudoc: note: %s\n", n.c_str());
}

int exit_code_for_signal(int sig) { return 128 + sig; }

// ---- what one record or check runs with -----------------------------------------------------

// The GPU backend the run was handed (chosen once by the CLI, opened here) and the run's private
// folder for its files.
struct RunEnv {
  gpu::Backend* backend = nullptr;
  core::Clock* clock = nullptr;
  std::string no_gpu_reason;
  std::optional<core::PrivateDir> dir;

  [[nodiscard]] baseline::CollectEnv collect_env(bool json) const {
    baseline::CollectEnv e;
    e.backend = backend;
    e.clock = clock;
    e.no_gpu_reason = no_gpu_reason;
    e.work_dir = dir->path();
    e.echo_to_stderr = json;
    e.stop = &stop_signal();
    return e;
  }
};

core::Result<RunEnv> make_run_env(Context& ctx) {
  RunEnv env;
  const telemetry::BackendOrReason b = ctx.backend.open_or_reason();
  env.backend = b.backend;
  env.clock = b.clock;
  env.no_gpu_reason = b.why_not.substr(0, b.why_not.find('\n'));
  // A replay or fake GPUs are not this machine: say so before anything runs (the stored machine
  // context names the backend too).
  if (auto live = ctx.backend.open(); live && !live->banner.empty())
    std::fprintf(stderr, "gpudoc: baseline: %s\n", live->banner.c_str());
  auto dir = core::PrivateDir::create("gpudoc-baseline");
  if (!dir) return dir.error();
  env.dir = std::move(*dir);
  return env;
}

core::Result<baseline::Store> open_store(const BaselineFlags& f, bool must_exist, bool read_only) {
  auto path = baseline::default_store_path(f.store);
  if (!path) return path.error();
  std::error_code ec;
  if (must_exist && !std::filesystem::exists(*path, ec))
    return core::Error(core::ErrorKind::kUsage,
                       fmt::format("no baseline named '{}': the store {} does not exist yet (record one first: "
                                   "gpudoc baseline record {} -- CMD)",
                                   f.name, *path, f.name));
  baseline::OpenOptions options;
  options.read_only = read_only;
  return baseline::Store::open(*path, options);
}

// Before minutes of measuring: a store that is read-only, locked or damaged fails now.
core::Result<baseline::Store> open_store_to_write(const BaselineFlags& f, bool must_exist) {
  auto store = open_store(f, must_exist, false);
  if (!store) return store.error();
  if (auto st = store->check_writable(); !st) return st.error();
  return store;
}

core::Result<std::pair<baseline::Store, baseline::BaselineInfo>> open_named(const BaselineFlags& f, bool read_only) {
  auto store = read_only ? open_store(f, true, true) : open_store_to_write(f, true);
  if (!store) return store.error();
  auto info = store->find_baseline(f.name);
  if (!info) return info.error();
  if (!*info)
    return core::Error(
        core::ErrorKind::kUsage,
        fmt::format("no baseline named '{}' in {} (`gpudoc baseline list` shows them)", f.name, store->path()));
  return std::make_pair(std::move(*store), **info);
}

nlohmann::json interruption(int sig) { return {{"signal", sig}, {"signal_name", core::signal_name(sig)}}; }

// Stopped before anything was measured: nothing to store. Returns the exit code, 128 + sig.
int stopped_before_measuring(const BaselineFlags& f, int sig) {
  std::fprintf(stderr, "gpudoc: baseline: stopped by %s before anything was measured; nothing stored\n",
               core::signal_name(sig).c_str());
  if (f.json)
    print_json(
        {{"baseline", f.name}, {"status", "interrupted"}, {"stored", false}, {"interrupted", interruption(sig)}});
  return exit_code_for_signal(sig);
}

// ---- record ----------------------------------------------------------------------------------

core::Status check_record_flags(const BaselineFlags& f) {
  if (f.quick && f.full) return core::Error(core::ErrorKind::kUsage, "--quick and --full exclude each other");
  if (!f.bench && !f.probe && f.command.empty())
    return core::Error(
        core::ErrorKind::kUsage,
        "nothing to record: give --bench, --probe and/or a workload after -- (gpudoc baseline record NAME -- "
        "python3 train.py)");
  if (f.repeat < 0 || f.timeout_s < 0)
    return core::Error(core::ErrorKind::kUsage, "--repeat and --timeout must be positive");
  return {};
}

baseline::CollectSpec record_spec(const BaselineFlags& f) {
  baseline::CollectSpec spec;
  spec.bench = f.bench;
  spec.bench_keys = f.bench_keys;
  spec.bench_mode = f.full ? "full" : (f.quick ? "quick" : "default");
  spec.device = f.device;
  spec.probe = f.probe;
  spec.command = f.command;
  spec.repeat = f.repeat > 0 ? f.repeat : 1;
  spec.timeout_s = f.timeout_s;
  return spec;
}

// Why a finished collection must not become a baseline, or empty.
std::optional<core::Error> unrecordable(const baseline::Collected& got, double timeout_s) {
  if (got.workload_timed_out)
    return core::Error(
        core::ErrorKind::kTimeout,
        fmt::format("the workload did not finish within --timeout {} s and was stopped; nothing recorded", timeout_s));
  if (got.workload_exit_code && *got.workload_exit_code != 0)
    return core::Error(
        core::ErrorKind::kBadInput,
        fmt::format("the workload exited with code {}: a baseline is recorded only from a successful run; nothing "
                    "recorded",
                    *got.workload_exit_code));
  if (got.figures.empty())
    return core::Error(core::ErrorKind::kBadInput, "the run produced no figures; nothing recorded");
  return std::nullopt;
}

void print_recorded(const BaselineFlags& f, const baseline::NewBaseline& nb, const baseline::Collected& got,
                    std::int64_t id, bool existed, const std::string& store_path, const baseline::Config& cfg) {
  const bool interrupted = nb.run.verdict == baseline::kVerdictInterrupted;
  if (f.json) {
    print_json({{"baseline", f.name},
                {"store", store_path},
                {"run_id", id},
                {"replaced", existed && !interrupted},
                {"status", interrupted ? "interrupted" : "recorded"},
                {"interrupted", got.stopped_by ? interruption(*got.stopped_by) : nlohmann::json()},
                {"kinds", nb.kinds},
                {"machine", baseline::to_json(nb.run.machine)},
                {"figures", view::figures_json(got.figures, cfg)},
                {"notes", got.notes},
                {"details", got.details}});
    return;
  }
  if (interrupted)
    print(
        fmt::format("INTERRUPTED by {}: what was measured is stored as run {} of '{}' in {}, marked interrupted; {}\n",
                    core::signal_name(*got.stopped_by), id, f.name, store_path,
                    existed ? "the golden run stays as it was"
                            : "`baseline check` refuses this baseline until it is recorded again"));
  else
    print(fmt::format("{} baseline '{}' ({}) in {}, run {}\n", existed ? "re-recorded" : "recorded", f.name, nb.kinds,
                      store_path, id));
  print(view::render_figures(got.figures, cfg));
}

int run_record(const BaselineFlags& f, Context& ctx) {
  if (auto st = check_record_flags(f); !st) return report_error(st.error(), f.json);
  auto cfg = baseline::load_config(f.config);
  if (!cfg) return report_error(cfg.error(), f.json);
  const baseline::CollectSpec spec = record_spec(f);
  auto store = open_store_to_write(f, false);
  if (!store) return report_error(store.error(), f.json);
  install_stop_handlers({SIGINT, SIGTERM, SIGHUP});
  auto env = make_run_env(ctx);
  if (!env) return report_error(env.error(), f.json);

  const baseline::MachineContext machine = baseline::probe_machine(env->backend, env->no_gpu_reason);
  auto got = baseline::collect(spec, {}, env->collect_env(f.json));
  if (!got) return report_error(got.error(), f.json);
  print_notes(got->notes);
  if (got->stopped_by && got->figures.empty()) return stopped_before_measuring(f, *got->stopped_by);
  if (!got->stopped_by)
    if (auto why = unrecordable(*got, f.timeout_s)) return report_error(*why, f.json);

  baseline::NewBaseline nb;
  nb.name = f.name;
  nb.kinds = baseline::kinds_of(spec);
  nb.spec = baseline::to_json(spec);
  nb.run.time_unix_ns = core::SystemClock().unix_now_ns();
  nb.run.machine = machine;
  nb.run.figures = got->figures;
  nb.run.details = got->details;
  nb.run.details["notes"] = got->notes;
  if (got->stopped_by) {
    nb.run.verdict = baseline::kVerdictInterrupted;
    nb.run.exit_code = exit_code_for_signal(*got->stopped_by);
    nb.run.details["interrupted"] = interruption(*got->stopped_by);
  }
  auto existed = store->find_baseline(f.name);
  if (!existed) return report_error(existed.error(), f.json);
  auto id = store->record_baseline(nb);
  if (!id) return report_error(id.error(), f.json);
  print_recorded(f, nb, *got, *id, existed->has_value(), store->path(), *cfg);
  return got->stopped_by ? exit_code_for_signal(*got->stopped_by) : core::kExitOk;
}

// ---- check -----------------------------------------------------------------------------------

// Everything a check needs and may refuse on, settled before anything runs.
struct CheckPlan {
  baseline::Config cfg;
  baseline::Store store;
  baseline::BaselineInfo info;
  baseline::StoredRun golden;
  baseline::CollectSpec spec;
  baseline::MachineContext machine;
  std::vector<std::string> diffs;
};

// A baseline the gate cannot judge against: cut short, or damaged in the store.
std::optional<core::Error> unusable_golden(const baseline::BaselineInfo& info, const baseline::StoredRun& golden,
                                           const std::string& store_path) {
  if (golden.interrupted()) {
    const std::string by = golden.details.is_object() && golden.details.contains("interrupted")
                               ? golden.details["interrupted"].value("signal_name", std::string("a signal"))
                               : std::string("a signal");
    return core::Error(
        core::ErrorKind::kBadInput,
        fmt::format("baseline '{}' has no complete recording: its golden run {} was interrupted ({}), so "
                    "there is nothing whole to compare against; record it again (gpudoc baseline record {} ...)",
                    info.name, golden.id, by, info.name));
  }
  if (!golden.damaged.empty())
    return core::Error(
        core::ErrorKind::kBadInput,
        fmt::format("baseline '{}' in {} is damaged, so the gate cannot judge against it: golden run {}: {}; "
                    "record it again or restore the store from a copy",
                    info.name, store_path, golden.id, fmt::join(golden.damaged, "; ")));
  return std::nullopt;
}

core::Result<CheckPlan> plan_check(const BaselineFlags& f) {
  if (f.repeat < 0 || f.timeout_s < 0)
    return core::Error(core::ErrorKind::kUsage, "--repeat and --timeout must be positive");
  auto cfg = baseline::load_config(f.config);
  if (!cfg) return cfg.error();
  auto named = open_named(f, false);
  if (!named) return named.error();
  auto& [store, info] = *named;
  auto golden = store.load_run(info.golden_run_id);
  if (!golden) return golden.error();
  if (auto why = unusable_golden(info, *golden, store.path())) return *why;
  auto spec = baseline::spec_from_json(info.spec);
  if (!spec) return spec.error().with_context(fmt::format("baseline '{}' in {}", f.name, store.path()));
  CheckPlan plan{std::move(*cfg), std::move(store), info, std::move(*golden), std::move(*spec), {}, {}};
  if (!f.command.empty()) plan.spec.command = f.command;
  if (f.repeat > 0) plan.spec.repeat = f.repeat;
  if (f.timeout_s > 0) plan.spec.timeout_s = f.timeout_s;
  return plan;
}

core::Status compare_machines(const BaselineFlags& f, CheckPlan& plan, const RunEnv& env) {
  plan.machine = baseline::probe_machine(env.backend, env.no_gpu_reason);
  plan.diffs = baseline::machine_differences(plan.golden.machine, plan.machine);
  if (!plan.diffs.empty() && !f.allow_different_machine)
    return core::Error(
        core::ErrorKind::kEnvironment,
        fmt::format("baseline '{}' was recorded on a different machine, so the figures are not comparable:\n  "
                    "{}\npass --allow-different-machine to compare anyway",
                    f.name, fmt::join(plan.diffs, "\n  ")));
  return {};
}

struct CheckOutcome {
  baseline::Collected got;
  std::optional<baseline::Collected> rerun;
  baseline::Comparison cmp;
  nlohmann::json confirmation = nullptr;
  std::string workload_failure;  // why the workload itself failed, or empty
  std::optional<int> stopped_by;
  bool trace_kept = false;  // the run's trace stays (in the run's private folder) for the report
  std::string verdict;      // ok, regression, workload_failed, interrupted
  int code = core::kExitOk;
  nlohmann::json snapshot = nullptr, findings = nlohmann::json::array();
  std::vector<std::string> failure_lines;
};

baseline::CollectFilter filter_for(const baseline::Comparison& c) {
  baseline::CollectFilter filter;
  for (const auto& s : c.failing_sources()) filter.sources.insert(s);
  if (filter.sources.count("bench") != 0 && filter.sources.size() == 1)
    for (const auto& fig : c.figures)
      if (fig.source == "bench" && baseline::is_failure(fig.verdict)) filter.bench_keys.push_back(fig.name);
  return filter;
}

// A possible regression is run again (only the failing parts) and must be seen twice.
core::Status confirm_regression(const BaselineFlags& f, const CheckPlan& plan, const RunEnv& env, CheckOutcome& o) {
  const baseline::CollectFilter filter = filter_for(o.cmp);
  std::fprintf(stderr, "gpudoc: baseline: possible regression in %s; running again to confirm\n",
               fmt::format("{}", fmt::join(o.cmp.failing_sources(), ", ")).c_str());
  auto again = baseline::collect(plan.spec, filter, env.collect_env(f.json));
  if (!again) return again.error().with_context("confirmation run");
  print_notes(again->notes);
  const baseline::Comparison second = baseline::compare(plan.golden.figures, again->figures, plan.cfg);
  o.cmp = baseline::confirm(o.cmp, second);
  o.confirmation = {{"sources", filter.sources}, {"figures", baseline::to_json(second)}};
  if (!again->trace_path.empty()) {
    if (!o.got.trace_path.empty() && o.got.trace_path != again->trace_path) std::remove(o.got.trace_path.c_str());
    o.got.trace_path = again->trace_path;
  }
  if (again->stopped_by) o.stopped_by = again->stopped_by;
  o.rerun = std::move(*again);
  return {};
}

core::Result<CheckOutcome> run_check_collections(const BaselineFlags& f, const CheckPlan& plan, RunEnv& env) {
  CheckOutcome o;
  auto got = baseline::collect(plan.spec, {}, env.collect_env(f.json));
  if (!got) return got.error();
  o.got = std::move(*got);
  print_notes(o.got.notes);
  o.stopped_by = o.got.stopped_by;
  o.cmp = baseline::compare(plan.golden.figures, o.got.figures, plan.cfg);
  if (o.got.workload_timed_out)
    o.workload_failure = fmt::format("the workload did not finish within --timeout {} s", plan.spec.timeout_s);
  else if (o.got.workload_exit_code && *o.got.workload_exit_code != 0)
    o.workload_failure = fmt::format("the workload exited with code {}", *o.got.workload_exit_code);
  if (o.cmp.failed() && o.workload_failure.empty() && !o.stopped_by && !f.no_confirm)
    if (auto st = confirm_regression(f, plan, env, o); !st) return st.error();
  const bool failed = o.cmp.failed() || !o.workload_failure.empty();
  o.verdict = o.stopped_by                  ? baseline::kVerdictInterrupted
              : !o.workload_failure.empty() ? "workload_failed"
              : failed                      ? "regression"
                                            : "ok";
  o.code = o.stopped_by ? exit_code_for_signal(*o.stopped_by) : failed ? core::kExitFinding : core::kExitOk;
  // The report of a failure carries the GPU's state now and what the run's trace shows.
  if (failed && !o.stopped_by) {
    baseline::GpuSnapshot s = baseline::gpu_snapshot(env.backend, env.no_gpu_reason);
    o.snapshot = s.json;
    o.failure_lines = s.lines;
    o.findings = baseline::regression_findings(o.got.trace_path, o.failure_lines);
    o.trace_kept = !o.got.trace_path.empty();
    if (o.trace_kept) env.dir->keep();  // the trace outlives gpudoc, in its private folder
  }
  return o;
}

core::Result<std::int64_t> store_check(const BaselineFlags& f, CheckPlan& plan, const CheckOutcome& o) {
  baseline::NewRun run;
  run.baseline = f.name;
  run.time_unix_ns = core::SystemClock().unix_now_ns();
  run.role = "check";
  run.machine = plan.machine;
  run.verdict = o.verdict;
  run.exit_code = o.code;
  run.figures = o.got.figures;
  run.details = o.got.details;
  run.details["notes"] = o.got.notes;
  run.details["comparison"] = baseline::to_json(o.cmp);
  if (!o.workload_failure.empty()) run.details["workload_failure"] = o.workload_failure;
  if (!plan.diffs.empty()) run.details["machine_differences"] = plan.diffs;
  if (o.stopped_by) run.details["interrupted"] = interruption(*o.stopped_by);
  auto id = plan.store.add_run(run);
  if (!id) return id.error().with_context("storing the check");
  if (o.rerun) {
    baseline::NewRun c = run;
    c.role = "confirm";
    c.figures = o.rerun->figures;
    c.details = o.rerun->details;
    c.details["check_run_id"] = *id;
    if (auto cid = plan.store.add_run(c); !cid)
      core::log_warn("storing the confirmation run: {}", cid.error().message());
  }
  return id;
}

void print_check(const BaselineFlags& f, const CheckPlan& plan, const CheckOutcome& o, std::int64_t id) {
  if (f.json) {
    print_json({{"baseline", f.name},
                {"store", plan.store.path()},
                {"run_id", id},
                {"verdict", o.verdict},
                {"exit_code", o.code},
                {"workload_failure",
                 o.workload_failure.empty() ? nlohmann::json(nullptr) : nlohmann::json(o.workload_failure)},
                {"interrupted", o.stopped_by ? interruption(*o.stopped_by) : nlohmann::json()},
                {"machine", baseline::to_json(plan.machine)},
                {"baseline_machine", baseline::to_json(plan.golden.machine)},
                {"machine_differences", plan.diffs},
                {"figures", baseline::to_json(o.cmp)},
                {"confirmation", o.confirmation},
                {"notes", o.got.notes},
                {"gpu_snapshot", o.snapshot},
                {"findings", o.findings},
                {"trace", o.trace_kept ? nlohmann::json(o.got.trace_path) : nlohmann::json(nullptr)}});
    return;
  }
  print(fmt::format("baseline '{}' (recorded {}), check run {}\n", f.name,
                    core::utc_seconds_text(plan.golden.time_unix_ns), id));
  if (!plan.diffs.empty())
    print(fmt::format("compared across machines (--allow-different-machine): {}\n", fmt::join(plan.diffs, "; ")));
  print(view::render_comparison(o.cmp));
  if (o.stopped_by) {
    print(fmt::format(
        "INTERRUPTED by {}: the check was stopped; what was measured is stored as run {}, marked interrupted\n",
        core::signal_name(*o.stopped_by), id));
    return;
  }
  if (!o.workload_failure.empty()) print(fmt::format("FAILED: {}\n", o.workload_failure));
  if (o.code == core::kExitOk) {
    print("ok: every figure within its bound\n");
    return;
  }
  std::size_t n = 0;
  for (const auto& fig : o.cmp.figures) n += baseline::is_failure(fig.verdict) ? 1 : 0;
  if (n > 0)
    print(fmt::format("REGRESSION: {} figure{} out of bounds{}\n", n, n == 1 ? "" : "s",
                      o.rerun ? " (confirmed by a re-run)" : ""));
  print("GPU state now, and what the run's trace shows:\n");
  for (const auto& l : o.failure_lines) print("  " + l + "\n");
}

int run_check(const BaselineFlags& f, Context& ctx) {
  auto plan = plan_check(f);
  if (!plan) return report_error(plan.error(), f.json);
  install_stop_handlers({SIGINT, SIGTERM, SIGHUP});
  auto env = make_run_env(ctx);
  if (!env) return report_error(env.error(), f.json);
  if (auto st = compare_machines(f, *plan, *env); !st) return report_error(st.error(), f.json);
  auto outcome = run_check_collections(f, *plan, *env);
  if (!outcome) return report_error(outcome.error(), f.json);
  if (outcome->stopped_by && outcome->got.figures.empty()) return stopped_before_measuring(f, *outcome->stopped_by);
  auto id = store_check(f, *plan, *outcome);
  if (!id) return report_error(id.error(), f.json);
  print_check(f, *plan, *outcome, *id);
  return outcome->code;
}

// ---- list / show / history -------------------------------------------------------------------

int run_list(const BaselineFlags& f) {
  auto path = baseline::default_store_path(f.store);
  if (!path) return report_error(path.error(), f.json);
  std::error_code ec;
  if (!std::filesystem::exists(*path, ec)) {
    if (f.json)
      print_json({{"store", *path}, {"baselines", nlohmann::json::array()}});
    else
      print(fmt::format("no baselines yet ({} does not exist)\n", *path));
    return core::kExitOk;
  }
  auto store = open_store(f, false, true);
  if (!store) return report_error(store.error(), f.json);
  auto list = store->list_baselines();
  if (!list) return report_error(list.error(), f.json);
  nlohmann::json arr = nlohmann::json::array();
  std::vector<std::vector<std::string>> rows{{"name", "kinds", "recorded", "golden", "GPUs", "runs", "last check"}};
  for (const auto& b : *list) {
    auto runs = store->runs_of(b.name, 0);
    std::string last = "—";
    nlohmann::json last_j = nullptr;
    if (runs)
      for (auto it = runs->rbegin(); it != runs->rend(); ++it)
        if (it->role == "check") {
          last = fmt::format("{} {}", it->verdict, core::utc_seconds_text(it->time_unix_ns));
          last_j = {{"verdict", it->verdict}, {"time", core::utc_seconds_text(it->time_unix_ns)}, {"run_id", it->id}};
          break;
        }
    const std::string gpus =
        b.machine.gpus.empty() ? "none" : fmt::format("{}x {}", b.machine.gpus.size(), b.machine.gpus[0]);
    const std::string golden = b.golden_interrupted() ? "interrupted" : "complete";
    rows.push_back(
        {b.name, b.kinds, core::utc_seconds_text(b.updated_unix_ns), golden, gpus, std::to_string(b.run_count), last});
    arr.push_back({{"name", b.name},
                   {"kinds", b.kinds},
                   {"created", core::utc_seconds_text(b.created_unix_ns)},
                   {"recorded", core::utc_seconds_text(b.updated_unix_ns)},
                   {"golden_status", golden},
                   {"machine", baseline::to_json(b.machine)},
                   {"runs", b.run_count},
                   {"last_check", last_j}});
  }
  if (f.json)
    print_json({{"store", store->path()}, {"baselines", arr}});
  else if (list->empty())
    print(fmt::format("no baselines yet in {}\n", store->path()));
  else
    print(core::render_table(rows));
  return core::kExitOk;
}

std::string golden_status_line(const baseline::StoredRun& golden) {
  if (golden.interrupted())
    return "status: INTERRUPTED recording: the golden run was stopped before it ended; `baseline check` refuses it "
           "until "
           "it is recorded again\n";
  if (!golden.damaged.empty())
    return fmt::format("status: DAMAGED in the store ({}); `baseline check` refuses it\n",
                       fmt::join(golden.damaged, "; "));
  return {};
}

int run_show(const BaselineFlags& f) {
  auto cfg = baseline::load_config(f.config);
  if (!cfg) return report_error(cfg.error(), f.json);
  auto named = open_named(f, true);
  if (!named) return report_error(named.error(), f.json);
  auto& [store, info] = *named;
  auto golden = store.load_run(info.golden_run_id);
  if (!golden) return report_error(golden.error(), f.json);
  if (f.json) {
    print_json({{"name", info.name},
                {"kinds", info.kinds},
                {"created", core::utc_seconds_text(info.created_unix_ns)},
                {"recorded", core::utc_seconds_text(info.updated_unix_ns)},
                {"status", golden->interrupted()     ? "interrupted"
                           : golden->damaged.empty() ? "complete"
                                                     : "damaged"},
                {"damaged", golden->damaged},
                {"spec", info.spec},
                {"machine", baseline::to_json(golden->machine)},
                {"run_id", golden->id},
                {"gpudoc_version", golden->gpudoc_version},
                {"figures", view::figures_json(golden->figures, *cfg)},
                {"details", golden->details}});
    return core::kExitOk;
  }
  auto stored_spec = baseline::spec_from_json(info.spec);
  if (!stored_spec)
    return report_error(stored_spec.error().with_context(fmt::format("baseline '{}'", info.name)), f.json);
  const baseline::CollectSpec& spec = *stored_spec;
  std::vector<std::string> shown_command;  // as stored for display: valid UTF-8
  for (const auto& word : spec.command) shown_command.push_back(core::to_valid_utf8(word));
  std::string what;
  if (spec.bench)
    what += fmt::format("  hardware: gpudoc bench {} ({})\n",
                        spec.bench_keys.empty() ? "(all)" : fmt::format("{}", fmt::join(spec.bench_keys, ",")),
                        spec.bench_mode);
  if (spec.probe) what += "  probe: PyTorch matmul\n";
  if (!spec.command.empty())
    what += fmt::format("  workload: {} (x{}{})\n", fmt::join(shown_command, " "), spec.repeat,
                        spec.timeout_s > 0 ? fmt::format(", timeout {} s", spec.timeout_s) : "");
  const auto& m = golden->machine;
  print(fmt::format("baseline '{}' ({}), recorded {} by gpudoc {}\n{}{}machine: {} | GPUs: {} | driver {} | CUDA {}\n",
                    info.name, info.kinds, core::utc_seconds_text(info.updated_unix_ns), golden->gpudoc_version,
                    golden_status_line(*golden), what, m.host,
                    m.gpus.empty() ? std::string("none") : fmt::format("{}", fmt::join(m.gpus, ", ")),
                    m.driver_version.empty() ? "—" : m.driver_version, m.cuda_version.empty() ? "—" : m.cuda_version));
  print(view::render_figures(golden->figures, *cfg));
  return core::kExitOk;
}

core::Status write_history_html(const BaselineFlags& f, const baseline::BaselineInfo& info,
                                const std::vector<baseline::StoredRun>& runs, baseline::Store& store) {
  auto cfg = baseline::load_config(f.config);
  if (!cfg) return cfg.error();
  std::optional<baseline::StoredRun> golden;
  for (const auto& r : runs)
    if (r.id == info.golden_run_id) golden = r;
  if (!golden) {
    auto g = store.load_run(info.golden_run_id);
    if (!g) return g.error();
    golden = std::move(*g);
  }
  auto page = view::render_baseline_history_html(view::history_page(info, runs, golden, *cfg, store.path()));
  if (!page) return page.error();
  return core::write_file(*f.html, *page);
}

int run_history(const BaselineFlags& f) {
  auto named = open_named(f, true);
  if (!named) return report_error(named.error(), f.json);
  auto& [store, info] = *named;
  auto runs = store.runs_of(f.name, f.limit);
  if (!runs) return report_error(runs.error(), f.json);
  for (const auto& r : *runs)
    for (const auto& d : r.damaged)
      std::fprintf(stderr, "gpudoc: note: run %lld is damaged in the store: %s\n", static_cast<long long>(r.id),
                   d.c_str());
  if (f.html) {
    if (auto st = write_history_html(f, info, *runs, store); !st) return report_error(st.error(), f.json);
  }
  if (f.json) {
    nlohmann::json j = view::history_json(info, *runs);
    if (f.html) j["html"] = *f.html;
    print_json(j);
    return core::kExitOk;
  }
  print(view::render_history(info, *runs));
  if (f.html) print(fmt::format("HTML page: {}\n", *f.html));
  return core::kExitOk;
}

void add_common(CLI::App* cmd, BaselineFlags& f) {
  cmd->add_option("--store", f.store,
                  "the store file (default: $GPUDOC_STORE, else $XDG_DATA_HOME/gpudoc/gpudoc.db, else "
                  "~/.local/share/gpudoc/gpudoc.db)");
  cmd->add_flag("--json", f.json, "print the result as JSON on stdout (a workload's output then goes to stderr)");
}

void add_run_options(CLI::App* cmd, BaselineFlags& f, bool record) {
  cmd->add_option("--config", f.config,
                  "thresholds and directions per figure (default: ./gpudoc.baseline.json when present)");
  cmd->add_option("--repeat", f.repeat,
                  record ? "run the probe and the workload N times (samples add up; default 1)"
                         : "runs of the probe and the workload (default: as recorded)");
  cmd->add_option("--timeout", f.timeout_s,
                  "stop a workload run that takes longer than this many seconds (SIGTERM, then SIGKILL)");
  cmd->add_option("command", f.command, "the workload to run (after --); it reports figures with ::gpudoc lines");
}

}  // namespace

void register_baseline(CLI::App& app, Action& action, Context& ctx) {
  auto f = std::make_shared<BaselineFlags>();
  auto* cmd = app.add_subcommand("baseline", "Golden baselines and the CI regression gate");
  cmd->description(
      "Keep golden baselines on three lines — hardware (gpudoc bench), the framework (a PyTorch\n"
      "matmul probe) and your own workload (step time, peak GPU memory, accuracy...) — and gate\n"
      "later runs on them. A workload reports its figures by printing lines\n"
      "  ::gpudoc {\"step_ms\": 41.2, \"accuracy\": 0.9451}\n"
      "on stdout (or JSON lines into the file named by $GPUDOC_METRICS); gpudoc adds wall time and,\n"
      "with a GPU, the process tree's peak GPU memory, mean utilization and energy.\n\n"
      "A figure regresses when it is worse than the baseline's median by more than its bound\n"
      "(bandwidth 5 %, times 10 %, accuracy 1 %... configurable; never inside 2x the measured noise),\n"
      "significantly so by a rank test when both sides have >= 5 samples, and again in a re-run.\n"
      "Results live in one SQLite file (WAL, synchronous=FULL). See README, section Baselines.");
  cmd->require_subcommand(1);

  auto* rec = cmd->add_subcommand("record", "Run and store a golden baseline under NAME");
  rec->add_option("name", f->name, "baseline name")->required();
  rec->add_option("--bench", f->bench_keys,
                  "hardware: run gpudoc bench (all benchmarks, or these keys/groups: hbm,launch)")
      ->expected(0, 1);  // one word, split on ',' below: CLI11 counts a delimiter's pieces as values
  rec->add_flag("--quick", f->quick, "benchmarks with fewer repetitions");
  rec->add_flag("--full", f->full, "benchmarks with more repetitions");
  rec->add_flag("--probe", f->probe,
                "framework: the built-in PyTorch matmul probe (needs python3 with torch and a GPU)");
  rec->add_option("--device", f->device, "CUDA device for --bench and --probe");
  add_run_options(rec, *f, true);
  add_common(rec, *f);
  rec->footer(
      "Examples:\n"
      "  gpudoc baseline record train -- python3 train.py --epochs 1\n"
      "  gpudoc baseline record node --bench hbm,launch --quick --probe\n"
      "  gpudoc baseline record step --repeat 3 --timeout 600 -- ./run_step.sh\n"
      "Ctrl-C (SIGINT), SIGTERM or SIGHUP stops the workload's whole process group (SIGTERM, SIGKILL 5 s\n"
      "later or at a second signal) and stores what was measured, marked interrupted: it never replaces\n"
      "a golden run, and a baseline whose only recording was interrupted is refused by check.\n"
      "Exit codes: 0 recorded; 2 bad flags, a workload that failed, a bad or read-only store; 3 no GPU for\n"
      "--bench or the probe unavailable, a timeout, a locked store; 128+N stopped by signal N (130: Ctrl-C).");
  rec->callback([f, rec, &action, &ctx] {
    f->sub = "record";
    f->bench = rec->count("--bench") > 0;
    std::vector<std::string> keys;
    for (const auto& word : f->bench_keys)
      for (std::size_t at = 0; at <= word.size();) {
        const std::size_t comma = std::min(word.find(',', at), word.size());
        if (comma > at) keys.push_back(word.substr(at, comma - at));
        at = comma + 1;
      }
    f->bench_keys = std::move(keys);
    action = [f, &ctx] { return run_record(*f, ctx); };
  });

  auto* chk = cmd->add_subcommand("check", "Run NAME's baseline again and compare: exit 1 on a confirmed regression");
  chk->add_option("name", f->name, "baseline name")->required();
  chk->add_flag("--allow-different-machine", f->allow_different_machine,
                "compare even when the GPU model, driver or CUDA version differs from the baseline's");
  chk->add_flag("--no-confirm", f->no_confirm, "fail on the first run's regression without a confirmation re-run");
  add_run_options(chk, *f, false);
  add_common(chk, *f);
  chk->footer(
      "Runs what was recorded (the workload given after -- replaces the recorded one) and prints per\n"
      "figure: baseline, now, change, bound, verdict. On a regression it prints the GPU state and keeps\n"
      "the run's trace.\n"
      "Examples:\n"
      "  gpudoc baseline check train\n"
      "  gpudoc baseline check train --json > verdict.json\n"
      "Exit codes: 0 within bounds; 1 a regression (confirmed), a missing figure, or the workload\n"
      "failed; 2 unknown NAME, bad flags, a baseline whose recording was interrupted or is damaged in\n"
      "the store, a read-only store; 3 environment (no GPU for a hardware baseline, another\n"
      "GPU/driver/CUDA than the baseline's, a locked store); 128+N stopped by signal N (130: Ctrl-C):\n"
      "what was measured is stored as a check marked interrupted.");
  chk->callback([f, &action, &ctx] {
    f->sub = "check";
    action = [f, &ctx] { return run_check(*f, ctx); };
  });

  auto* lst = cmd->add_subcommand("list", "List the stored baselines");
  add_common(lst, *f);
  lst->callback([f, &action] { action = [f] { return run_list(*f); }; });

  auto* shw = cmd->add_subcommand("show", "Show a baseline's figures, bounds and machine");
  shw->add_option("name", f->name, "baseline name")->required();
  shw->add_option("--config", f->config, "config whose rules to show (default: ./gpudoc.baseline.json when present)");
  add_common(shw, *f);
  shw->callback([f, &action] { action = [f] { return run_show(*f); }; });

  auto* his = cmd->add_subcommand("history", "Every run of a baseline, with a trend line per figure");
  his->add_option("name", f->name, "baseline name")->required();
  his->add_option("--limit", f->limit, "the last N runs (default 30; 0: all)");
  his->add_option("--html", f->html,
                  "also write a self-contained page (opens offline) to FILE: a zoomable chart per figure over time "
                  "with the baseline's value, the regression bound and each check's verdict")
      ->type_name("FILE");
  his->add_option("--config", f->config,
                  "rules for the bounds drawn by --html (default: ./gpudoc.baseline.json when present)")
      ->type_name("FILE");
  add_common(his, *f);
  his->footer(
      "Examples:\n"
      "  gpudoc baseline history train\n"
      "  gpudoc baseline history train --limit 0 --html train-history.html\n"
      "  gpudoc baseline history train --json\n"
      "Exit codes: 0 shown; 2 unknown NAME, bad flags, a FILE that cannot be written; 3 this build lacks\n"
      "the plot library (--html).");
  his->callback([f, &action] { action = [f] { return run_history(*f); }; });
}

}  // namespace gpudoc::cli
