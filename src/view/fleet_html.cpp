// The fleet report's HTML page (fleet_html.hpp).
#include "view/fleet_html.hpp"

#include <ctime>

#include <fmt/format.h>

#include "view/html_page.hpp"

namespace gpudoc::view {
namespace {

double share(double part, double whole) { return whole > 0 ? part / whole : 0; }

std::string day(double unix_s) {
  const auto t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

// A figure of the JSON document: its path there, its value exactly, and `value * scale` rounded to
// `decimals` for reading.
std::string cell(const std::string& path, double value, int decimals, double scale = 1, const char* suffix = "") {
  std::string attrs = fmt::format(" data-figure=\"{}\" data-value=\"{}\"", html_escape(path), value);
  if (scale != 1) attrs += fmt::format(" data-scale=\"{}\"", scale);
  return fmt::format("<td class=\"num\"{}>{:.{}f}{}</td>", attrs, value * scale, decimals, suffix);
}

std::string money_cells(const std::string& path, const fleet::Money& m) {
  if (m.empty()) return "<td class=\"num\">-</td>";
  std::string out = "<td class=\"num\">";
  for (const auto& [cur, v] : m) {
    const std::string key = cur.empty() ? "?" : cur;
    out += fmt::format("<span data-figure=\"{}\" data-value=\"{}\">{:.2f}</span> {}<br>", html_escape(path + "." + key),
                       v, v, html_escape(key));
  }
  return out + "</td>";
}

std::string change(double now, double before) {
  return before > 0 ? fmt::format("{:+.0f} %", 100 * (now - before) / before) : "-";
}

void totals_table(std::string& page, const fleet::FleetReport& r) {
  const fleet::Totals &t = r.now, &p = r.previous;
  page += "<table class=\"figures\"><tr><th></th><th>this period</th><th>the period before</th><th>change</th></tr>\n";
  struct Row {
    const char* title;
    const char* key;
    double now, before, scale;
    int decimals;
  };
  for (const Row& row : {Row{"GPU-hours observed", "gpu_hours", t.observed_s / 3600, p.observed_s / 3600, 1, 2},
                         Row{"useful GPU-hours", "useful_s", t.useful_s, p.useful_s, 1.0 / 3600, 2},
                         Row{"GPU-hours lost to named causes", "lost_s", t.lost_s, p.lost_s, 1.0 / 3600, 2},
                         Row{"GPU-hours unexplained", "unexplained_s", t.unexplained_s, p.unexplained_s, 1.0 / 3600, 2},
                         Row{"useful share (%)", "useful_share", share(t.useful_s, t.observed_s),
                             share(p.useful_s, p.observed_s), 100, 1},
                         Row{"energy (kWh)", "energy_kwh", t.energy_j / 3.6e6, p.energy_j / 3.6e6, 1, 2},
                         Row{"energy lost (kWh)", "lost_energy_j", t.lost_energy_j, p.lost_energy_j, 1 / 3.6e6, 2},
                         Row{"GPU-hours without a price", "unpriced_s", t.unpriced_s, p.unpriced_s, 1.0 / 3600, 2}})
    page += fmt::format("<tr><th>{}</th>{}{}<td class=\"num\">{}</td></tr>\n", row.title,
                        cell(std::string("totals.") + row.key, row.now, row.decimals, row.scale),
                        cell(std::string("previous.") + row.key, row.before, row.decimals, row.scale),
                        change(row.now, row.before));
  page += fmt::format("<tr><th>money</th>{}{}<td></td></tr>\n", money_cells("totals.money", t.money),
                      money_cells("previous.money", p.money));
  page += fmt::format("<tr><th>money lost to named causes</th>{}{}<td></td></tr>\n</table>\n",
                      money_cells("totals.money_lost", t.money_lost), money_cells("previous.money_lost", p.money_lost));
}

void causes_table(std::string& page, const fleet::FleetReport& r) {
  page += "<h2>The top causes of waste</h2>\n";
  if (r.causes.empty()) {
    page += "<p>No GPU time was lost to a named cause in the period.</p>\n";
    return;
  }
  page +=
      "<div id=\"causes\" class=\"bars\"></div>\n<table class=\"figures\"><tr><th>cause</th><th>GPU-h</th>"
      "<th>share of the GPU time</th><th>energy (kWh)</th><th>money</th><th>GPU-h the period before</th>"
      "<th>next step</th></tr>\n";
  for (std::size_t i = 0; i < r.causes.size(); ++i) {
    const auto& c = r.causes[i];
    const std::string at = fmt::format("causes.{}.", i);
    page += fmt::format("<tr><th><code>{}</code><br><span class=\"hint\">{}</span></th>{}{}{}{}{}<td>{}</td></tr>\n",
                        html_escape(c.id), html_escape(c.title), cell(at + "gpu_hours", c.gpu_s / 3600, 2),
                        cell(at + "share", share(c.gpu_s, r.now.observed_s), 1, 100, " %"),
                        cell(at + "energy_j", c.energy_j, 2, 1 / 3.6e6), money_cells(at + "money", c.money),
                        cell(at + "previous_gpu_s", c.previous_gpu_s, 2, 1.0 / 3600), html_escape(c.next_step));
  }
  page += "</table>\n";
}

void groups_table(std::string& page, const std::string& title, const char* path, const std::string& plot_id,
                  const std::vector<fleet::Group>& groups) {
  page += "<h2>" + html_escape(title) + "</h2>\n";
  if (groups.empty()) {
    page += "<p>None in the period.</p>\n";
    return;
  }
  if (!plot_id.empty()) page += "<div id=\"" + plot_id + "\" class=\"bars\"></div>\n";
  page +=
      "<table class=\"figures\"><tr><th></th><th>GPU-h</th><th>useful GPU-h</th><th>useful share</th>"
      "<th>lost GPU-h</th><th>money lost</th></tr>\n";
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const auto& g = groups[i];
    const std::string at = fmt::format("{}.{}.", path, i);
    page +=
        fmt::format("<tr><th>{}</th>{}{}<td class=\"num\">{:.0f} %</td>{}{}</tr>\n",
                    html_escape(g.key.empty() ? "(none)" : g.key), cell(at + "observed_s", g.observed_s, 2, 1.0 / 3600),
                    cell(at + "useful_s", g.useful_s, 2, 1.0 / 3600), 100 * share(g.useful_s, g.observed_s),
                    cell(at + "lost_s", g.lost_s, 2, 1.0 / 3600), money_cells(at + "money_lost", g.money_lost));
  }
  page += "</table>\n";
}

void notes_list(std::string& page, const fleet::FleetReport& r) {
  if (r.notes.empty() && r.warnings.empty()) return;
  page += "<h2>Notes</h2>\n<ul>\n";
  for (const auto& w : r.warnings) page += "<li class=\"warning\">Prometheus warned: " + html_escape(w) + "</li>\n";
  for (const auto& n : r.notes) page += "<li>" + html_escape(n) + "</li>\n";
  page += "</ul>\n";
}

}  // namespace

core::Result<std::string> fleet_html(const fleet::FleetReport& r) {
  auto assets = web_assets();
  if (!assets) return core::Error(core::ErrorKind::kEnvironment, std::string(kWebAssetsMissing));
  const fleet::Totals& t = r.now;
  std::string page = html_page_start(fmt::format("gpudoc fleet report: {} to {}", day(r.start_s), day(r.end_s)),
                                     *assets, report_file("fleet.css"));
  page += fmt::format(
      "<p class=\"verdict\">{} GPUs on {} nodes, {:.1f} GPU-hours: {:.0f} % useful, {:.0f} % lost to named causes, "
      "{:.0f} % unexplained.</p>\n",
      r.gpus, r.nodes.size(), t.observed_s / 3600, 100 * share(t.useful_s, t.observed_s),
      100 * share(t.lost_s, t.observed_s), 100 * share(t.unexplained_s, t.observed_s));
  page += fmt::format(
      "<p class=\"hint\">From the counters of <code>gpudoc serve</code> read from Prometheus at <code>{}</code>, "
      "aggregated there with increase() over the period; useful + named causes + unexplained = the GPU time "
      "observed (docs/cost.md, \"A fleet\").</p>\n",
      html_escape(r.url));
  totals_table(page, r);
  page += "<h2>GPU time over the period</h2>\n<div id=\"timeline\"></div>\n";
  page += fmt::format(
      "<p class=\"hint\">Each bar is {:.0f} minutes of the fleet's GPU time: useful, lost to named causes, "
      "unexplained.</p>\n",
      r.timeline.step_s / 60);
  causes_table(page, r);
  groups_table(page, "By " + r.by, "groups", "groups-plot", r.groups);
  groups_table(page, "The worst jobs (the most GPU time lost)", "worst_jobs", "", r.worst_jobs);
  notes_list(page, r);
  page += html_page_end(fleet::to_json(r), report_file("fleet.js"), *assets);
  return page;
}

}  // namespace gpudoc::view
