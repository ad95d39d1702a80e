#include "baseline/gate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include "baseline/regression_report.hpp"
#include "core/clock.hpp"
#include "core/log.hpp"
#include "core/process.hpp"

namespace gpudoc::baseline {

namespace {

CollectEnv collect_env(const GateEnv& env) {
  CollectEnv e;
  e.backend = env.backend;
  e.clock = env.clock;
  e.no_gpu_reason = env.no_gpu_reason;
  e.work_dir = env.dir != nullptr ? env.dir->path() : std::string();
  e.echo_to_stderr = env.echo_to_stderr;
  e.stop = env.stop;
  e.stop_grace = env.stop_grace;
  return e;
}

void tell_notes(const GateEnv& env, const std::vector<std::string>& notes) {
  if (env.on_note)
    for (const auto& n : notes) env.on_note(n);
}

core::Result<store::Database> open_at(const std::string& path, StoreUse use) {
  store::OpenOptions options;
  options.read_only = use == StoreUse::kRead;
  auto store = store::Database::open(path, options);
  if (!store) return store.error();
  if (use == StoreUse::kWrite)
    if (auto st = store->check_writable(); !st) return st.error();
  return store;
}

// Why a finished collection must not become a baseline, or nothing.
std::optional<core::Error> unrecordable(const Collected& got, double timeout_s) {
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

// A baseline the gate cannot judge against: cut short, or damaged in the store.
std::optional<core::Error> unusable_golden(const store::BaselineInfo& info, const store::StoredRun& golden,
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

// Runs of a baseline read for the noise of its per-run figures: the most recent ones.
constexpr int kHistoryRuns = 200;

// The golden run's run count and definitions, and what earlier checks measured (compare.hpp).
CompareContext history_context(CheckPlan& plan) {
  CompareContext ctx;
  ctx.baseline_runs = workload_runs(plan.golden.details);
  ctx.baseline_definitions = figure_definitions(plan.golden.details);
  // Earlier checks of the same command on a comparable machine, after the golden run: each value
  // of a figure they judged ok (or could not gate yet) is one more run of its noise.
  auto runs = plan.store.runs_of(plan.info.name, kHistoryRuns);
  if (!runs) {
    core::log_warn("the history of baseline '{}' could not be read ({}); noise from the golden run alone",
                   plan.info.name, runs.error().message());
    return ctx;
  }
  for (const auto& r : *runs) {
    if (r.role != "check" || r.id <= plan.golden.id || r.interrupted() || !r.details.is_object()) continue;
    if (r.details.contains("machine_differences") || r.details.contains("workload_failure") ||
        !r.details.contains("comparison") || !r.details["comparison"].is_array())
      continue;
    if (r.details.value("command_replaced", false)) continue;
    std::set<std::string> ok;
    for (const auto& c : r.details["comparison"])
      if (c.is_object() && c.contains("name") && c["name"].is_string() &&
          (c.value("verdict", "") == "ok" || c.value("verdict", "") == "not gated"))
        ok.insert(c["name"].get<std::string>());
    for (const auto& fig : r.figures)
      if (ok.count(fig.name) != 0 && (fig.source == "gpudoc" || fig.source == "workload"))
        ctx.earlier[fig.name].insert(ctx.earlier[fig.name].end(), fig.samples.begin(), fig.samples.end());
  }
  return ctx;
}

// The context of comparing `got` with the plan's golden run.
CompareContext context_for(const CheckPlan& plan, const Collected& got) {
  CompareContext ctx = plan.context;
  ctx.now_runs = workload_runs(got.details);
  ctx.now_definitions = figure_definitions(got.details);
  return ctx;
}

// This machine against the golden run's: differences are refused unless allowed.
core::Status compare_machines(const CheckPlan& plan, const GateEnv& env, bool allow, CheckOutcome& o) {
  o.machine = probe_machine(env.backend, env.no_gpu_reason);
  o.machine_differences = machine_differences(plan.golden.machine, o.machine);
  if (!o.machine_differences.empty() && !allow)
    return core::Error(
        core::ErrorKind::kEnvironment,
        fmt::format("baseline '{}' was recorded on a different machine, so the figures are not comparable:\n  "
                    "{}\npass --allow-different-machine to compare anyway",
                    plan.info.name, fmt::join(o.machine_differences, "\n  ")));
  return {};
}

// A possible regression is run again (only the failing parts) and must be seen twice.
core::Status confirm_regression(const CheckPlan& plan, const GateEnv& env, CheckOutcome& o) {
  const CollectFilter filter = confirmation_filter(o.cmp);
  if (env.on_progress)
    env.on_progress(
        fmt::format("possible regression in {}; running again to confirm", fmt::join(o.cmp.failing_sources(), ", ")));
  auto again = collect(plan.spec, filter, collect_env(env));
  if (!again) return again.error().with_context("confirmation run");
  tell_notes(env, again->notes);
  const Comparison second = compare(plan.golden.figures, again->figures, plan.cfg, context_for(plan, *again));
  o.cmp = confirm(o.cmp, second);
  o.confirmation = {{"sources", filter.sources}, {"figures", to_json(second)}};
  if (!again->trace_path.empty()) {
    if (!o.got.trace_path.empty() && o.got.trace_path != again->trace_path) std::remove(o.got.trace_path.c_str());
    o.got.trace_path = again->trace_path;
  }
  if (again->stopped_by) o.stopped_by = again->stopped_by;
  o.rerun = std::move(*again);
  return {};
}

// The verdict, the exit code and, for a failure, what the GPUs and the run's trace show.
void judge(const GateEnv& env, CheckOutcome& o) {
  const bool failed = o.cmp.failed() || !o.workload_failure.empty();
  o.verdict = o.stopped_by                  ? store::kVerdictInterrupted
              : !o.workload_failure.empty() ? "workload_failed"
              : failed                      ? "regression"
                                            : "ok";
  o.exit_code = o.stopped_by ? exit_code_for_signal(*o.stopped_by) : failed ? core::kExitFinding : core::kExitOk;
  if (!failed || o.stopped_by) return;
  GpuSnapshot s = gpu_snapshot(env.backend, env.no_gpu_reason);
  o.snapshot = s.json;
  o.failure_lines = s.lines;
  o.findings = regression_findings(o.got.trace_path, o.failure_lines);
  o.trace_kept = !o.got.trace_path.empty();
  if (o.trace_kept && env.dir != nullptr) env.dir->keep();  // the trace outlives gpudoc, in its private folder
}

core::Status run_collections(const CheckPlan& plan, const GateEnv& env, const CheckOptions& options, CheckOutcome& o) {
  auto got = collect(plan.spec, {}, collect_env(env));
  if (!got) return got.error();
  o.got = std::move(*got);
  tell_notes(env, o.got.notes);
  o.stopped_by = o.got.stopped_by;
  o.cmp = compare(plan.golden.figures, o.got.figures, plan.cfg, context_for(plan, o.got));
  if (o.got.workload_timed_out)
    o.workload_failure = fmt::format("the workload did not finish within --timeout {} s", plan.spec.timeout_s);
  else if (o.got.workload_exit_code && *o.got.workload_exit_code != 0)
    o.workload_failure = fmt::format("the workload exited with code {}", *o.got.workload_exit_code);
  if (o.cmp.failed() && o.workload_failure.empty() && !o.stopped_by && options.confirm)
    if (auto st = confirm_regression(plan, env, o); !st) return st.error();
  judge(env, o);
  return {};
}

core::Result<std::int64_t> store_check(CheckPlan& plan, const CheckOutcome& o) {
  store::NewRun run;
  run.baseline = plan.info.name;
  run.time_unix_ns = core::SystemClock().unix_now_ns();
  run.role = "check";
  run.machine = o.machine;
  run.verdict = o.verdict;
  run.exit_code = o.exit_code;
  run.figures = o.got.figures;
  run.details = o.got.details;
  run.details["notes"] = o.got.notes;
  run.details["comparison"] = to_json(o.cmp);
  if (plan.command_replaced) run.details["command_replaced"] = true;
  if (!o.workload_failure.empty()) run.details["workload_failure"] = o.workload_failure;
  if (!o.machine_differences.empty()) run.details["machine_differences"] = o.machine_differences;
  if (o.stopped_by) run.details["interrupted"] = interruption_json(*o.stopped_by);
  auto id = plan.store.add_run(run);
  if (!id) return id.error().with_context("storing the check");
  if (o.rerun) {
    store::NewRun c = run;
    c.role = "confirm";
    c.figures = o.rerun->figures;
    c.details = o.rerun->details;
    c.details["check_run_id"] = *id;
    if (auto cid = plan.store.add_run(c); !cid)
      core::log_warn("storing the confirmation run: {}", cid.error().message());
  }
  return id;
}

}  // namespace

int exit_code_for_signal(int sig) noexcept { return core::exit_code_for_signal(sig); }

nlohmann::json interruption_json(int sig) { return {{"signal", sig}, {"signal_name", core::signal_name(sig)}}; }

core::Result<store::Database> open_store(const std::optional<std::string>& path_flag, StoreUse use) {
  auto path = store::default_store_path(path_flag);
  if (!path) return path.error();
  return open_at(*path, use);
}

GateEnv gate_env(const telemetry::BackendOrReason& backend, const StopSignal& stop, core::PrivateDir& dir) {
  GateEnv env;
  env.backend = backend.backend;
  env.clock = backend.clock;
  env.no_gpu_reason = backend.why_not.substr(0, backend.why_not.find('\n'));
  env.stop = &stop;
  env.dir = &dir;
  return env;
}

core::Result<NamedBaseline> open_named(const std::optional<std::string>& path_flag, const std::string& name,
                                       StoreUse use) {
  auto path = store::default_store_path(path_flag);
  if (!path) return path.error();
  std::error_code ec;
  if (!std::filesystem::exists(*path, ec))
    return core::Error(core::ErrorKind::kUsage,
                       fmt::format("no baseline named '{}': the store {} does not exist yet (record one first: "
                                   "gpudoc baseline record {} -- CMD)",
                                   name, *path, name));
  auto store = open_at(*path, use);
  if (!store) return store.error();
  auto info = store->find_baseline(name);
  if (!info) return info.error();
  if (!*info)
    return core::Error(
        core::ErrorKind::kUsage,
        fmt::format("no baseline named '{}' in {} (`gpudoc baseline list` shows them)", name, store->path()));
  return NamedBaseline{std::move(*store), std::move(**info)};
}

core::Result<CollectSpec> record_spec(const RecordRequest& r) {
  if (r.quick && r.full) return core::Error(core::ErrorKind::kUsage, "--quick and --full exclude each other");
  if (!r.bench && !r.probe && r.command.empty())
    return core::Error(
        core::ErrorKind::kUsage,
        "nothing to record: give --bench, --probe and/or a workload after -- (gpudoc baseline record NAME -- "
        "python3 train.py)");
  if (r.repeat < 0 || r.timeout_s < 0)
    return core::Error(core::ErrorKind::kUsage, "--repeat and --timeout must be positive");
  CollectSpec spec;
  spec.bench = r.bench;
  for (const auto& word : r.bench_keys)
    for (std::size_t at = 0; at <= word.size();) {
      const std::size_t comma = std::min(word.find(',', at), word.size());
      if (comma > at) spec.bench_keys.push_back(word.substr(at, comma - at));
      at = comma + 1;
    }
  spec.bench_mode = r.full ? "full" : (r.quick ? "quick" : "default");
  spec.device = r.device;
  spec.probe = r.probe;
  spec.command = r.command;
  spec.repeat = r.repeat > 0 ? r.repeat : (r.command.empty() ? 1 : kGoldenRuns);
  spec.check_repeat = r.repeat > 0 ? r.repeat : 1;
  spec.timeout_s = r.timeout_s;
  return spec;
}

core::Result<Recorded> record(store::Database& store, const std::string& name, const CollectSpec& spec,
                              const GateEnv& env) {
  Recorded r;
  const MachineContext machine = probe_machine(env.backend, env.no_gpu_reason);
  auto got = collect(spec, {}, collect_env(env));
  if (!got) return got.error();
  r.got = std::move(*got);
  tell_notes(env, r.got.notes);
  r.stopped_by = r.got.stopped_by;
  if (r.stopped_by) {
    r.exit_code = exit_code_for_signal(*r.stopped_by);
    if (r.got.figures.empty()) return r;  // stopped before anything was measured: nothing to store
  } else if (auto why = unrecordable(r.got, spec.timeout_s)) {
    return *why;
  }
  store::NewBaseline& nb = r.baseline;
  nb.name = name;
  nb.kinds = kinds_of(spec);
  nb.spec = to_json(spec);
  nb.run.time_unix_ns = core::SystemClock().unix_now_ns();
  nb.run.machine = machine;
  nb.run.figures = r.got.figures;
  nb.run.details = r.got.details;
  nb.run.details["notes"] = r.got.notes;
  if (r.stopped_by) {
    nb.run.verdict = store::kVerdictInterrupted;
    nb.run.exit_code = r.exit_code;
    nb.run.details["interrupted"] = interruption_json(*r.stopped_by);
  }
  auto existed = store.find_baseline(name);
  if (!existed) return existed.error();
  r.existed = existed->has_value();
  auto id = store.record_baseline(nb);
  if (!id) return id.error();
  r.run_id = *id;
  return r;
}

core::Result<CheckPlan> plan_check(const CheckRequest& request) {
  if (request.repeat < 0 || request.timeout_s < 0)
    return core::Error(core::ErrorKind::kUsage, "--repeat and --timeout must be positive");
  auto cfg = load_config(request.config_path);
  if (!cfg) return cfg.error();
  auto named = open_named(request.store_path, request.name, StoreUse::kWrite);
  if (!named) return named.error();
  auto& [store, info] = *named;
  auto golden = store.load_run(info.golden_run_id);
  if (!golden) return golden.error();
  if (auto why = unusable_golden(info, *golden, store.path())) return *why;
  auto spec = spec_from_json(info.spec);
  if (!spec) return spec.error().with_context(fmt::format("baseline '{}' in {}", request.name, store.path()));
  CheckPlan plan{std::move(*cfg), std::move(store), info, std::move(*golden), std::move(*spec), {}};
  plan.command_replaced = !request.command.empty() && request.command != plan.spec.command;
  if (!request.command.empty()) plan.spec.command = request.command;
  plan.context = history_context(plan);
  if (request.repeat > 0)
    plan.spec.repeat = request.repeat;
  else if (plan.spec.check_repeat > 0)
    plan.spec.repeat = plan.spec.check_repeat;
  if (request.timeout_s > 0) plan.spec.timeout_s = request.timeout_s;
  return plan;
}

CollectFilter confirmation_filter(const Comparison& c) {
  CollectFilter filter;
  for (const auto& s : c.failing_sources()) filter.sources.insert(s);
  if (filter.sources.count("bench") != 0 && filter.sources.size() == 1)
    for (const auto& fig : c.figures)
      if (fig.source == "bench" && is_failure(fig.verdict)) filter.bench_keys.push_back(fig.name);
  return filter;
}

core::Result<CheckOutcome> check(CheckPlan& plan, const GateEnv& env, const CheckOptions& options) {
  CheckOutcome o;
  if (auto st = compare_machines(plan, env, options.allow_different_machine, o); !st) return st.error();
  if (auto st = run_collections(plan, env, options, o); !st) return st.error();
  if (o.stopped_by && o.got.figures.empty()) return o;  // stopped before anything was measured
  auto id = store_check(plan, o);
  if (!id) return id.error();
  o.run_id = *id;
  return o;
}

core::Result<BaselineList> list_store(const std::optional<std::string>& path_flag) {
  BaselineList out;
  auto path = store::default_store_path(path_flag);
  if (!path) return path.error();
  out.store_path = *path;
  std::error_code ec;
  if (!std::filesystem::exists(*path, ec)) return out;
  out.store_exists = true;
  auto store = open_at(*path, StoreUse::kRead);
  if (!store) return store.error();
  out.store_path = store->path();
  auto list = store->list_baselines();
  if (!list) return list.error();
  for (auto& b : *list) {
    BaselineSummary s{std::move(b), std::nullopt};
    // A history that cannot be read leaves the last check unknown; the list still shows the baseline.
    if (auto runs = store->runs_of(s.info.name, 0))
      for (auto it = runs->rbegin(); it != runs->rend(); ++it)
        if (it->role == "check") {
          s.last_check = LastCheck{it->id, it->time_unix_ns, it->verdict};
          break;
        }
    out.baselines.push_back(std::move(s));
  }
  return out;
}

core::Result<BaselineRecord> read_baseline(const std::optional<std::string>& path_flag, const std::string& name,
                                           const std::optional<std::string>& config_path, std::optional<int> runs) {
  auto config = load_config(config_path);
  if (!config) return config.error();
  auto named = open_named(path_flag, name, StoreUse::kRead);
  if (!named) return named.error();
  BaselineRecord out{named->store.path(), named->info, {}, {}, std::move(*config)};
  if (runs) {
    auto got = named->store.runs_of(name, *runs);
    if (!got) return got.error();
    out.runs = std::move(*got);
  }
  for (const auto& r : out.runs)
    if (r.id == out.info.golden_run_id) out.golden = r;
  if (out.golden.id != out.info.golden_run_id) {
    auto golden = named->store.load_run(out.info.golden_run_id);
    if (!golden) return golden.error();
    out.golden = std::move(*golden);
  }
  return out;
}

}  // namespace gpudoc::baseline
