#include "view/bench_html.hpp"

#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "core/version.hpp"
#include "view/html_page.hpp"

namespace gpudoc::view {
namespace {

using nlohmann::json;

// A field read without throwing: absent, null or of another type gives nothing.
std::optional<double> num(const json& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  const double v = it->get<double>();
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}
std::string str(const json& j, const char* key) {
  if (!j.is_object()) return {};
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}
const json& empty_object() {
  static const json kEmpty = json::object();
  return kEmpty;
}
const json& obj(const json& j, const char* key) {
  if (!j.is_object()) return empty_object();
  const auto it = j.find(key);
  return it != j.end() && it->is_object() ? *it : empty_object();
}
// The finite numbers of an array field, or nothing when any entry is not one.
std::optional<std::vector<double>> numbers(const json& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  const auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return std::nullopt;
  std::vector<double> out;
  for (const auto& v : *it) {
    if (!v.is_number() || !std::isfinite(v.get<double>())) return std::nullopt;
    out.push_back(v.get<double>());
  }
  return out;
}

std::string figure(double v) {
  if (std::fabs(v) >= 100) return fmt::format("{:.0f}", v);
  if (std::fabs(v) >= 10) return fmt::format("{:.1f}", v);
  return fmt::format("{:.3g}", v);
}
std::string figure(const std::optional<double>& v) { return v ? figure(*v) : std::string("—"); }

// "SM clock 1185–1980 MHz (median 1515)" from a conditions object's {min, median, max}.
std::string range_text(const json& conditions, const char* key, const char* what, const char* unit) {
  const json& r = obj(conditions, key);
  const auto lo = num(r, "min"), mid = num(r, "median"), hi = num(r, "max");
  if (!lo || !hi) return {};
  return fmt::format("{} {:.0f}–{:.0f} {}{}", what, *lo, *hi, unit, mid ? fmt::format(" (median {:.0f})", *mid) : "");
}

std::string machine_text(const json& report) {
  const json& m = obj(report, "machine");
  const json& gpu = obj(m, "gpu");
  const json& nvml = obj(m, "nvml");
  std::vector<std::string> parts;
  if (!str(report, "mode").empty()) parts.push_back("mode " + str(report, "mode"));
  if (const auto w = num(report, "wall_seconds")) parts.push_back(fmt::format("{:.1f} s", *w));
  if (!gpu.empty()) {
    std::string g = fmt::format("GPU {} {}", num(m, "device").value_or(0), str(gpu, "name"));
    if (!str(gpu, "uuid").empty()) g += " (" + str(gpu, "uuid") + ")";
    parts.push_back(g);
    if (!str(gpu, "compute_capability").empty())
      parts.push_back("compute capability " + str(gpu, "compute_capability"));
    if (const auto sms = num(gpu, "sm_count")) parts.push_back(fmt::format("{:.0f} SMs", *sms));
    if (const auto mem = num(gpu, "memory_bytes")) parts.push_back(fmt::format("{:.1f} GiB", *mem / 1073741824.0));
  }
  if (const auto n = num(m, "device_count"); n && *n > 1) parts.push_back(fmt::format("{:.0f} GPUs visible", *n));
  if (!str(nvml, "driver_version").empty())
    parts.push_back("driver " + str(nvml, "driver_version") + " (CUDA " + str(nvml, "cuda_driver_version") + ")");
  if (const auto p = num(nvml, "power_limit_watts")) parts.push_back(fmt::format("power limit {:.0f} W", *p));
  if (const auto c = num(nvml, "sm_clock_max_mhz")) parts.push_back(fmt::format("SM clock max {:.0f} MHz", *c));
  if (const auto e = num(report, "exit_code")) parts.push_back(fmt::format("exit code {:.0f}", *e));
  return fmt::format("{}", fmt::join(parts, " · "));
}

std::string conditions_text(const json& conditions) {
  std::vector<std::string> parts;
  for (const auto& p : {range_text(conditions, "sm_clock_mhz", "SM clock", "MHz"),
                        range_text(conditions, "temperature_celsius", "temperature", "°C"),
                        range_text(conditions, "power_watts", "power", "W")})
    if (!p.empty()) parts.push_back(p);
  const std::string reasons = str(conditions, "clock_event_reasons");
  if (!reasons.empty()) parts.push_back("clock-event reasons: " + reasons);
  return fmt::format("{}", fmt::join(parts, " · "));
}

struct Entry {
  std::string key;
  std::string status;  // "ok", "waived", "failed", ...
  const json* result = nullptr;
  const json* conditions = nullptr;
  std::string reason;
};

std::vector<Entry> entries(const json& results) {
  std::vector<Entry> out;
  for (const auto& e : results) {
    if (!e.is_object()) continue;
    Entry x;
    x.key = str(e, "key");
    x.status = str(e, "status");
    x.reason = str(e, "reason");
    if (const auto it = e.find("result"); it != e.end() && it->is_object()) x.result = &*it;
    if (const auto it = e.find("conditions"); it != e.end() && it->is_object()) x.conditions = &*it;
    if (x.key.empty() && x.result != nullptr) x.key = str(*x.result, "key");
    out.push_back(std::move(x));
  }
  return out;
}

std::string table_html(const std::vector<Entry>& es) {
  std::string t =
      "<table class=\"results\"><tr><th>key</th><th>median</th><th>unit</th><th>min–max</th><th>CV</th>"
      "<th>verified</th><th>SM MHz</th><th>clock-event reasons</th><th>note</th></tr>\n";
  for (const Entry& e : es) {
    std::string row = "<tr><td><code>" + html_escape(e.key) + "</code></td>";
    if (e.result != nullptr && e.status == "ok") {
      const json& r = *e.result;
      const json& params = obj(r, "params");
      const auto cv = num(r, "cv");
      const bool wide = cv && *cv > 0.02;
      // "verified": a boolean, or {"ok": bool, "detail": "..."} as bench --json writes it.
      std::optional<bool> verified;
      std::string verify_detail;
      if (const auto it = r.find("verified"); it != r.end()) {
        if (it->is_boolean()) verified = it->get<bool>();
        if (it->is_object() && it->contains("ok") && (*it)["ok"].is_boolean()) {
          verified = (*it)["ok"].get<bool>();
          verify_detail = str(*it, "detail");
        }
      }
      std::string note = str(params, "note");
      if (!str(params, "host_spread").empty()) note += (note.empty() ? "" : "; ") + str(params, "host_spread");
      if (!str(params, "algo_origin").empty())
        note += (note.empty() ? "" : "; ") + ("kernel: " + str(params, "algo_origin"));
      row += fmt::format(
          "<td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}–{}</td><td class=\"num{}\">{}</td>"
          "<td>{}</td>",
          figure(num(r, "median")), html_escape(str(r, "unit")), figure(num(r, "min")), figure(num(r, "max")),
          wide ? " wide" : "", cv ? fmt::format("{:.2f} %", *cv * 100) : "—",
          !verified ? std::string("—")
                    : fmt::format("<span title=\"{}\">{}</span>", html_escape(verify_detail),
                                  *verified ? "yes" : "<b class=\"bad\">NO</b>"));
      const json& c = e.conditions != nullptr ? *e.conditions : empty_object();
      const auto sm = num(obj(c, "sm_clock_mhz"), "median");
      row += fmt::format("<td class=\"num\">{}</td><td>{}</td><td>{}</td>", sm ? fmt::format("{:.0f}", *sm) : "",
                         html_escape(str(c, "clock_event_reasons")), html_escape(note));
    } else {
      const std::string why = e.reason.empty() ? e.status : e.reason;
      row += "<td class=\"num\">—</td><td></td><td></td><td></td><td></td><td></td><td></td><td class=\"" +
             std::string(e.status == "waived" ? "muted" : "bad") + "\">" + html_escape(why) + "</td>";
    }
    t += row + "</tr>\n";
  }
  return t + "</table>\n";
}

std::string matrix_html(const std::string& key, const json& matrix) {
  const auto it = matrix.find("values");
  if (it == matrix.end() || !it->is_array()) return {};
  const std::string rows = str(matrix, "rows"), cols = str(matrix, "columns"), unit = str(matrix, "unit");
  std::string t =
      fmt::format("<h3><code>{}</code>: {} per pair, {} rows, {} columns</h3>\n<table class=\"matrix\"><tr><th></th>",
                  html_escape(key), html_escape(unit), html_escape(rows), html_escape(cols));
  const std::size_t n = it->size();
  for (std::size_t c = 0; c < n; ++c) t += fmt::format("<th>{} {}</th>", html_escape(cols), c);
  t += "</tr>\n";
  for (std::size_t r = 0; r < n; ++r) {
    t += fmt::format("<tr><th>{} {}</th>", html_escape(rows), r);
    const json& row = (*it)[r];
    for (std::size_t c = 0; c < n; ++c) {
      const bool has = row.is_array() && c < row.size() && row[c].is_number();
      t += "<td class=\"num\">" + (has ? figure(row[c].get<double>()) : std::string("—")) + "</td>";
    }
    t += "</tr>\n";
  }
  return t + "</table>\n";
}

}  // namespace

core::Result<std::string> render_bench_html(const json& report, const WebAssets& assets) {
  if (!report.is_object() || !report.contains("results") || !report["results"].is_array())
    return core::Error(core::ErrorKind::kBadInput,
                       "not a gpudoc bench report: expected a JSON object with a \"results\" array (the output of "
                       "`gpudoc bench --json`)");
  const std::vector<Entry> es = entries(report["results"]);
  const std::string gpu_name = str(obj(obj(report, "machine"), "gpu"), "name");
  std::string page;
  page.reserve(256 * 1024);
  page += html_page_start("gpudoc bench" + (gpu_name.empty() ? std::string() : " — " + gpu_name), assets,
                          report_file("bench.css"));
  page += "<p class=\"muted\">" + html_escape(machine_text(report)) + "</p>\n";
  const std::string during = conditions_text(obj(report, "conditions"));
  if (!during.empty()) page += "<p class=\"muted\">During the run: " + html_escape(during) + "</p>\n";
  page += fmt::format(
      "<p class=\"hint\">gpudoc {}. Each figure is the median of its samples, with min–max and the coefficient of "
      "variation (CV above 2 % in red). The plots show every sample in the order measured: a drift or a level shift "
      "shows there where the CV only says \"spread\". Drag on a plot to zoom in, double-click to zoom out. Method and "
      "formulas: docs/methodology.md.</p>\n",
      core::kVersion);
  page += "<h2>Results</h2>\n" + table_html(es);

  json samples = json::array();
  json curves = json::array();
  std::string sample_divs, curve_divs, matrices;
  for (std::size_t i = 0; i < es.size(); ++i) {
    const Entry& e = es[i];
    if (e.result == nullptr || e.status != "ok") continue;
    const json& r = *e.result;
    const json& params = obj(r, "params");
    if (const auto v = numbers(r, "samples"); v && v->size() >= 2) {
      json s = {{"i", i},
                {"key", e.key},
                {"unit", str(r, "unit")},
                {"values", *v},
                {"median", num(r, "median").value_or(0)},
                {"cv", num(r, "cv").value_or(0)}};
      if (const auto cpu = numbers(params, "host_thread_cpu_us"); cpu && cpu->size() == v->size()) s["host_cpu"] = *cpu;
      samples.push_back(std::move(s));
      sample_divs += fmt::format("<div id=\"samples-{}\"></div>\n", i);
    }
    if (const auto it = params.find("curve"); it != params.end() && it->is_array()) {
      json bytes = json::array(), bus = json::array(), alg = json::array();
      std::string rows;
      for (const auto& p : *it) {
        const auto b = num(p, "bytes"), bb = num(p, "busbw_gb_per_s"), ab = num(p, "algbw_gb_per_s");
        if (!b || *b <= 0 || !bb || !ab) continue;
        bytes.push_back(*b);
        bus.push_back(*bb);
        alg.push_back(*ab);
        rows += fmt::format(
            "<tr><td class=\"num\">{:.0f}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
            "<td class=\"num\">{}</td></tr>\n",
            *b, figure(num(p, "time_us")), figure(*ab), figure(*bb));
      }
      if (!bytes.empty()) {
        curves.push_back({{"i", i}, {"key", e.key}, {"bytes", bytes}, {"busbw", bus}, {"algbw", alg}});
        curve_divs += fmt::format(
            "<div><div id=\"curve-{}\"></div><details><summary><code>{}</code> values{}</summary><table><tr><th>bytes"
            "</th><th>time µs</th><th>algbw GB/s</th><th>busbw GB/s</th></tr>\n{}</table></details></div>\n",
            i, html_escape(e.key),
            str(params, "formula").empty() ? "" : " (" + html_escape(str(params, "formula")) + ")", rows);
      }
    }
    if (const auto it = params.find("matrix"); it != params.end() && it->is_object())
      matrices += matrix_html(e.key, *it);
  }
  if (!curve_divs.empty())
    page += "<h2>NCCL collectives by message size</h2>\n<div class=\"plots\">\n" + curve_divs + "</div>\n";
  if (!matrices.empty()) page += "<h2>GPU pairs</h2>\n" + matrices;
  if (!sample_divs.empty()) page += "<h2>Samples</h2>\n<div class=\"plots\">\n" + sample_divs + "</div>\n";
  if (es.empty()) page += "<p>No results in this report.</p>\n";

  page += html_page_end({{"samples", samples}, {"curves", curves}}, report_file("bench.js"), assets);
  return page;
}

core::Result<std::string> render_bench_html(const json& report) {
  auto assets = web_assets();
  if (!assets) return core::Error(core::ErrorKind::kEnvironment, std::string(kWebAssetsMissing));
  return render_bench_html(report, *assets);
}

core::Result<SavedBenchPage> render_saved_bench_html(const std::string& text, const std::string& name) {
  nlohmann::json report = nlohmann::json::parse(text, nullptr, false);
  if (report.is_discarded()) return core::Error(core::ErrorKind::kBadInput, fmt::format("{}: not JSON", name));
  auto page = render_bench_html(report);
  if (!page) {
    // A file that is not a report is named; a missing plot library says so itself.
    if (page.error().kind() == core::ErrorKind::kBadInput)
      return core::Error(core::ErrorKind::kBadInput, fmt::format("{}: {}", name, page.error().message()));
    return page.error();
  }
  return SavedBenchPage{std::move(*page), report["results"].size()};
}

}  // namespace gpudoc::view
