#include "view/diagnose_html.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/version.hpp"
#include "cost/job.hpp"
#include "view/cost_view.hpp"
#include "view/dashboard_assets.hpp"
#include "view/diagnose_render.hpp"

namespace gpudoc::view {
namespace {

using gpu::Metric;

// A curve the page plots: a trace metric, kept in the page's data under the metric's name, in the
// unit it is plotted in (values multiplied by scale: bytes -> GiB) and rounded to 1/round.
struct Curve {
  Metric metric;
  std::string key;
  double scale;
  double round;
};

// The catalog of plotted curves, web/dashboard/plot_catalog.json, which serve's dashboard reads too:
// each curve's label, colour, unit, scale and decimals, and the plots of each page. Parsed once;
// discarded (no plots) if it does not parse, which a unit test keeps from shipping.
const nlohmann::json& plot_catalog() {
  static const nlohmann::json catalog = [] {
    const auto file = dashboard_asset("/assets/plot_catalog.json");
    return nlohmann::json::parse(file ? file->body : std::string_view(), nullptr, false);
  }();
  return catalog;
}

// What the page's script reads of the catalog: the curves and the "report" layout (no plots when
// the catalog is unusable).
nlohmann::json report_catalog() {
  const nlohmann::json& c = plot_catalog();
  if (!c.is_object() || !c.contains("series") || !c.contains("report"))
    return {{"series", nlohmann::json::object()}, {"report", nlohmann::json::array()}};
  return {{"series", c["series"]}, {"report", c["report"]}};
}

// The curves of the catalog's "report" layout, in its order.
const std::vector<Curve>& report_curves() {
  static const std::vector<Curve> curves = [] {
    std::vector<Curve> out;
    const nlohmann::json c = report_catalog();
    for (const auto& plot : c["report"])
      for (const auto& name : plot.value("series", nlohmann::json::array())) {
        if (!name.is_string()) continue;
        const std::string key = name.get<std::string>();
        const auto metric = gpu::metric_from_name(key);
        const auto it = c["series"].find(key);
        if (!metric || it == c["series"].end()) continue;
        out.push_back({*metric, key, it->value("scale", 1.0), std::pow(10.0, it->value("decimals", 0))});
      }
    return out;
  }();
  return curves;
}

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
      for (const auto& c : report_curves()) {
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
  return {{"traces", traces}, {"catalog", report_catalog()}};
}

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
  page += html_page_start(title, assets, report_file("diagnose.css"));
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
    if (o.prices != nullptr) page += cost_html(cost::cost_of_trace(t, d, {}), *o.prices);
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
  // The findings' shading is serve's dashboard's own file (web/dashboard/findings_shading.js); the
  // page's script is web/report/diagnose.js.
  const auto shading = dashboard_asset("/assets/findings_shading.js");
  page += html_page_end(
      page_data(reports, o.buckets),
      std::string(shading ? shading->body : std::string_view()) + std::string(report_file("diagnose.js")), assets);
  return page;
}

core::Result<std::string> render_diagnose_html(std::span<const HtmlReport> reports, const HtmlOptions& options) {
  auto assets = web_assets();
  if (!assets) return core::Error(core::ErrorKind::kEnvironment, std::string(kWebAssetsMissing));
  return render_diagnose_html(reports, options, *assets);
}

}  // namespace gpudoc::view
