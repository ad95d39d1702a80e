// The fleet report as text and JSON (report.hpp).
#include <cmath>
#include <ctime>

#include <fmt/format.h>

#include "core/text.hpp"
#include "fleet/report.hpp"

namespace gpudoc::fleet {
namespace {

double hours(double s) { return s / 3600; }
double share(double part, double whole) { return whole > 0 ? part / whole : 0; }

std::string money_text(const Money& m) {
  std::string out;
  for (const auto& [cur, v] : m)
    out += fmt::format("{}{:.2f} {}", out.empty() ? "" : " + ", v, core::terminal_safe(cur));  // a label's value
  return out.empty() ? "-" : out;
}

std::string day(double unix_s) {
  const auto t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

std::string change(double now, double before) {
  if (before <= 0) return "-";
  return fmt::format("{:+.0f} %", 100 * (now - before) / before);
}

nlohmann::json money_json(const Money& m) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [cur, v] : m) j[cur.empty() ? "?" : cur] = v;
  return j;
}

nlohmann::json totals_json(const Totals& t) {
  return {{"gpu_hours", hours(t.observed_s)},
          {"observed_s", t.observed_s},
          {"useful_s", t.useful_s},
          {"lost_s", t.lost_s},
          {"unexplained_s", t.unexplained_s},
          {"useful_share", share(t.useful_s, t.observed_s)},
          {"energy_j", t.energy_j},
          {"energy_kwh", t.energy_j / 3.6e6},
          {"lost_energy_j", t.lost_energy_j},
          {"money", money_json(t.money)},
          {"money_lost", money_json(t.money_lost)},
          {"unpriced_s", t.unpriced_s}};
}

nlohmann::json groups_json(const std::vector<Group>& v) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& g : v)
    a.push_back({{"key", g.key},
                 {"observed_s", g.observed_s},
                 {"useful_s", g.useful_s},
                 {"lost_s", g.lost_s},
                 {"money_lost", money_json(g.money_lost)}});
  return a;
}

void text_groups(std::string& out, const std::string& title, const std::vector<Group>& v) {
  if (v.empty()) return;
  out += fmt::format("  {}\n    {:<32} {:>10} {:>7} {:>10}  {}\n", title, "", "GPU-h", "useful", "lost GPU-h",
                     "money lost");
  for (const auto& g : v)
    out += fmt::format("    {:<32} {:>10.2f} {:>6.0f}% {:>10.2f}  {}\n",
                       core::terminal_safe(g.key.empty() ? "(none)" : g.key), hours(g.observed_s),
                       100 * share(g.useful_s, g.observed_s), hours(g.lost_s), money_text(g.money_lost));
}

}  // namespace

nlohmann::json to_json(const FleetReport& r) {
  nlohmann::json causes = nlohmann::json::array();
  for (const auto& c : r.causes)
    causes.push_back({{"id", c.id},
                      {"title", c.title},
                      {"gpu_s", c.gpu_s},
                      {"gpu_hours", hours(c.gpu_s)},
                      {"share", share(c.gpu_s, r.now.observed_s)},
                      {"energy_j", c.energy_j},
                      {"money", money_json(c.money)},
                      {"previous_gpu_s", c.previous_gpu_s},
                      {"next_step", c.next_step}});
  return {{"schema", 1},
          {"prometheus", r.url},
          {"start_unix_s", r.start_s},
          {"end_unix_s", r.end_s},
          {"by", r.by},
          {"gpus", r.gpus},
          {"nodes", r.nodes},
          {"totals", totals_json(r.now)},
          {"previous", totals_json(r.previous)},
          {"causes", std::move(causes)},
          {"groups", groups_json(r.groups)},
          {"worst_jobs", groups_json(r.worst_jobs)},
          {"vanished_nodes", r.vanished},
          {"counter_resets", r.resets},
          {"warnings", r.warnings},
          {"notes", r.notes},
          {"timeline",
           {{"step_s", r.timeline.step_s},
            {"end_unix_s", r.timeline.end_s},
            {"useful_s", r.timeline.useful_s},
            {"lost_s", r.timeline.lost_s},
            {"unexplained_s", r.timeline.unexplained_s}}}};
}

std::string render_text(const FleetReport& r) {
  const Totals& t = r.now;
  std::string out = fmt::format("Fleet {} to {}: {} GPUs on {} nodes, {:.1f} GPU-h observed ({})\n", day(r.start_s),
                                day(r.end_s), r.gpus, r.nodes.size(), hours(t.observed_s), core::terminal_safe(r.url));
  out +=
      fmt::format("  useful {:.0f} % ({:.1f} GPU-h), lost to findings {:.0f} % ({:.1f} GPU-h), unexplained {:.0f} %\n",
                  100 * share(t.useful_s, t.observed_s), hours(t.useful_s), 100 * share(t.lost_s, t.observed_s),
                  hours(t.lost_s), 100 * share(t.unexplained_s, t.observed_s));
  out += fmt::format("  energy {:.1f} kWh ({:.1f} kWh lost); money {} ({} lost)\n", t.energy_j / 3.6e6,
                     t.lost_energy_j / 3.6e6, money_text(t.money), money_text(t.money_lost));
  if (!r.causes.empty()) {
    out += fmt::format("  top causes of waste\n    {:<20} {:>10} {:>6} {:>10} {:>14}  {}\n", "", "GPU-h", "share",
                       "kWh", "money", "vs before");
    for (const auto& c : r.causes) {
      out += fmt::format("    {:<20} {:>10.2f} {:>5.1f}% {:>10.2f} {:>14}  {}\n", core::terminal_safe(c.id),
                         hours(c.gpu_s), 100 * share(c.gpu_s, t.observed_s), c.energy_j / 3.6e6, money_text(c.money),
                         change(c.gpu_s, c.previous_gpu_s));
      if (!c.next_step.empty()) out += fmt::format("      next: {}\n", c.next_step);
    }
  }
  text_groups(out, "by " + r.by, r.groups);
  text_groups(out, "worst jobs (most GPU time lost)", r.worst_jobs);
  if (r.previous.observed_s > 0)
    out += fmt::format("  against the period before: GPU-h {}, useful share {:+.1f} points, lost GPU-h {}\n",
                       change(t.observed_s, r.previous.observed_s),
                       100 * (share(t.useful_s, t.observed_s) - share(r.previous.useful_s, r.previous.observed_s)),
                       change(t.lost_s, r.previous.lost_s));
  for (const auto& w : r.warnings) out += fmt::format("  warning (Prometheus): {}\n", core::terminal_safe(w));
  for (const auto& n : r.notes) out += fmt::format("  note: {}\n", core::terminal_safe(n));
  return out;
}

}  // namespace gpudoc::fleet
