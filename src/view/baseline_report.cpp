#include "view/baseline_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "core/process.hpp"
#include "core/text.hpp"
#include "core/utf8.hpp"
#include "view/cost_view.hpp"

namespace gpudoc::view {

namespace {

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
  if (!baseline::is_failure(f.verdict)) return baseline::to_string(f.verdict);
  return f.verdict == baseline::Verdict::kRegression ? "REGRESSION" : "MISSING";
}

// Where a regression of a figure starts, in its unit, under `rule` (as baseline::compare judges:
// worse than the median by more than the bound %, and by more than the rule's min_change).
std::optional<double> regression_bound(double median, double bound_percent, const baseline::Rule& rule) {
  if (rule.direction == baseline::Direction::kUnknown || !std::isfinite(median)) return std::nullopt;
  const double by = std::max(std::fabs(median) * bound_percent / 100.0, rule.min_change);
  return rule.direction == baseline::Direction::kLowerIsBetter ? median + by : median - by;
}

// Figure names in first-seen order over the runs, with their unit.
struct FigureNames {
  std::vector<std::string> names;
  std::unordered_map<std::string, std::size_t> index;
  std::vector<std::string> units;
};

FigureNames figure_names(const std::vector<store::StoredRun>& runs, bool with_samples_only) {
  FigureNames n;
  for (const auto& r : runs)
    for (const auto& fig : r.figures)
      if ((!with_samples_only || !fig.samples.empty()) && n.index.try_emplace(fig.name, n.names.size()).second) {
        n.names.push_back(fig.name);
        n.units.push_back(fig.unit);
      }
  return n;
}

}  // namespace

std::string render_comparison(const baseline::Comparison& c) {
  std::vector<std::vector<std::string>> rows{{"figure", "baseline", "now", "change", "bound", "verdict", "why"}};
  for (const auto& f : c.figures)
    rows.push_back({f.name, core::value_with_unit(f.baseline_median, f.unit),
                    core::value_with_unit(f.now_median, f.unit), change_text(f), bound_text(f), verdict_text(f),
                    f.note});
  return core::render_table(rows);
}

namespace {

// Each figure's noise and bound as a check would judge it: the golden run against itself, with
// `runs` workload runs (a per-run figure's noise is the spread between them, compare.hpp).
std::unordered_map<std::string, baseline::FigureComparison> judged_alone(const std::vector<baseline::Figure>& figs,
                                                                         const baseline::Config& cfg, int runs) {
  baseline::CompareContext ctx;
  ctx.baseline_runs = ctx.now_runs = runs;
  std::unordered_map<std::string, baseline::FigureComparison> out;
  for (auto& f : baseline::compare(figs, figs, cfg, ctx).figures) out.try_emplace(f.name, std::move(f));
  return out;
}

std::string bound_cell(const baseline::FigureComparison& f) {
  if (f.verdict == baseline::Verdict::kInfo) return "not gated";
  if (f.verdict == baseline::Verdict::kUngated) return "not gated yet";
  return fmt::format("{:.1f} %", f.bound_percent);
}

}  // namespace

nlohmann::json figures_json(const std::vector<baseline::Figure>& figs, const baseline::Config& cfg, int runs) {
  nlohmann::json arr = nlohmann::json::array();
  const auto judged = judged_alone(figs, cfg, runs);
  for (const auto& fig : figs) {
    if (fig.samples.empty()) continue;
    const auto& f = judged.at(fig.name);
    arr.push_back({{"name", fig.name},
                   {"unit", fig.unit},
                   {"source", fig.source},
                   {"direction", baseline::to_string(f.rule.direction)},
                   {"threshold_percent", f.rule.threshold_percent},
                   {"median", baseline::median(fig.samples)},
                   {"noise_percent", f.noise_percent},
                   {"noise_between_runs", f.per_run},
                   {"bound_percent", f.bound_percent},
                   {"gated", f.verdict != baseline::Verdict::kInfo && f.verdict != baseline::Verdict::kUngated},
                   {"samples", fig.samples}});
  }
  return arr;
}

std::string render_figures(const std::vector<baseline::Figure>& figs, const baseline::Config& cfg, int runs) {
  std::vector<std::vector<std::string>> rows{{"figure", "median", "samples", "noise", "better", "bound", "rule"}};
  const auto judged = judged_alone(figs, cfg, runs);
  for (const auto& fig : figs) {
    if (fig.samples.empty()) continue;
    const auto& f = judged.at(fig.name);
    rows.push_back({fig.name, core::value_with_unit(baseline::median(fig.samples), fig.unit),
                    std::to_string(fig.samples.size()),
                    fmt::format("{:.1f} %{}", f.noise_percent, f.per_run ? " (runs)" : ""),
                    baseline::to_string(f.rule.direction), bound_cell(f), f.rule.origin});
  }
  return core::render_table(rows);
}

nlohmann::json history_json(const store::BaselineInfo& info, const std::vector<store::StoredRun>& runs) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& r : runs) {
    nlohmann::json medians = nlohmann::json::object();
    for (const auto& fig : r.figures) medians[fig.name] = baseline::median(fig.samples);
    nlohmann::json run = {
        {"run_id", r.id},       {"time", core::utc_seconds_text(r.time_unix_ns)}, {"role", r.role},
        {"verdict", r.verdict}, {"golden", r.id == info.golden_run_id},           {"medians", medians}};
    if (!r.damaged.empty()) run["damaged"] = r.damaged;
    arr.push_back(std::move(run));
  }
  return {{"baseline", info.name}, {"runs", arr}};
}

std::string render_history(const store::BaselineInfo& info, const std::vector<store::StoredRun>& runs) {
  std::vector<std::vector<std::string>> rows{{"run", "time", "role", "verdict"}};
  for (const auto& r : runs)
    rows.push_back({std::to_string(r.id) + (r.id == info.golden_run_id ? "*" : ""),
                    core::utc_seconds_text(r.time_unix_ns), r.role, r.verdict.empty() ? "—" : r.verdict});
  std::string out = fmt::format("baseline '{}': {} run{} (* = the golden run), oldest first\n", info.name, runs.size(),
                                runs.size() == 1 ? "" : "s");
  out += core::render_table(rows);
  // Medians per figure and run (absent where a run lacks the figure), filled in one pass.
  const FigureNames names = figure_names(runs, false);
  std::vector<std::vector<std::optional<double>>> values(names.names.size(),
                                                         std::vector<std::optional<double>>(runs.size()));
  for (std::size_t i = 0; i < runs.size(); ++i)
    for (const auto& fig : runs[i].figures)
      if (!fig.samples.empty()) values[names.index.at(fig.name)][i] = baseline::median(fig.samples);
  std::vector<std::vector<std::string>> trend{{"figure", "trend", "min", "max", "last"}};
  for (std::size_t k = 0; k < names.names.size(); ++k) {
    const auto& v = values[k];
    double lo = HUGE_VAL, hi = -HUGE_VAL;
    std::optional<double> last;
    for (const auto& x : v)
      if (x) {
        lo = std::min(lo, *x);
        hi = std::max(hi, *x);
        last = x;
      }
    // A flat series draws mid-height, not at the floor.
    const double pad = hi > lo ? 0 : std::max(std::fabs(hi) * 0.01, 1e-12);
    const std::string& unit = names.units[k];
    trend.push_back({names.names[k], core::sparkline(v, lo - pad, hi + pad), core::value_with_unit(lo, unit),
                     core::value_with_unit(hi, unit), core::value_with_unit(last, unit)});
  }
  return out + core::render_table(trend);
}

BaselineHistory history_page(const store::BaselineInfo& info, const std::vector<store::StoredRun>& runs,
                             const std::optional<store::StoredRun>& golden, const baseline::Config& cfg,
                             const std::string& store_path) {
  BaselineHistory h;
  h.name = info.name;
  h.kinds = info.kinds;
  h.store = store_path;
  h.config = cfg.source;
  const FigureNames names = figure_names(runs, true);
  for (std::size_t k = 0; k < names.names.size(); ++k) {
    BaselineHistoryFigure hf;
    hf.name = names.names[k];
    hf.unit = names.units[k];
    hf.values.resize(runs.size());
    hf.verdicts.resize(runs.size());
    h.figures.push_back(std::move(hf));
  }
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    h.runs.push_back({r.id, r.time_unix_ns, r.role, r.verdict, r.id == info.golden_run_id});
    for (const auto& fig : r.figures)
      if (!fig.samples.empty()) h.figures[names.index.at(fig.name)].values[i] = baseline::median(fig.samples);
    if (r.role != "check" || !r.details.is_object() || !r.details.contains("comparison")) continue;
    for (const auto& c : r.details["comparison"]) {
      if (!c.is_object() || !c.contains("name") || !c["name"].is_string()) continue;
      auto it = names.index.find(c["name"].get<std::string>());
      if (it != names.index.end()) h.figures[it->second].verdicts[i] = c.value("verdict", "");
    }
  }
  // The golden run may be older than the shown runs (--limit): its figures still set the lines.
  if (golden) {
    const auto judged = judged_alone(golden->figures, cfg, baseline::workload_runs(golden->details));
    for (const auto& fig : golden->figures) {
      if (fig.samples.empty()) continue;
      const auto& f = judged.at(fig.name);
      auto it = names.index.find(fig.name);
      if (it == names.index.end()) continue;
      auto& hf = h.figures[it->second];
      const double med = baseline::median(fig.samples);
      hf.direction = baseline::to_string(f.rule.direction);
      hf.rule = f.rule.origin;
      hf.baseline_value = med;
      hf.bound_percent = f.bound_percent;
      hf.bound_value = regression_bound(med, hf.bound_percent, f.rule);
    }
  }
  for (auto& hf : h.figures)
    if (hf.direction.empty()) {  // not in the golden run: judged by name alone
      const baseline::Rule rule = cfg.rule_for(hf.name, hf.unit, std::nullopt);
      hf.direction = baseline::to_string(rule.direction);
      hf.rule = rule.origin;
    }
  return h;
}

std::string render_recorded(const baseline::Recorded& r, const std::string& store_path, const baseline::Config& cfg,
                            const cost::PriceBook& prices) {
  const auto& nb = r.baseline;
  std::string out;
  if (r.interrupted())
    out =
        fmt::format("INTERRUPTED by {}: what was measured is stored as run {} of '{}' in {}, marked interrupted; {}\n",
                    core::signal_name(*r.stopped_by), r.run_id, nb.name, store_path,
                    r.existed ? "the golden run stays as it was"
                              : "`baseline check` refuses this baseline until it is recorded again");
  else
    out = fmt::format("{} baseline '{}' ({}) in {}, run {}\n", r.existed ? "re-recorded" : "recorded", nb.name,
                      nb.kinds, store_path, r.run_id);
  out += render_figures(r.got.figures, cfg, baseline::workload_runs(r.got.details));
  return r.got.cost ? out + render_cost(*r.got.cost, prices) : out;
}

nlohmann::json recorded_json(const baseline::Recorded& r, const std::string& store_path, const baseline::Config& cfg,
                             const cost::PriceBook& prices) {
  return {{"baseline", r.baseline.name},
          {"store", store_path},
          {"run_id", r.run_id},
          {"replaced", r.existed && !r.interrupted()},
          {"status", r.interrupted() ? "interrupted" : "recorded"},
          {"interrupted", r.stopped_by ? baseline::interruption_json(*r.stopped_by) : nlohmann::json()},
          {"kinds", r.baseline.kinds},
          {"machine", baseline::to_json(r.baseline.run.machine)},
          {"figures", figures_json(r.got.figures, cfg, baseline::workload_runs(r.got.details))},
          {"notes", r.got.notes},
          {"details", r.got.details},
          {"cost", r.got.cost ? cost::to_json(*r.got.cost, prices) : nlohmann::json(nullptr)}};
}

std::string stopped_before_measuring_text(int sig) {
  return fmt::format("gpudoc: baseline: stopped by {} before anything was measured; nothing stored\n",
                     core::signal_name(sig));
}

nlohmann::json stopped_before_measuring_json(const std::string& name, int sig) {
  return {{"baseline", name},
          {"status", "interrupted"},
          {"stored", false},
          {"interrupted", baseline::interruption_json(sig)}};
}

namespace {

std::string check_text(const baseline::CheckPlan& plan, const baseline::CheckOutcome& o) {
  std::string out = fmt::format("baseline '{}' (recorded {}), check run {}\n", plan.info.name,
                                core::utc_seconds_text(plan.golden.time_unix_ns), o.run_id);
  if (!o.machine_differences.empty())
    out += fmt::format("compared across machines (--allow-different-machine): {}\n",
                       fmt::join(o.machine_differences, "; "));
  out += render_comparison(o.cmp);
  if (o.stopped_by)
    return out + fmt::format(
                     "INTERRUPTED by {}: the check was stopped; what was measured is stored as run {}, marked "
                     "interrupted\n",
                     core::signal_name(*o.stopped_by), o.run_id);
  if (!o.workload_failure.empty()) out += fmt::format("FAILED: {}\n", o.workload_failure);
  if (o.exit_code == core::kExitOk) {
    std::vector<std::string> ungated, redefined;
    for (const auto& fig : o.cmp.figures) {
      if (fig.verdict == baseline::Verdict::kUngated) ungated.push_back(fig.name);
      if (fig.verdict == baseline::Verdict::kRedefined) redefined.push_back(fig.name);
    }
    out += ungated.empty() && redefined.empty() ? "ok: every figure within its bound\n"
                                                : "ok: every gated figure within its bound\n";
    if (!ungated.empty())
      out += fmt::format("not gated yet (their noise between runs is still being measured): {}\n",
                         fmt::join(ungated, ", "));
    if (!redefined.empty())
      out += fmt::format("not compared (measured differently from the baseline; record it again): {}\n",
                         fmt::join(redefined, ", "));
    return out;
  }
  std::size_t n = 0;
  for (const auto& fig : o.cmp.figures) n += baseline::is_failure(fig.verdict) ? 1 : 0;
  if (n > 0)
    out += fmt::format("REGRESSION: {} figure{} out of bounds{}\n", n, n == 1 ? "" : "s",
                       o.rerun ? " (confirmed by a re-run)" : "");
  out += "GPU state now, and what the run's trace shows:\n";
  for (const auto& l : o.failure_lines) out += "  " + l + "\n";
  return out;
}

// What the check's workload runs cost: the first collection's and the confirmation's.
std::optional<cost::JobCost> check_cost(const baseline::CheckOutcome& o) {
  std::optional<cost::JobCost> c = o.got.cost;
  if (o.rerun && o.rerun->cost) {
    if (c)
      c->add_run(*o.rerun->cost);
    else
      c = o.rerun->cost;
  }
  return c;
}

}  // namespace

std::string render_check(const baseline::CheckPlan& plan, const baseline::CheckOutcome& o,
                         const cost::PriceBook& prices) {
  const std::string out = check_text(plan, o);
  const auto c = check_cost(o);
  return c ? out + render_cost(*c, prices) : out;
}

nlohmann::json check_json(const baseline::CheckPlan& plan, const baseline::CheckOutcome& o,
                          const cost::PriceBook& prices) {
  return {
      {"baseline", plan.info.name},
      {"store", plan.store.path()},
      {"run_id", o.run_id},
      {"verdict", o.verdict},
      {"exit_code", o.exit_code},
      {"workload_failure", o.workload_failure.empty() ? nlohmann::json(nullptr) : nlohmann::json(o.workload_failure)},
      {"interrupted", o.stopped_by ? baseline::interruption_json(*o.stopped_by) : nlohmann::json()},
      {"machine", baseline::to_json(o.machine)},
      {"baseline_machine", baseline::to_json(plan.golden.machine)},
      {"machine_differences", o.machine_differences},
      {"figures", baseline::to_json(o.cmp)},
      {"confirmation", o.confirmation},
      {"notes", o.got.notes},
      {"gpu_snapshot", o.snapshot},
      {"findings", o.findings},
      {"trace", o.trace_kept ? nlohmann::json(o.got.trace_path) : nlohmann::json(nullptr)},
      {"cost", check_cost(o) ? cost::to_json(*check_cost(o), prices) : nlohmann::json(nullptr)}};
}

namespace {

std::string golden_status(const store::BaselineInfo& b) { return b.golden_interrupted() ? "interrupted" : "complete"; }

std::string gpus_text(const baseline::MachineContext& m) {
  return m.gpus.empty() ? "none" : fmt::format("{}x {}", m.gpus.size(), m.gpus[0]);
}

}  // namespace

std::string render_baseline_list(const baseline::BaselineList& list) {
  if (!list.store_exists) return fmt::format("no baselines yet ({} does not exist)\n", list.store_path);
  if (list.baselines.empty()) return fmt::format("no baselines yet in {}\n", list.store_path);
  std::vector<std::vector<std::string>> rows{{"name", "kinds", "recorded", "golden", "GPUs", "runs", "last check"}};
  for (const auto& [b, last] : list.baselines)
    rows.push_back({b.name, b.kinds, core::utc_seconds_text(b.updated_unix_ns), golden_status(b), gpus_text(b.machine),
                    std::to_string(b.run_count),
                    last ? fmt::format("{} {}", last->verdict, core::utc_seconds_text(last->time_unix_ns)) : "—"});
  return core::render_table(rows);
}

nlohmann::json baseline_list_json(const baseline::BaselineList& list) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& [b, last] : list.baselines)
    arr.push_back({{"name", b.name},
                   {"kinds", b.kinds},
                   {"created", core::utc_seconds_text(b.created_unix_ns)},
                   {"recorded", core::utc_seconds_text(b.updated_unix_ns)},
                   {"golden_status", golden_status(b)},
                   {"machine", baseline::to_json(b.machine)},
                   {"runs", b.run_count},
                   {"last_check", last ? nlohmann::json{{"verdict", last->verdict},
                                                        {"time", core::utc_seconds_text(last->time_unix_ns)},
                                                        {"run_id", last->run_id}}
                                       : nlohmann::json(nullptr)}});
  return {{"store", list.store_path}, {"baselines", arr}};
}

namespace {

std::string golden_status_line(const store::StoredRun& golden) {
  if (golden.interrupted())
    return "status: INTERRUPTED recording: the golden run was stopped before it ended; `baseline check` refuses it "
           "until "
           "it is recorded again\n";
  if (!golden.damaged.empty())
    return fmt::format("status: DAMAGED in the store ({}); `baseline check` refuses it\n",
                       fmt::join(golden.damaged, "; "));
  return {};
}

// What the baseline runs, one line per line of it.
std::string spec_lines(const baseline::CollectSpec& spec) {
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
  return what;
}

}  // namespace

std::string render_baseline(const store::BaselineInfo& info, const store::StoredRun& golden,
                            const baseline::CollectSpec& spec, const baseline::Config& cfg) {
  const auto& m = golden.machine;
  return fmt::format("baseline '{}' ({}), recorded {} by gpudoc {}\n{}{}machine: {} | GPUs: {} | driver {} | CUDA {}\n",
                     info.name, info.kinds, core::utc_seconds_text(info.updated_unix_ns), golden.gpudoc_version,
                     golden_status_line(golden), spec_lines(spec), m.host,
                     m.gpus.empty() ? std::string("none") : fmt::format("{}", fmt::join(m.gpus, ", ")),
                     m.driver_version.empty() ? "—" : m.driver_version, m.cuda_version.empty() ? "—" : m.cuda_version) +
         render_figures(golden.figures, cfg, baseline::workload_runs(golden.details));
}

nlohmann::json baseline_json(const store::BaselineInfo& info, const store::StoredRun& golden,
                             const baseline::Config& cfg) {
  return {{"name", info.name},
          {"kinds", info.kinds},
          {"created", core::utc_seconds_text(info.created_unix_ns)},
          {"recorded", core::utc_seconds_text(info.updated_unix_ns)},
          {"status", golden.interrupted()     ? "interrupted"
                     : golden.damaged.empty() ? "complete"
                                              : "damaged"},
          {"damaged", golden.damaged},
          {"spec", info.spec},
          {"machine", baseline::to_json(golden.machine)},
          {"run_id", golden.id},
          {"gpudoc_version", golden.gpudoc_version},
          {"figures", figures_json(golden.figures, cfg, baseline::workload_runs(golden.details))},
          {"details", golden.details}};
}

}  // namespace gpudoc::view
