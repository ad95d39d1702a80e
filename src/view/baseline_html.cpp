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

constexpr std::string_view kCss = R"CSS(
:root{--fg:#1d2330;--muted:#5d6678;--line:#d9dde5;--ok:#2e7d32;--bad:#c62828;--better:#2f6fd0;--bg:#fff}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg);margin:0 auto;max-width:1200px;padding:16px 24px}
h1{font-size:22px;margin:4px 0}h2{font-size:18px;margin:28px 0 6px;border-bottom:1px solid var(--line);padding-bottom:4px}
.muted{color:var(--muted)}code{font:12.5px/1.4 ui-monospace,Menlo,Consolas,monospace}.hint{font-size:12px;color:var(--muted)}
table.runs{border-collapse:collapse;margin:6px 0}table.runs td,table.runs th{border-bottom:1px solid var(--line);padding:3px 12px 3px 0;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.v-regression,.v-missing,.v-workload_failed{color:var(--bad);font-weight:600}.v-improved{color:var(--better)}.v-ok{color:var(--ok)}
.plot{margin:4px 0 10px}
)CSS";

constexpr std::string_view kJs = R"JS(
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("gpudoc-data").textContent);
  // Marker series: verdict -> label, colour, size. "missing" has no value: drawn at the baseline.
  var MARKS = [
    ["record", "recorded", "#1d2330", 9],
    ["ok", "check ok", "#2e7d32", 8],
    ["improved", "improved", "#2f6fd0", 8],
    ["regression", "REGRESSION", "#c62828", 11],
    ["missing", "MISSING (drawn at the baseline)", "#c62828", 11],
    ["other", "check, not judged", "#8a8f99", 7]
  ];
  function unitText(u) { return u === "percent" ? "%" : u; }
  function fmtVal(unit) {
    return function (u, v) {
      if (v == null) return "—";
      if (unit === "By") {
        var k = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0, x = Math.abs(v);
        while (x >= 1024 && i < k.length - 1) { x /= 1024; i++; }
        return (v < 0 ? "-" : "") + x.toPrecision(4) + " " + k[i];
      }
      var s = Math.abs(v) >= 1e6 || (Math.abs(v) < 1e-3 && v !== 0) ? v.toExponential(3) : String(+v.toPrecision(5));
      return unit && unit !== "1" ? s + " " + unitText(unit) : s;
    };
  }
  function markOf(run, verdict) {
    if (run.role === "record") return "record";
    if (verdict === "ok" || verdict === "improved" || verdict === "regression" || verdict === "missing") return verdict;
    return "other";
  }
  function widthOf(el) { return Math.max(320, (el.clientWidth || 800) - 8); }
  var xs = data.runs.map(function (r) { return r.t; });
  var plots = [];
  data.figures.forEach(function (f, fi) {
    var host = document.getElementById("plot-" + fi);
    if (!host) return;
    var fv = fmtVal(f.unit);
    var cols = [xs, f.values,
                xs.map(function () { return f.baseline; }),
                xs.map(function () { return f.bound; })];
    var series = [
      { label: "time (UTC)" },
      { label: f.name, stroke: "#1f77b4", width: 1.5, spanGaps: true, value: fv, points: { show: false } },
      { label: "baseline", stroke: "#555555", width: 1, dash: [2, 3], value: fv, points: { show: false } },
      { label: "regression bound", stroke: "#c62828", width: 1, dash: [8, 4], value: fv, points: { show: false } }
    ];
    if (f.baseline == null) series[2].show = false;
    if (f.bound == null) series[3].show = false;
    MARKS.forEach(function (m) {
      var any = false;
      var col = data.runs.map(function (r, i) {
        if (markOf(r, f.verdicts[i]) !== m[0]) return null;
        var v = m[0] === "missing" ? f.baseline : f.values[i];
        if (v != null) any = true;
        return v;
      });
      if (!any) return;
      cols.push(col);
      series.push({ label: m[1], stroke: m[2], fill: m[2], width: 0, value: fv,
                    paths: function () { return null; }, points: { show: true, size: m[3], stroke: m[2], fill: m[2] } });
    });
    var el = document.createElement("div");
    el.className = "plot";
    host.appendChild(el);
    var opts = {
      title: f.name + (f.unit ? " (" + unitText(f.unit) + ")" : ""),
      width: widthOf(host), height: 260,
      tzDate: function (ts) { return uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC"); },
      scales: { x: { time: true, range: function (u, mn, mx) {
        if (mn == null || mx == null) return [0, 1];
        return mn === mx ? [mn - 3600, mx + 3600] : [mn, mx];
      } } },
      series: series,
      axes: [{}, { size: 70, values: function (u, vals) { return vals.map(function (v) { return fv(u, v); }); } }],
      cursor: { drag: { x: true, y: false } }
    };
    plots.push(new uPlot(opts, cols, el));
  });
  window.addEventListener("resize", function () {
    plots.forEach(function (u) { u.setSize({ width: widthOf(u.root.parentNode), height: 260 }); });
  });
  document.body.dataset.plots = String(plots.length);
  document.body.dataset.rendered = "ok";
})();
)JS";

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
  page += html_page_start(title, assets, kCss);
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

  page += html_page_end(page_data(h), kJs, assets);
  return page;
}

core::Result<std::string> render_baseline_history_html(const BaselineHistory& history) {
  auto assets = web_assets();
  if (!assets) return core::Error(core::ErrorKind::kEnvironment, std::string(kWebAssetsMissing));
  return render_baseline_history_html(history, *assets);
}

}  // namespace gpudoc::view
