#include "view/diagnose_html.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/version.hpp"
#include "view/dashboard_assets.hpp"
#include "view/diagnose_render.hpp"

namespace gpudoc::view {
namespace {

using gpu::Metric;

// The curves the page plots: trace metric, key in the page's data, scale (for the JS).
struct Curve {
  Metric metric;
  const char* key;
  double scale;  // multiply values by this (bytes -> GiB)
  double round;  // keep this many decimals' worth: value rounded to 1/round
};
constexpr Curve kCurves[] = {
    {Metric::kGpuUtilizationPercent, "gpu_utilization_percent", 1, 10},
    {Metric::kGpmSmActivityPercent, "gpm_sm_activity_percent", 1, 10},
    {Metric::kGpmTensorActivityPercent, "gpm_tensor_activity_percent", 1, 10},
    {Metric::kGpmDramActivityPercent, "gpm_dram_activity_percent", 1, 10},
    {Metric::kMemoryUtilizationPercent, "memory_utilization_percent", 1, 10},
    {Metric::kPowerWatts, "power_watts", 1, 10},
    {Metric::kSmClockMhz, "sm_clock_mhz", 1, 1},
    {Metric::kMemoryUsedBytes, "memory_used_gib", 1.0 / (1024.0 * 1024.0 * 1024.0), 1000},
};

double rounded(double v, double r) { return std::round(v * r) / r; }

// [[t...], [v...]] with nulls marking gaps far longer than the series' own spacing.
nlohmann::json curve_json(const telemetry::Series& raw, const Curve& c, std::size_t buckets) {
  telemetry::Series s = downsample_min_max(raw, buckets);
  std::vector<double> dts;
  for (std::size_t i = 1; i < raw.size() && dts.size() < 2000; ++i) dts.push_back(raw.t[i] - raw.t[i - 1]);
  double median_dt = 0;
  if (!dts.empty()) {
    std::nth_element(dts.begin(), dts.begin() + static_cast<long>(dts.size() / 2), dts.end());
    median_dt = dts[dts.size() / 2];
  }
  double span = raw.empty() ? 0 : raw.t.back() - raw.t.front();
  double gap = std::max({1.0, 10 * median_dt, 3 * span / static_cast<double>(std::max<std::size_t>(buckets, 1))});
  nlohmann::json ts = nlohmann::json::array(), vs = nlohmann::json::array();
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && s.t[i] - s.t[i - 1] > gap) {
      ts.push_back(rounded(s.t[i - 1] + median_dt, 1000));
      vs.push_back(nullptr);
    }
    ts.push_back(rounded(s.t[i], 1000));
    if (std::isfinite(s.v[i]))
      vs.push_back(rounded(s.v[i] * c.scale, c.round));
    else
      vs.push_back(nullptr);
  }
  return nlohmann::json::array({ts, vs});
}

nlohmann::json page_data(std::span<const HtmlReport> reports, std::size_t buckets) {
  nlohmann::json traces = nlohmann::json::array();
  for (const auto& r : reports) {
    const auto& t = *r.trace;
    const auto& d = *r.diagnosis;
    nlohmann::json gpus = nlohmann::json::array();
    for (std::size_t pos = 0; pos < t.gpus.size(); ++pos) {
      nlohmann::json series = nlohmann::json::object();
      for (const auto& c : kCurves) {
        const auto& s = t.gpus[pos].metric(c.metric);
        if (!s.empty()) series[c.key] = curve_json(s, c, buckets);
      }
      nlohmann::json windows = nlohmann::json::array();
      for (std::size_t fi = 0; fi < d.findings.size(); ++fi) {
        const auto& f = d.findings[fi];
        bool here = f.gpus.empty() || std::find(f.gpus.begin(), f.gpus.end(), static_cast<int>(pos)) != f.gpus.end();
        if (here)
          windows.push_back({{"start", f.window.start_s},
                             {"end", f.window.end_s},
                             {"id", f.id},
                             {"severity", findings::to_string(f.severity)},
                             {"finding", fi}});
      }
      const auto& dev = t.header.gpus[pos];
      gpus.push_back({{"label", fmt::format("{} · {}", gpu_label(t, static_cast<int>(pos)), dev.name)},
                      {"series", series},
                      {"windows", windows}});
    }
    traces.push_back({{"duration_s", std::max(t.duration_s, d.duration_s)}, {"gpus", gpus}});
  }
  return {{"traces", traces}};
}

constexpr std::string_view kCss = R"CSS(
:root{--fg:#1d2330;--muted:#5d6678;--line:#d9dde5;--info:#2f6fd0;--warning:#c98500;--critical:#c62828;--bg:#fff}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg);margin:0 auto;max-width:1200px;padding:16px 24px}
h1{font-size:22px;margin:4px 0}h2{font-size:18px;margin:28px 0 6px;border-bottom:1px solid var(--line);padding-bottom:4px}
h3{font-size:15px;margin:18px 0 4px}.muted{color:var(--muted)}code,pre{font:12.5px/1.4 ui-monospace,Menlo,Consolas,monospace}
.banner{background:#fff3e0;border:1px solid #f0c080;padding:8px 12px;border-radius:6px;font-weight:600}
.chips{display:flex;flex-wrap:wrap;gap:6px;margin:8px 0}.chip{border-radius:12px;padding:2px 10px;font-size:12.5px;color:#fff;text-decoration:none}
.sev-info .sev,.chip.sev-info{background:var(--info)}.sev-warning .sev,.chip.sev-warning{background:var(--warning)}.sev-critical .sev,.chip.sev-critical{background:var(--critical)}
.sev{color:#fff;border-radius:4px;padding:1px 6px;font-size:12px;text-transform:uppercase;margin-right:6px}
.finding{border:1px solid var(--line);border-left:5px solid var(--info);border-radius:6px;padding:8px 14px;margin:12px 0}
.finding.sev-warning{border-left-color:var(--warning)}.finding.sev-critical{border-left-color:var(--critical)}
table.evidence{border-collapse:collapse;margin:6px 0}table.evidence td,table.evidence th{border-bottom:1px solid var(--line);padding:3px 10px 3px 0;text-align:left;vertical-align:top}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.plot{margin:4px 0 10px}.gpu{margin:10px 0 18px}button.zoom{font-size:12px;cursor:pointer}
.hint{font-size:12px;color:var(--muted)}
)CSS";

constexpr std::string_view kJs = R"JS(
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("gpudoc-data").textContent);
  var PLOTS = [
    { title: "activity (%)", scales: { "%": { range: [0, 100] } }, axes: [["%", 3]], series: [
      ["gpu_utilization_percent", "utilization", "#1f77b4", "%"],
      ["gpm_sm_activity_percent", "SM activity", "#2ca02c", "%"],
      ["gpm_tensor_activity_percent", "tensor activity", "#9467bd", "%"],
      ["gpm_dram_activity_percent", "DRAM activity", "#ff7f0e", "%"],
      ["memory_utilization_percent", "memory-bandwidth util", "#8c564b", "%"]] },
    { title: "power (W) and SM clock (MHz)", scales: { W: { range: function (u, mn, mx) { return [0, Math.max(mx, 1)]; } }, MHz: { range: function (u, mn, mx) { return [0, Math.max(mx, 1)]; } } },
      axes: [["W", 3], ["MHz", 1]], series: [
      ["power_watts", "power", "#d62728", "W"],
      ["sm_clock_mhz", "SM clock", "#17becf", "MHz"]] },
    { title: "memory used (GiB)", scales: { GiB: { range: function (u, mn, mx) { return [0, Math.max(mx, 1)]; } } }, axes: [["GiB", 3]], series: [
      ["memory_used_gib", "memory used", "#555555", "GiB"]] }
  ];
  function windowsPlugin(wins) {  // web/dashboard/findings_shading.js, embedded before this script
    return gpudocShading.plugin(function () { return wins; });
  }
  var groups = [];
  var plotCount = 0;
  function fmtVal(unit) {
    return function (u, v) { return v == null ? "—" : (Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(1)) + " " + unit; };
  }
  function widthOf(el) { return Math.max(320, (el.clientWidth || 800) - 8); }
  data.traces.forEach(function (tr, ti) {
    var group = [];
    var syncing = false;
    groups.push(group);
    tr.gpus.forEach(function (g, gi) {
      var host = document.getElementById("plots-" + ti + "-" + gi);
      if (!host) return;
      PLOTS.forEach(function (spec) {
        var present = spec.series.filter(function (s) { return g.series[s[0]]; });
        if (present.length === 0) return;
        var tables = present.map(function (s) { return g.series[s[0]]; });
        var aligned = tables.length === 1 ? tables[0] : uPlot.join(tables);
        var series = [{ label: "t", value: function (u, v) { return v == null ? "—" : v.toFixed(2) + " s"; } }];
        present.forEach(function (s) {
          series.push({ label: s[1], stroke: s[2], width: 1.25, scale: s[3], spanGaps: false, value: fmtVal(s[3]) });
        });
        var axes = [{ label: "seconds since the start of the trace" }];
        spec.axes.forEach(function (a) {
          if (!present.some(function (s) { return s[3] === a[0]; })) return;
          axes.push({ scale: a[0], label: a[0], side: a[1], grid: { show: a[1] === 3 }, size: 55 });
        });
        var el = document.createElement("div");
        el.className = "plot";
        host.appendChild(el);
        var opts = {
          title: g.label + " — " + spec.title, width: widthOf(host), height: 200,
          scales: Object.assign({ x: { time: false, range: function (u, mn, mx) { return [mn, mx]; } } }, spec.scales),
          series: series, axes: axes,
          cursor: { sync: { key: "trace-" + ti }, drag: { x: true, y: false } },
          plugins: [windowsPlugin(g.windows)],
          hooks: { setScale: [function (u, key) {
            if (key !== "x" || syncing) return;
            syncing = true;
            group.forEach(function (o) { if (o !== u) o.setScale("x", { min: u.scales.x.min, max: u.scales.x.max }); });
            syncing = false;
          }] }
        };
        group.push(new uPlot(opts, aligned, el));
        plotCount++;
      });
    });
  });
  document.querySelectorAll("button.zoom").forEach(function (btn) {
    btn.addEventListener("click", function () {
      var ti = +btn.dataset.trace, a = +btn.dataset.start, b = +btn.dataset.end;
      var pad = Math.max((b - a) * 0.05, 0.5);
      (groups[ti] || []).forEach(function (u) { u.setScale("x", { min: Math.max(0, a - pad), max: b + pad }); });
      var first = document.getElementById("trace-" + ti);
      if (first) first.scrollIntoView({ behavior: "smooth" });
    });
  });
  window.addEventListener("resize", function () {
    groups.forEach(function (group) {
      group.forEach(function (u) { u.setSize({ width: widthOf(u.root.parentNode), height: 200 }); });
    });
  });
  document.body.dataset.plots = String(plotCount);
  document.body.dataset.rendered = "ok";
})();
)JS";

std::string render_findings(const telemetry::Trace& t, const diagnose::Diagnosis& d, std::size_t ti) {
  std::string out;
  for (std::size_t fi = 0; fi < d.findings.size(); ++fi) {
    const auto& f = d.findings[fi];
    const char* sev = findings::to_string(f.severity);
    const auto* entry = findings::find_entry(f.id);
    out += fmt::format("<article class=\"finding sev-{}\" id=\"finding-{}-{}\">\n", sev, ti, fi);
    out += fmt::format("<h3><span class=\"sev\">{}</span><code>{}</code>{}</h3>\n", sev, html_escape(f.id),
                       entry != nullptr ? " — " + html_escape(entry->title) : std::string());
    out += fmt::format(
        "<p class=\"muted\">{} · {:.1f}–{:.1f} s · confidence {:.0f} % "
        "<button class=\"zoom\" data-trace=\"{}\" data-start=\"{}\" data-end=\"{}\">show on the plots</button></p>\n",
        html_escape(gpus_label(t, f.gpus)), f.window.start_s, f.window.end_s, f.confidence * 100, ti, f.window.start_s,
        f.window.end_s);
    if (!f.message.empty()) out += "<p>" + html_escape(f.message) + "</p>\n";
    if (!f.evidence.empty()) {
      out += "<table class=\"evidence\"><tr><th>evidence</th><th>value</th><th>how it was measured</th></tr>\n";
      for (const auto& e : f.evidence)
        out +=
            fmt::format("<tr><td><code>{}</code></td><td class=\"num\">{}</td><td>{}</td></tr>\n", html_escape(e.name),
                        html_escape(format_evidence_value(e.value, e.unit)), html_escape(e.how));
      out += "</table>\n";
    }
    if (!f.caveats.empty()) {
      out += "<ul class=\"caveats muted\">";
      for (const auto& c : f.caveats) out += "<li>caveat: " + html_escape(c) + "</li>";
      out += "</ul>\n";
    }
    if (!f.next_steps.empty()) {
      out += "<p><b>Next steps</b></p><ol class=\"next\">";
      for (const auto& s : f.next_steps) out += "<li>" + html_escape(s) + "</li>";
      out += "</ol>\n";
    }
    if (entry != nullptr && !entry->meaning.empty())
      out +=
          "<details><summary>What this finding means</summary><p>" + html_escape(entry->meaning) + "</p></details>\n";
    out += "</article>\n";
  }
  return out;
}

std::string means_line(const diagnose::GpuSummary& g) {
  std::string s = fmt::format("analysed {:.1f}–{:.1f} s", g.analysed_from_s, g.analysed_to_s);
  auto add = [&](const char* name, const std::optional<double>& v, const char* unit) {
    if (v) s += fmt::format(" · {} {:.0f}{}", name, *v, unit);
  };
  add("util", g.mean_utilization_percent, " %");
  add("SM", g.mean_sm_activity_percent, " %");
  add("tensor", g.mean_tensor_activity_percent, " %");
  add("DRAM", g.mean_dram_activity_percent, " %");
  add("power", g.mean_power_watts, " W");
  if (!g.primary.empty()) s += " · pattern: " + g.primary;
  return s;
}

}  // namespace

telemetry::Series downsample_min_max(const telemetry::Series& s, std::size_t buckets) {
  if (buckets == 0 || s.size() <= 2 * buckets) return s;
  telemetry::Series out;
  out.t.reserve(2 * buckets);
  out.v.reserve(2 * buckets);
  const double t0 = s.t.front(), t1 = s.t.back();
  const double width = (t1 - t0) / static_cast<double>(buckets);
  std::size_t i = 0;
  for (std::size_t b = 0; b < buckets && i < s.size(); ++b) {
    const double end = b + 1 == buckets ? t1 : t0 + width * static_cast<double>(b + 1);
    std::size_t lo = i, hi = i, first = i;
    bool any = false;
    for (; i < s.size() && (s.t[i] < end || b + 1 == buckets); ++i) {
      if (!std::isfinite(s.v[i])) continue;
      if (!any) {
        lo = hi = i;
        any = true;
      }
      if (s.v[i] < s.v[lo]) lo = i;
      if (s.v[i] > s.v[hi]) hi = i;
    }
    (void)first;
    if (!any) continue;
    std::size_t a = std::min(lo, hi), c = std::max(lo, hi);
    out.t.push_back(s.t[a]);
    out.v.push_back(s.v[a]);
    if (c != a) {
      out.t.push_back(s.t[c]);
      out.v.push_back(s.v[c]);
    }
  }
  return out;
}

std::string render_diagnose_html(std::span<const HtmlReport> reports, const HtmlOptions& o, const WebAssets& assets) {
  std::string title = o.title.empty() ? "gpudoc diagnose" : "gpudoc diagnose — " + o.title;
  std::string page;
  page.reserve(1 << 20);
  page += html_page_start(title, assets, kCss);
  page += fmt::format(
      "<p class=\"hint\">gpudoc {}. Drag on a plot to zoom in, double-click to zoom out; the plots of one "
      "trace move together. Shaded: where a finding holds.</p>\n",
      core::kVersion);
  if (!o.banner.empty()) page += "<p class=\"banner\">" + html_escape(o.banner) + "</p>\n";

  for (std::size_t ti = 0; ti < reports.size(); ++ti) {
    const auto& t = *reports[ti].trace;
    const auto& d = *reports[ti].diagnosis;
    page += fmt::format("<section class=\"trace\" id=\"trace-{}\">\n", ti);
    page += "<h2>" + html_escape(d.source.empty() ? "trace" : d.source) + "</h2>\n";
    std::string meta = fmt::format("{} · {} GPU{} · {:.1f} s", d.input_format.empty() ? "trace" : d.input_format,
                                   d.gpus.size(), d.gpus.size() == 1 ? "" : "s", d.duration_s);
    if (!t.header.host.empty()) meta = "host " + t.header.host + " · " + meta;
    page += "<p class=\"muted\">" + html_escape(meta) + "</p>\n";
    if (!t.header.command.empty()) {
      std::string cmd;
      for (const auto& a : t.header.command) cmd += (cmd.empty() ? "" : " ") + a;
      page += "<p class=\"muted\">command: <code>" + html_escape(cmd) + "</code></p>\n";
    }
    page += "<div class=\"chips\">";
    if (d.findings.empty()) page += "<span class=\"muted\">no findings</span>";
    for (std::size_t fi = 0; fi < d.findings.size(); ++fi) {
      const auto& f = d.findings[fi];
      page +=
          fmt::format("<a class=\"chip sev-{}\" href=\"#finding-{}-{}\">{} · {}</a>", findings::to_string(f.severity),
                      ti, fi, html_escape(f.id), html_escape(gpus_label(t, f.gpus)));
    }
    page += "</div>\n";
    for (const auto& g : d.gpus) {
      if (g.gpu < 0 || static_cast<std::size_t>(g.gpu) >= t.gpus.size()) continue;
      page += fmt::format(
          "<div class=\"gpu\"><h3>{} · {}</h3><p class=\"muted\">{}</p><div class=\"plots\" "
          "id=\"plots-{}-{}\"></div></div>\n",
          html_escape(gpu_label(t, g.gpu)), html_escape(g.name), html_escape(means_line(g)), ti, g.gpu);
    }
    page += "<h3>Findings, most severe first</h3>\n";
    if (d.findings.empty()) page += "<p>No findings: nothing in this trace matched a known pattern.</p>\n";
    page += render_findings(t, d, ti);
    if (!d.changes.empty()) {
      page += "<h3>Pattern changes</h3><ul>";
      for (const auto& c : d.changes)
        page += fmt::format("<li>{} at {:.1f} s: {} → {}</li>", html_escape(gpu_label(t, c.gpu)), c.t_s,
                            html_escape(c.from), html_escape(c.to));
      page += "</ul>\n";
    }
    if (!d.unseen.empty()) {
      std::string u;
      for (const auto& s : d.unseen) u += (u.empty() ? "" : ", ") + s;
      page += "<p class=\"muted\">Could not see: " + html_escape(u) +
              " (not in this input; confidence is lowered where they matter).</p>\n";
    }
    page += "</section>\n";
  }
  // The findings' shading is serve's dashboard's own file (web/dashboard/findings_shading.js).
  const auto shading = dashboard_asset("/assets/findings_shading.js");
  page += html_page_end(page_data(reports, o.buckets),
                        std::string(shading ? shading->body : std::string_view()) + std::string(kJs), assets);
  return page;
}

core::Result<std::string> render_diagnose_html(std::span<const HtmlReport> reports, const HtmlOptions& options) {
  auto assets = web_assets();
  if (!assets) return core::Error(core::ErrorKind::kEnvironment, std::string(kWebAssetsMissing));
  return render_diagnose_html(reports, options, *assets);
}

}  // namespace gpudoc::view
