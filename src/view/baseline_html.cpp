#include "view/baseline_html.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>

#include "core/text.hpp"
#include "core/version.hpp"
#include "view/html_page.hpp"

namespace gpudoc::view {
namespace {

nlohmann::json number_or_null(const std::optional<double>& v) {
  if (!v || !std::isfinite(*v)) return nullptr;
  return *v;
}

std::string direction_text(const BaselineHistoryFigure& f) {
  if (f.direction == "lower") return fmt::format("lower is better · bound +{:.1f} %", f.bound_percent);
  if (f.direction == "higher") return fmt::format("higher is better · bound −{:.1f} %", f.bound_percent);
  return "no direction known: shown, not gated";
}

// The page's data: run times (unix seconds) and roles, then per figure the columns uPlot draws.
nlohmann::json page_data(const BaselineHistory& h) {
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& r : h.runs)
    runs.push_back({{"id", r.id},
                    {"t", static_cast<double>(r.time_unix_ns) / 1e9},
                    {"role", r.role},
                    {"verdict", r.verdict},
                    {"golden", r.golden}});
  nlohmann::json figures = nlohmann::json::array();
  for (const auto& f : h.figures) {
    nlohmann::json values = nlohmann::json::array();
    nlohmann::json verdicts = nlohmann::json::array();
    for (std::size_t i = 0; i < h.runs.size(); ++i) {
      values.push_back(i < f.values.size() ? number_or_null(f.values[i]) : nlohmann::json(nullptr));
      verdicts.push_back(i < f.verdicts.size() ? f.verdicts[i] : std::string());
    }
    figures.push_back({{"name", f.name},
                       {"unit", f.unit},
                       {"direction", f.direction},
                       {"baseline", number_or_null(f.baseline_value)},
                       {"bound", number_or_null(f.bound_value)},
                       {"values", values},
                       {"verdicts", verdicts}});
  }
  return {{"baseline", h.name}, {"runs", runs}, {"figures", figures}};
}

std::string verdict_cell(const std::string& v) {
  if (v.empty()) return "<td>—</td>";
  const std::string shown = v == "regression" ? "REGRESSION" : (v == "missing" ? "MISSING" : v);
  return "<td class=\"v-" + html_escape(v) + "\">" + html_escape(shown) + "</td>";
}

}  // namespace

std::string render_baseline_history_html(const BaselineHistory& h, const WebAssets& assets) {
  const std::string title = "gpudoc baseline history — " + h.name;
  std::string page;
  page.reserve(256 * 1024);
  page += html_page_start(title, assets, report_file("baseline.css"));
  std::string meta = fmt::format("{} run{}", h.runs.size(), h.runs.size() == 1 ? "" : "s");
  if (!h.kinds.empty()) meta = h.kinds + " · " + meta;
  if (!h.store.empty()) meta += " · store " + h.store;
  if (!h.config.empty()) meta += " · rules from " + h.config;
  page += "<p class=\"muted\">" + html_escape(meta) + "</p>\n";
  page += fmt::format(
      "<p class=\"hint\">gpudoc {}. Per figure: its median in each run over time (UTC), the golden run's value "
      "(baseline) and where a regression starts (regression bound, under the current rules), each check's verdict "
      "marked. Drag on a plot to zoom in, double-click to zoom out.</p>\n",
      core::kVersion);

  for (std::size_t fi = 0; fi < h.figures.size(); ++fi) {
    const auto& f = h.figures[fi];
    page += fmt::format("<section class=\"figure\" id=\"figure-{}\">\n", fi);
    page += "<h2><code>" + html_escape(f.name) + "</code></h2>\n";
    std::string line = direction_text(f) + " · baseline " + core::value_with_unit(f.baseline_value, f.unit);
    if (f.bound_value) line += " · regression beyond " + core::value_with_unit(f.bound_value, f.unit);
    if (!f.rule.empty()) line += " · rule: " + f.rule;
    page += "<p class=\"muted\">" + html_escape(line) + "</p>\n";
    page += fmt::format("<div class=\"plots\" id=\"plot-{}\"></div>\n", fi);
    page +=
        "<details><summary>values</summary><table class=\"runs\"><tr><th>run</th><th>time</th><th>role</th>"
        "<th>median</th><th>verdict</th></tr>\n";
    for (std::size_t i = 0; i < h.runs.size(); ++i) {
      const auto& r = h.runs[i];
      const std::optional<double> v = i < f.values.size() ? f.values[i] : std::nullopt;
      page += fmt::format("<tr><td>{}{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td>{}</tr>\n", r.id,
                          r.golden ? "*" : "", core::utc_seconds_text(r.time_unix_ns), html_escape(r.role),
                          html_escape(core::value_with_unit(v, f.unit)),
                          verdict_cell(i < f.verdicts.size() ? f.verdicts[i] : std::string()));
    }
    page += "</table></details>\n</section>\n";
  }
  if (h.figures.empty()) page += "<p>No figures: no run of this baseline stored any.</p>\n";

  page += "<h2>Runs, oldest first</h2>\n<p class=\"muted\">* = the golden run (what checks compare against now)</p>\n";
  page += "<table class=\"runs\"><tr><th>run</th><th>time</th><th>role</th><th>verdict</th></tr>\n";
  for (const auto& r : h.runs)
    page += fmt::format("<tr><td>{}{}</td><td>{}</td><td>{}</td>{}</tr>\n", r.id, r.golden ? "*" : "",
                        core::utc_seconds_text(r.time_unix_ns), html_escape(r.role), verdict_cell(r.verdict));
  page += "</table>\n";

  page += html_page_end(page_data(h), report_file("baseline.js"), assets);
  return page;
}

core::Result<std::string> render_baseline_history_html(const BaselineHistory& history) {
  auto assets = web_assets();
  if (!assets) return core::Error(core::ErrorKind::kEnvironment, std::string(kWebAssetsMissing));
  return render_baseline_history_html(history, *assets);
}

}  // namespace gpudoc::view
