// gpudoc baseline: golden baselines and the CI regression gate — record what this machine and a
// workload do, check later runs against it (exit 1 on a confirmed regression), and show history.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include "baseline/compare.hpp"
#include "baseline/config.hpp"
#include "baseline/store.hpp"
#include "cli/baseline_collect.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/clock.hpp"
#include "core/file.hpp"
#include "core/log.hpp"
#include "core/text.hpp"
#include "diagnose/diagnose.hpp"
#include "findings/finding.hpp"
#include "telemetry/input.hpp"
#include "view/baseline_html.hpp"

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
  int repeat = 0;            // 0: the stored value (check) or 1 (record)
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

void print(const std::string& s) { std::fputs(s.c_str(), stdout); }

std::string change_text(const baseline::FigureComparison& f) {
  if (!f.change_percent) return "—";
  if (!std::isfinite(*f.change_percent)) return *f.change_percent > 0 ? "+∞" : "−∞";
  return fmt::format("{:+.1f} %", *f.change_percent);
}

std::string bound_text(const baseline::FigureComparison& f) {
  switch (f.rule.direction) {
    case baseline::Direction::kLowerIsBetter: return fmt::format("+{:.1f} %", f.bound_percent);
    case baseline::Direction::kHigherIsBetter: return fmt::format("−{:.1f} %", f.bound_percent);
    case baseline::Direction::kUnknown: return "—";
  }
  return "—";
}

std::string verdict_text(const baseline::FigureComparison& f) {
  std::string v = baseline::to_string(f.verdict);
  if (baseline::is_failure(f.verdict)) v = fmt::format("{}", f.verdict == baseline::Verdict::kRegression ? "REGRESSION" : "MISSING");
  return v;
}

std::string render_comparison(const baseline::Comparison& c) {
  std::vector<std::vector<std::string>> rows{{"figure", "baseline", "now", "change", "bound", "verdict", "why"}};
  for (const auto& f : c.figures)
    rows.push_back({f.name, core::value_with_unit(f.baseline_median, f.unit), core::value_with_unit(f.now_median, f.unit), change_text(f), bound_text(f),
                    verdict_text(f), f.note});
  return core::render_table(rows);
}

core::Result<baseline::Store> open_store(const BaselineFlags& f, bool must_exist) {
  auto path = baseline::default_store_path(f.store);
  if (!path) return path.error();
  std::error_code ec;
  if (must_exist && !std::filesystem::exists(*path, ec))
    return core::Error(core::ErrorKind::kUsage,
                       fmt::format("no baseline named '{}': the store {} does not exist yet (record one first: "
                                   "gpudoc baseline record {} -- CMD)",
                                   f.name, *path, f.name));
  return baseline::Store::open(*path);
}

std::string trace_dir() {
  const char* t = std::getenv("TMPDIR");
  return t != nullptr && *t != '\0' ? t : "/tmp";
}

nlohmann::json figures_json(const std::vector<baseline::Figure>& figs, const baseline::Config& cfg) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& fig : figs) {
    const auto rule = cfg.rule_for(fig.name, fig.unit, fig.direction);
    arr.push_back({{"name", fig.name},
                   {"unit", fig.unit},
                   {"source", fig.source},
                   {"direction", baseline::to_string(rule.direction)},
                   {"threshold_percent", rule.threshold_percent},
                   {"median", baseline::median(fig.samples)},
                   {"noise_percent", baseline::noise_percent(fig.samples)},
                   {"samples", fig.samples}});
  }
  return arr;
}

std::string render_figures(const std::vector<baseline::Figure>& figs, const baseline::Config& cfg) {
  std::vector<std::vector<std::string>> rows{{"figure", "median", "samples", "noise", "better", "bound", "rule"}};
  for (const auto& fig : figs) {
    const auto rule = cfg.rule_for(fig.name, fig.unit, fig.direction);
    const double noise = baseline::noise_percent(fig.samples);
    const double bound = std::max(rule.threshold_percent, cfg.noise_k * noise);
    rows.push_back({fig.name, core::value_with_unit(baseline::median(fig.samples), fig.unit), std::to_string(fig.samples.size()),
                    fmt::format("{:.1f} %", noise), baseline::to_string(rule.direction),
                    rule.direction == baseline::Direction::kUnknown ? "not gated" : fmt::format("{:.1f} %", bound), rule.origin});
  }
  return core::render_table(rows);
}

void print_notes(const std::vector<std::string>& notes) {
  for (const auto& n : notes) std::fprintf(stderr, "gpudoc: note: %s\n", n.c_str());
}

// ---- record ----------------------------------------------------------------------------------

int run_record(const BaselineFlags& f) {
  if (f.quick && f.full) return report_error(core::Error(core::ErrorKind::kUsage, "--quick and --full exclude each other"), f.json);
  if (!f.bench && !f.probe && f.command.empty())
    return report_error(core::Error(core::ErrorKind::kUsage,
                                    "nothing to record: give --bench, --probe and/or a workload after -- "
                                    "(gpudoc baseline record NAME -- python3 train.py)"),
                        f.json);
  if (f.repeat < 0 || f.timeout_s < 0) return report_error(core::Error(core::ErrorKind::kUsage, "--repeat and --timeout must be positive"), f.json);
  auto cfg = baseline::load_config(f.config);
  if (!cfg) return report_error(cfg.error(), f.json);
  CollectSpec spec;
  spec.bench = f.bench;
  spec.bench_keys = f.bench_keys;
  spec.bench_mode = f.full ? "full" : (f.quick ? "quick" : "default");
  spec.device = f.device;
  spec.probe = f.probe;
  spec.command = f.command;
  spec.repeat = f.repeat > 0 ? f.repeat : 1;
  spec.timeout_s = f.timeout_s;
  // Open the store first: a bad or locked store fails before minutes of measuring.
  auto store = open_store(f, false);
  if (!store) return report_error(store.error(), f.json);

  const baseline::MachineContext machine = probe_machine();
  auto got = collect(spec, {}, f.json, trace_dir());
  if (!got) return report_error(got.error(), f.json);
  if (!got->trace_path.empty()) std::remove(got->trace_path.c_str());
  print_notes(got->notes);
  if (got->workload_timed_out)
    return report_error(core::Error(core::ErrorKind::kTimeout,
                                    fmt::format("the workload did not finish within --timeout {} s and was stopped; nothing recorded",
                                                f.timeout_s)),
                        f.json);
  if (got->workload_exit_code && *got->workload_exit_code != 0)
    return report_error(core::Error(core::ErrorKind::kBadInput,
                                    fmt::format("the workload exited with code {}: a baseline is recorded only from a successful "
                                                "run; nothing recorded",
                                                *got->workload_exit_code)),
                        f.json);
  if (got->figures.empty())
    return report_error(core::Error(core::ErrorKind::kBadInput, "the run produced no figures; nothing recorded"), f.json);

  baseline::NewBaseline nb;
  nb.name = f.name;
  nb.kinds = kinds_of(spec);
  nb.spec = to_json(spec);
  nb.run.time_unix_ns = core::SystemClock().unix_now_ns();
  nb.run.machine = machine;
  nb.run.figures = got->figures;
  nb.run.details = got->details;
  nb.run.details["notes"] = got->notes;
  auto existed = store->find_baseline(f.name);
  if (!existed) return report_error(existed.error(), f.json);
  auto id = store->record_baseline(nb);
  if (!id) return report_error(id.error(), f.json);

  if (f.json) {
    print_json({{"baseline", f.name},
                {"store", store->path()},
                {"run_id", *id},
                {"replaced", existed->has_value()},
                {"kinds", nb.kinds},
                {"machine", baseline::to_json(machine)},
                {"figures", figures_json(got->figures, *cfg)},
                {"notes", got->notes},
                {"details", got->details}});
  } else {
    print(fmt::format("{} baseline '{}' ({}) in {}, run {}\n", existed->has_value() ? "re-recorded" : "recorded", f.name, nb.kinds,
                      store->path(), *id));
    print(render_figures(got->figures, *cfg));
  }
  return core::kExitOk;
}

// ---- check -----------------------------------------------------------------------------------

CollectFilter filter_for(const baseline::Comparison& c) {
  CollectFilter filter;
  for (const auto& s : c.failing_sources()) filter.sources.insert(s);
  if (filter.sources.count("bench") != 0 && filter.sources.size() == 1)
    for (const auto& fig : c.figures)
      if (fig.source == "bench" && baseline::is_failure(fig.verdict)) filter.bench_keys.push_back(fig.name);
  return filter;
}

// The diagnosis of the check run's trace (`gpudoc diagnose` over it): findings at or above
// warning go into the regression report. Without a trace (no GPU) there is nothing to diagnose.
nlohmann::json regression_findings(const std::string& trace_path, std::vector<std::string>& lines) {
  nlohmann::json out = nlohmann::json::array();
  if (trace_path.empty()) return out;
  lines.push_back(fmt::format("trace of the run kept at {} (gpudoc diagnose {})", trace_path, trace_path));
  auto trace = telemetry::read_telemetry_file(trace_path);
  if (!trace) {
    lines.push_back("diagnosis: " + trace.error().message());
    return out;
  }
  const diagnose::Diagnosis d = diagnose::diagnose(*trace, diagnose::Options{});
  for (const auto& f : d.findings) {
    if (f.severity < findings::Severity::kWarning) continue;
    lines.push_back(fmt::format("finding [{}] {}: {}", findings::to_string(f.severity), f.id, f.message));
    out.push_back(findings::to_json(f));
  }
  if (out.empty()) lines.push_back("diagnosis of the run's trace: no finding at or above warning");
  return out;
}

int run_check(const BaselineFlags& f) {
  if (f.repeat < 0 || f.timeout_s < 0) return report_error(core::Error(core::ErrorKind::kUsage, "--repeat and --timeout must be positive"), f.json);
  auto cfg = baseline::load_config(f.config);
  if (!cfg) return report_error(cfg.error(), f.json);
  auto store = open_store(f, true);
  if (!store) return report_error(store.error(), f.json);
  auto info = store->find_baseline(f.name);
  if (!info) return report_error(info.error(), f.json);
  if (!*info)
    return report_error(core::Error(core::ErrorKind::kUsage, fmt::format("no baseline named '{}' in {} (`gpudoc baseline list` shows "
                                                                         "them)",
                                                                         f.name, store->path())),
                        f.json);
  auto golden = store->load_run((*info)->golden_run_id);
  if (!golden) return report_error(golden.error(), f.json);

  CollectSpec spec = spec_from_json((*info)->spec);
  if (!f.command.empty()) spec.command = f.command;
  if (f.repeat > 0) spec.repeat = f.repeat;
  if (f.timeout_s > 0) spec.timeout_s = f.timeout_s;

  const baseline::MachineContext machine = probe_machine();
  const auto diffs = baseline::machine_differences(golden->machine, machine);
  if (!diffs.empty() && !f.allow_different_machine)
    return report_error(core::Error(core::ErrorKind::kEnvironment,
                                    fmt::format("baseline '{}' was recorded on a different machine, so the figures are not "
                                                "comparable:\n  {}\npass --allow-different-machine to compare anyway",
                                                f.name, fmt::join(diffs, "\n  "))),
                        f.json);

  auto got = collect(spec, {}, f.json, trace_dir());
  if (!got) return report_error(got.error(), f.json);
  print_notes(got->notes);
  baseline::Comparison cmp = baseline::compare(golden->figures, got->figures, *cfg);
  const baseline::Comparison first = cmp;
  const bool workload_failed = got->workload_timed_out || (got->workload_exit_code && *got->workload_exit_code != 0);
  std::string workload_failure;
  if (got->workload_timed_out) workload_failure = fmt::format("the workload did not finish within --timeout {} s", spec.timeout_s);
  else if (workload_failed) workload_failure = fmt::format("the workload exited with code {}", *got->workload_exit_code);

  std::optional<Collected> rerun;
  nlohmann::json confirmation = nullptr;
  if (cmp.failed() && !workload_failed && !f.no_confirm) {
    const CollectFilter filter = filter_for(cmp);
    std::fprintf(stderr, "gpudoc: baseline: possible regression in %s; running again to confirm\n",
                 fmt::format("{}", fmt::join(cmp.failing_sources(), ", ")).c_str());
    auto again = collect(spec, filter, f.json, trace_dir());
    if (!again) return report_error(again.error().with_context("confirmation run"), f.json);
    print_notes(again->notes);
    const baseline::Comparison second = baseline::compare(golden->figures, again->figures, *cfg);
    cmp = baseline::confirm(first, second);
    confirmation = {{"sources", filter.sources}, {"figures", baseline::to_json(second)}};
    if (!again->trace_path.empty()) {
      if (!got->trace_path.empty() && got->trace_path != again->trace_path) std::remove(got->trace_path.c_str());
      got->trace_path = again->trace_path;
    }
    rerun = std::move(*again);
  }
  const bool failed = cmp.failed() || workload_failed;
  const std::string verdict = workload_failed ? "workload_failed" : (failed ? "regression" : "ok");
  const int code = failed ? core::kExitFinding : core::kExitOk;

  // The report of a failure carries the GPU's state now and what the run's trace shows.
  nlohmann::json snapshot = nullptr, findings = nlohmann::json::array();
  std::vector<std::string> failure_lines;
  if (failed) {
    GpuSnapshot s = gpu_snapshot();
    snapshot = s.json;
    failure_lines = s.lines;
    findings = regression_findings(got->trace_path, failure_lines);
  } else if (!got->trace_path.empty()) {
    std::remove(got->trace_path.c_str());
    got->trace_path.clear();
  }

  baseline::NewRun run;
  run.baseline = f.name;
  run.time_unix_ns = core::SystemClock().unix_now_ns();
  run.role = "check";
  run.machine = machine;
  run.verdict = verdict;
  run.exit_code = code;
  run.figures = got->figures;
  run.details = got->details;
  run.details["notes"] = got->notes;
  run.details["comparison"] = baseline::to_json(cmp);
  if (!workload_failure.empty()) run.details["workload_failure"] = workload_failure;
  if (!diffs.empty()) run.details["machine_differences"] = diffs;
  auto id = store->add_run(run);
  if (!id) return report_error(id.error().with_context("storing the check"), f.json);
  if (rerun) {
    baseline::NewRun c = run;
    c.role = "confirm";
    c.figures = rerun->figures;
    c.details = rerun->details;
    c.details["check_run_id"] = *id;
    if (auto cid = store->add_run(c); !cid) core::log_warn("storing the confirmation run: {}", cid.error().message());
  }

  if (f.json) {
    print_json({{"baseline", f.name},
                {"store", store->path()},
                {"run_id", *id},
                {"verdict", verdict},
                {"exit_code", code},
                {"workload_failure", workload_failure.empty() ? nlohmann::json(nullptr) : nlohmann::json(workload_failure)},
                {"machine", baseline::to_json(machine)},
                {"baseline_machine", baseline::to_json(golden->machine)},
                {"machine_differences", diffs},
                {"figures", baseline::to_json(cmp)},
                {"confirmation", confirmation},
                {"notes", got->notes},
                {"gpu_snapshot", snapshot},
                {"findings", findings},
                {"trace", got->trace_path.empty() ? nlohmann::json(nullptr) : nlohmann::json(got->trace_path)}});
    return code;
  }
  print(fmt::format("baseline '{}' (recorded {}), check run {}\n", f.name, core::utc_seconds_text(golden->time_unix_ns), *id));
  if (!diffs.empty()) print(fmt::format("compared across machines (--allow-different-machine): {}\n", fmt::join(diffs, "; ")));
  print(render_comparison(cmp));
  if (!workload_failure.empty()) print(fmt::format("FAILED: {}\n", workload_failure));
  if (failed) {
    std::size_t n = 0;
    for (const auto& fig : cmp.figures) n += baseline::is_failure(fig.verdict) ? 1 : 0;
    if (n > 0) print(fmt::format("REGRESSION: {} figure{} out of bounds{}\n", n, n == 1 ? "" : "s", rerun ? " (confirmed by a re-run)" : ""));
    print("GPU state now, and what the run's trace shows:\n");
    for (const auto& l : failure_lines) print("  " + l + "\n");
  } else {
    print("ok: every figure within its bound\n");
  }
  return code;
}

// ---- list / show / history -------------------------------------------------------------------

int run_list(const BaselineFlags& f) {
  auto path = baseline::default_store_path(f.store);
  if (!path) return report_error(path.error(), f.json);
  std::error_code ec;
  if (!std::filesystem::exists(*path, ec)) {
    if (f.json) print_json({{"store", *path}, {"baselines", nlohmann::json::array()}});
    else print(fmt::format("no baselines yet ({} does not exist)\n", *path));
    return core::kExitOk;
  }
  auto store = baseline::Store::open(*path);
  if (!store) return report_error(store.error(), f.json);
  auto list = store->list_baselines();
  if (!list) return report_error(list.error(), f.json);
  nlohmann::json arr = nlohmann::json::array();
  std::vector<std::vector<std::string>> rows{{"name", "kinds", "recorded", "GPUs", "runs", "last check"}};
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
    const std::string gpus = b.machine.gpus.empty() ? "none" : fmt::format("{}x {}", b.machine.gpus.size(), b.machine.gpus[0]);
    rows.push_back({b.name, b.kinds, core::utc_seconds_text(b.updated_unix_ns), gpus, std::to_string(b.run_count), last});
    arr.push_back({{"name", b.name},
                   {"kinds", b.kinds},
                   {"created", core::utc_seconds_text(b.created_unix_ns)},
                   {"recorded", core::utc_seconds_text(b.updated_unix_ns)},
                   {"machine", baseline::to_json(b.machine)},
                   {"runs", b.run_count},
                   {"last_check", last_j}});
  }
  if (f.json) print_json({{"store", store->path()}, {"baselines", arr}});
  else if (list->empty()) print(fmt::format("no baselines yet in {}\n", store->path()));
  else print(core::render_table(rows));
  return core::kExitOk;
}

core::Result<std::pair<baseline::Store, baseline::BaselineInfo>> open_named(const BaselineFlags& f) {
  auto store = open_store(f, true);
  if (!store) return store.error();
  auto info = store->find_baseline(f.name);
  if (!info) return info.error();
  if (!*info)
    return core::Error(core::ErrorKind::kUsage,
                       fmt::format("no baseline named '{}' in {} (`gpudoc baseline list` shows them)", f.name, store->path()));
  return std::make_pair(std::move(*store), **info);
}

int run_show(const BaselineFlags& f) {
  auto cfg = baseline::load_config(f.config);
  if (!cfg) return report_error(cfg.error(), f.json);
  auto named = open_named(f);
  if (!named) return report_error(named.error(), f.json);
  auto& [store, info] = *named;
  auto golden = store.load_run(info.golden_run_id);
  if (!golden) return report_error(golden.error(), f.json);
  if (f.json) {
    print_json({{"name", info.name},
                {"kinds", info.kinds},
                {"created", core::utc_seconds_text(info.created_unix_ns)},
                {"recorded", core::utc_seconds_text(info.updated_unix_ns)},
                {"spec", info.spec},
                {"machine", baseline::to_json(golden->machine)},
                {"run_id", golden->id},
                {"gpudoc_version", golden->gpudoc_version},
                {"figures", figures_json(golden->figures, *cfg)},
                {"details", golden->details}});
    return core::kExitOk;
  }
  const CollectSpec spec = spec_from_json(info.spec);
  std::string what;
  if (spec.bench) what += fmt::format("  hardware: gpudoc bench {} ({})\n", spec.bench_keys.empty() ? "(all)" : fmt::format("{}", fmt::join(spec.bench_keys, ",")), spec.bench_mode);
  if (spec.probe) what += "  probe: PyTorch matmul\n";
  if (!spec.command.empty()) what += fmt::format("  workload: {} (x{}{})\n", fmt::join(spec.command, " "), spec.repeat,
                                                 spec.timeout_s > 0 ? fmt::format(", timeout {} s", spec.timeout_s) : "");
  const auto& m = golden->machine;
  print(fmt::format("baseline '{}' ({}), recorded {} by gpudoc {}\n{}machine: {} | GPUs: {} | driver {} | CUDA {}\n", info.name,
                    info.kinds, core::utc_seconds_text(info.updated_unix_ns), golden->gpudoc_version, what, m.host,
                    m.gpus.empty() ? std::string("none") : fmt::format("{}", fmt::join(m.gpus, ", ")),
                    m.driver_version.empty() ? "—" : m.driver_version, m.cuda_version.empty() ? "—" : m.cuda_version));
  print(render_figures(golden->figures, *cfg));
  return core::kExitOk;
}

// Where a regression of `fig` starts, in its unit, under `rule` (as baseline::compare judges:
// worse than the median by more than the bound %, and by more than the rule's min_change).
std::optional<double> regression_bound(double median, double bound_percent, const baseline::Rule& rule) {
  if (rule.direction == baseline::Direction::kUnknown || !std::isfinite(median)) return std::nullopt;
  const double by = std::max(std::fabs(median) * bound_percent / 100.0, rule.min_change);
  return rule.direction == baseline::Direction::kLowerIsBetter ? median + by : median - by;
}

// The history page's data: per figure, the median of every run, its verdict in each check (from
// the comparison the check stored), and the golden run's value and bound under the current rules.
view::BaselineHistory history_page(const baseline::BaselineInfo& info, const std::vector<baseline::StoredRun>& runs,
                                   const std::optional<baseline::StoredRun>& golden, const baseline::Config& cfg,
                                   const std::string& store_path) {
  view::BaselineHistory h;
  h.name = info.name;
  h.kinds = info.kinds;
  h.store = store_path;
  h.config = cfg.source;
  std::map<std::string, std::size_t> index;
  auto figure = [&](const baseline::Figure& fig) -> view::BaselineHistoryFigure& {
    auto [it, added] = index.emplace(fig.name, h.figures.size());
    if (added) {
      view::BaselineHistoryFigure hf;
      hf.name = fig.name;
      hf.unit = fig.unit;
      hf.values.resize(runs.size());
      hf.verdicts.resize(runs.size());
      h.figures.push_back(std::move(hf));
    }
    return h.figures[it->second];
  };
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    h.runs.push_back({r.id, r.time_unix_ns, r.role, r.verdict, r.id == info.golden_run_id});
    for (const auto& fig : r.figures)
      if (!fig.samples.empty()) figure(fig).values[i] = baseline::median(fig.samples);
    if (r.role != "check" || !r.details.is_object() || !r.details.contains("comparison")) continue;
    for (const auto& c : r.details["comparison"]) {
      if (!c.is_object() || !c.contains("name") || !c["name"].is_string()) continue;
      auto it = index.find(c["name"].get<std::string>());
      if (it != index.end()) h.figures[it->second].verdicts[i] = c.value("verdict", "");
    }
  }
  // The golden run may be older than the shown runs (--limit): its figures still set the lines.
  if (golden) {
    for (const auto& fig : golden->figures) {
      if (fig.samples.empty()) continue;
      auto it = index.find(fig.name);
      if (it == index.end()) continue;
      auto& hf = h.figures[it->second];
      const baseline::Rule rule = cfg.rule_for(fig.name, fig.unit, fig.direction);
      const double med = baseline::median(fig.samples);
      hf.direction = baseline::to_string(rule.direction);
      hf.rule = rule.origin;
      hf.baseline_value = med;
      hf.bound_percent = std::max(rule.threshold_percent, cfg.noise_k * baseline::noise_percent(fig.samples));
      hf.bound_value = regression_bound(med, hf.bound_percent, rule);
    }
  }
  for (auto& hf : h.figures)
    if (hf.direction.empty()) {   // not in the golden run: judged by name alone
      const baseline::Rule rule = cfg.rule_for(hf.name, hf.unit, std::nullopt);
      hf.direction = baseline::to_string(rule.direction);
      hf.rule = rule.origin;
    }
  return h;
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
  auto page = view::render_baseline_history_html(history_page(info, runs, golden, *cfg, store.path()));
  if (!page) return page.error();
  return core::write_file(*f.html, *page);
}

int run_history(const BaselineFlags& f) {
  auto named = open_named(f);
  if (!named) return report_error(named.error(), f.json);
  auto& [store, info] = *named;
  auto runs = store.runs_of(f.name, f.limit);
  if (!runs) return report_error(runs.error(), f.json);
  if (f.html) {
    if (auto st = write_history_html(f, info, *runs, store); !st) return report_error(st.error(), f.json);
  }
  // Figure names in first-seen order, medians per run (absent where a run lacks the figure).
  std::vector<std::string> names;
  std::map<std::string, std::string> units;
  for (const auto& r : *runs)
    for (const auto& fig : r.figures)
      if (std::find(names.begin(), names.end(), fig.name) == names.end()) {
        names.push_back(fig.name);
        units[fig.name] = fig.unit;
      }
  if (f.json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& r : *runs) {
      nlohmann::json medians = nlohmann::json::object();
      for (const auto& fig : r.figures) medians[fig.name] = baseline::median(fig.samples);
      arr.push_back({{"run_id", r.id}, {"time", core::utc_seconds_text(r.time_unix_ns)}, {"role", r.role}, {"verdict", r.verdict},
                     {"golden", r.id == info.golden_run_id}, {"medians", medians}});
    }
    nlohmann::json j = {{"baseline", info.name}, {"runs", arr}};
    if (f.html) j["html"] = *f.html;
    print_json(j);
    return core::kExitOk;
  }
  std::vector<std::vector<std::string>> rows{{"run", "time", "role", "verdict"}};
  for (const auto& r : *runs)
    rows.push_back({std::to_string(r.id) + (r.id == info.golden_run_id ? "*" : ""), core::utc_seconds_text(r.time_unix_ns), r.role,
                    r.verdict.empty() ? "—" : r.verdict});
  print(fmt::format("baseline '{}': {} run{} (* = the golden run), oldest first\n", info.name, runs->size(), runs->size() == 1 ? "" : "s"));
  print(core::render_table(rows));
  std::vector<std::vector<std::string>> trend{{"figure", "trend", "min", "max", "last"}};
  for (const auto& name : names) {
    std::vector<std::optional<double>> v;
    double lo = HUGE_VAL, hi = -HUGE_VAL;
    for (const auto& r : *runs) {
      std::optional<double> x;
      for (const auto& fig : r.figures)
        if (fig.name == name && !fig.samples.empty()) x = baseline::median(fig.samples);
      if (x) {
        lo = std::min(lo, *x);
        hi = std::max(hi, *x);
      }
      v.push_back(x);
    }
    std::optional<double> last;
    for (auto it = v.rbegin(); it != v.rend() && !last; ++it) last = *it;
    // A flat series draws mid-height, not at the floor.
    const double pad = hi > lo ? 0 : std::max(std::fabs(hi) * 0.01, 1e-12);
    trend.push_back({name, core::sparkline(v, lo - pad, hi + pad), core::value_with_unit(lo, units[name]), core::value_with_unit(hi, units[name]),
                     core::value_with_unit(last, units[name])});
  }
  print(core::render_table(trend));
  if (f.html) print(fmt::format("HTML page: {}\n", *f.html));
  return core::kExitOk;
}

void add_common(CLI::App* cmd, BaselineFlags& f) {
  cmd->add_option("--store", f.store, "the store file (default: $GPUDOC_STORE, else $XDG_DATA_HOME/gpudoc/gpudoc.db, else ~/.local/share/gpudoc/gpudoc.db)");
  cmd->add_flag("--json", f.json, "print the result as JSON on stdout (a workload's output then goes to stderr)");
}

void add_run_options(CLI::App* cmd, BaselineFlags& f, bool record) {
  cmd->add_option("--config", f.config, "thresholds and directions per figure (default: ./gpudoc.baseline.json when present)");
  cmd->add_option("--repeat", f.repeat, record ? "run the probe and the workload N times (samples add up; default 1)"
                                               : "runs of the probe and the workload (default: as recorded)");
  cmd->add_option("--timeout", f.timeout_s, "stop a workload run that takes longer than this many seconds (SIGTERM, then SIGKILL)");
  cmd->add_option("command", f.command, "the workload to run (after --); it reports figures with ::gpudoc lines");
}

}  // namespace

void register_baseline(CLI::App& app, Action& action) {
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
  rec->add_option("--bench", f->bench_keys, "hardware: run gpudoc bench (all benchmarks, or these keys/groups: hbm,launch)")
      ->expected(0, 1);  // one word, split on ',' below: CLI11 counts a delimiter's pieces as values
  rec->add_flag("--quick", f->quick, "benchmarks with fewer repetitions");
  rec->add_flag("--full", f->full, "benchmarks with more repetitions");
  rec->add_flag("--probe", f->probe, "framework: the built-in PyTorch matmul probe (needs python3 with torch and a GPU)");
  rec->add_option("--device", f->device, "CUDA device for --bench and --probe");
  add_run_options(rec, *f, true);
  add_common(rec, *f);
  rec->footer(
      "Examples:\n"
      "  gpudoc baseline record train -- python3 train.py --epochs 1\n"
      "  gpudoc baseline record node --bench hbm,launch --quick --probe\n"
      "  gpudoc baseline record step --repeat 3 --timeout 600 -- ./run_step.sh\n"
      "Exit codes: 0 recorded; 2 bad flags, a workload that failed, a bad store; 3 no GPU for --bench or\n"
      "the probe unavailable, a timeout, a locked store.");
  rec->callback([f, rec, &action] {
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
    action = [f] { return run_record(*f); };
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
      "failed; 2 unknown NAME or bad flags; 3 environment (no GPU for a hardware baseline, another\n"
      "GPU/driver/CUDA than the baseline's, a locked store).");
  chk->callback([f, &action] {
    f->sub = "check";
    action = [f] { return run_check(*f); };
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
  his->add_option("--config", f->config, "rules for the bounds drawn by --html (default: ./gpudoc.baseline.json when present)")
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
