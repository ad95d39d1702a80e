#include "view/baseline_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "core/text.hpp"

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

FigureNames figure_names(const std::vector<baseline::StoredRun>& runs, bool with_samples_only) {
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
    rows.push_back(
        {fig.name, core::value_with_unit(baseline::median(fig.samples), fig.unit), std::to_string(fig.samples.size()),
         fmt::format("{:.1f} %", noise), baseline::to_string(rule.direction),
         rule.direction == baseline::Direction::kUnknown ? "not gated" : fmt::format("{:.1f} %", bound), rule.origin});
  }
  return core::render_table(rows);
}

nlohmann::json history_json(const baseline::BaselineInfo& info, const std::vector<baseline::StoredRun>& runs) {
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

std::string render_history(const baseline::BaselineInfo& info, const std::vector<baseline::StoredRun>& runs) {
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

BaselineHistory history_page(const baseline::BaselineInfo& info, const std::vector<baseline::StoredRun>& runs,
                             const std::optional<baseline::StoredRun>& golden, const baseline::Config& cfg,
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
    for (const auto& fig : golden->figures) {
      if (fig.samples.empty()) continue;
      auto it = names.index.find(fig.name);
      if (it == names.index.end()) continue;
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
    if (hf.direction.empty()) {  // not in the golden run: judged by name alone
      const baseline::Rule rule = cfg.rule_for(hf.name, hf.unit, std::nullopt);
      hf.direction = baseline::to_string(rule.direction);
      hf.rule = rule.origin;
    }
  return h;
}

}  // namespace gpudoc::view
