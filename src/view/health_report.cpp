#include "view/health_report.hpp"

#include <fmt/format.h>

#include <cmath>
#include <ctime>
#include <limits>
#include <optional>

#include "core/text.hpp"
#include "view/html_page.hpp"
#include "view/web_assets.hpp"

namespace gpudoc::view {
namespace {

std::string when(double unix_s) {
  const std::time_t t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M", &tm);
  return buf;
}

}  // namespace

const std::vector<std::pair<std::string, std::string>>& health_series_names() {
  static const std::vector<std::pair<std::string, std::string>> k = {
      {"sm_clock_mhz", "SM clock under load (MHz)"},
      {"temperature_celsius", "hottest temperature (C)"},
      {"power_watts", "peak power (W)"},
      {"ecc_volatile_corrected", "ECC corrected, volatile"},
      {"ecc_volatile_uncorrected", "ECC uncorrected, volatile"},
      {"ecc_aggregate_uncorrected", "ECC uncorrected, aggregate"},
      {"remapped_rows_uncorrected", "rows remapped (uncorrectable)"},
      {"nvlink_crc_errors", "NVLink CRC errors"},
      {"xid_count", "XIDs"},
  };
  return k;
}

HealthHistory build_health_history(const std::vector<store::StoredResult>& rows) {
  HealthHistory h;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double t = static_cast<double>(rows[i].time_unix_ns) * 1e-9;
    h.times_s.push_back(t);
    for (auto& [gpu, by_name] : h.series)
      for (auto& [name, v] : by_name) v.push_back(nan);
    const auto& checks = rows[i].payload.contains("checks") ? rows[i].payload["checks"] : nlohmann::json::array();
    for (const auto& c : checks) {
      const int gpu = c.contains("gpu") && c["gpu"].is_number_integer() ? c["gpu"].get<int>() : -1;
      const std::string status = c.value("status", "");
      if (status == "fail" || status == "warn")
        h.problems.push_back(fmt::format("{} {} {} {}: {}", when(t), gpu >= 0 ? fmt::format("GPU {}", gpu) : "node",
                                         c.value("check", ""), status, c.value("evidence", "")));
      if (!c.contains("values")) continue;
      for (const auto& v : c["values"]) {
        const std::string name = v.value("name", "");
        bool wanted = false;
        for (const auto& [n, label] : health_series_names()) wanted = wanted || n == name;
        if (!wanted || !v.contains("value") || !v["value"].is_number()) continue;
        auto& vec = h.series[gpu][name];
        if (vec.size() < i + 1) vec.resize(i + 1, nan);
        vec[i] = v["value"].get<double>();
      }
    }
  }
  for (auto& [gpu, by_name] : h.series)
    for (auto& [name, v] : by_name) v.resize(h.times_s.size(), nan);
  return h;
}

std::string render_health_history_text(const HealthHistory& h, const std::string& since) {
  std::string out = fmt::format("gpudoc report — {} health runs in the last {}", h.times_s.size(), since);
  if (!h.times_s.empty()) out += fmt::format(" ({} .. {} UTC)", when(h.times_s.front()), when(h.times_s.back()));
  out += "\n";
  for (const auto& [gpu, by_name] : h.series) {
    out += gpu >= 0 ? fmt::format("\nGPU {}\n", gpu) : std::string("\nnode\n");
    for (const auto& [name, label] : health_series_names()) {
      auto it = by_name.find(name);
      if (it == by_name.end()) continue;
      std::vector<std::optional<double>> vals;
      double lo = 0;
      double hi = 0;
      bool any = false;
      std::optional<double> last;
      for (double v : it->second) {
        if (std::isnan(v)) {
          vals.push_back(std::nullopt);
          continue;
        }
        vals.push_back(v);
        lo = any ? std::min(lo, v) : v;
        hi = any ? std::max(hi, v) : v;
        any = true;
        last = v;
      }
      if (!any) continue;
      out += fmt::format("  {:<32} {}  min {:g} max {:g} last {:g}\n", label,
                         core::sparkline(vals, lo, hi > lo ? hi : lo + 1), lo, hi, *last);
    }
  }
  out += fmt::format("\nwarnings and failures ({}):\n", h.problems.size());
  const std::size_t from = h.problems.size() > 30 ? h.problems.size() - 30 : 0;
  if (from > 0) out += fmt::format("  ... {} earlier\n", from);
  for (std::size_t i = from; i < h.problems.size(); ++i) out += "  " + h.problems[i] + "\n";
  return out;
}

core::Result<std::string> render_health_history_html(const HealthHistory& h, const std::string& since) {
  auto assets = web_assets();
  if (!assets) return core::Error(core::ErrorKind::kEnvironment, std::string(kWebAssetsMissing));
  nlohmann::json plots = nlohmann::json::array();
  for (const auto& [gpu, by_name] : h.series)
    for (const auto& [name, label] : health_series_names()) {
      auto it = by_name.find(name);
      if (it == by_name.end()) continue;
      nlohmann::json ys = nlohmann::json::array();
      for (double v : it->second) ys.push_back(std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr));
      plots.push_back(
          {{"title", (gpu >= 0 ? fmt::format("GPU {}: ", gpu) : std::string("node: ")) + label}, {"y", ys}});
    }
  std::string page = html_page_start("gpudoc health report", *assets, report_file("health.css"));
  page += fmt::format(
      "<p>{} runs in the last {}. Drag on a plot to zoom in, double-click to "
      "zoom out.</p>\n<div id=\"plots\"></div>\n",
      h.times_s.size(), html_escape(since));
  page += fmt::format("<h2>Warnings and failures ({})</h2>\n<ul>", h.problems.size());
  for (const auto& p : h.problems) page += "<li>" + html_escape(p) + "</li>";
  page += "</ul>\n";
  page += html_page_end({{"t", h.times_s}, {"plots", plots}}, report_file("health.js"), *assets);
  return page;
}

nlohmann::json to_json(const HealthHistory& h) {
  nlohmann::json j = {{"runs", h.times_s.size()}, {"times_unix_s", h.times_s}, {"problems", h.problems}};
  nlohmann::json series = nlohmann::json::object();
  for (const auto& [gpu, by_name] : h.series)
    for (const auto& [name, v] : by_name) {
      nlohmann::json ys = nlohmann::json::array();
      for (double x : v) ys.push_back(std::isnan(x) ? nlohmann::json(nullptr) : nlohmann::json(x));
      series[gpu >= 0 ? std::to_string(gpu) : "node"][name] = ys;
    }
  j["series"] = series;
  return j;
}

}  // namespace gpudoc::view
