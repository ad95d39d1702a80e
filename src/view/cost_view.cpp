#include "view/cost_view.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/text.hpp"
#include "view/html_page.hpp"

namespace gpudoc::view {
namespace {

// Three significant figures in fixed notation: 0.00709, 25.5, 812.
std::string sig3(double v) {
  if (!std::isfinite(v)) return "?";
  if (v == 0) return "0";
  int magnitude = static_cast<int>(std::floor(std::log10(std::abs(v))));
  // 0.9997 rounds up to 1.00: one decade more, one decimal fewer.
  if (std::abs(v) * std::pow(10.0, 2 - magnitude) >= 999.5) ++magnitude;
  const int decimals = std::clamp(2 - magnitude, 0, 12);
  return fmt::format("{:.{}f}", v, decimals);
}

std::string scaled(double v, const char* const* units, const double* steps, int n) {
  int i = 0;
  // 999.7 J reads 1.00 kJ, not 1000 J: the unit is chosen after the rounding to three figures.
  while (i + 1 < n && std::abs(v) >= steps[i + 1] * 0.9995) ++i;
  return sig3(v / steps[i]) + " " + units[i];
}

std::string energy_words(const std::string& method) {
  std::string words = method.rfind("counter+power", 0) == 0
                          ? "NVML energy counter, power readings where it was not read"
                      : method.rfind("counter", 0) == 0 ? "NVML energy counter"
                      : method.rfind("power", 0) == 0   ? "integral of the power readings"
                      : method == "mixed"               ? "counter or power readings, by GPU"
                                                        : "not measured";
  if (method.find("+estimate") != std::string::npos) words += "; some time estimated";
  return words;
}

std::string share(cost::Micros part, cost::Micros total) {
  return total > 0 ? fmt::format("{:.0f} %", 100.0 * static_cast<double>(part) / static_cast<double>(total)) : "-";
}

std::string energy_cell(const std::optional<cost::Millijoules>& e) {
  return e ? format_energy(static_cast<double>(*e) / 1000) : "-";
}

std::string money_cell(const std::optional<double>& m, const std::optional<std::string>& currency) {
  return m ? format_money(*m, currency.value_or("")) : "-";
}

std::string headline(const cost::JobCost& job, const cost::Summary& s) {
  const std::size_t gpus = job.gpus.size() / static_cast<std::size_t>(std::max(1, job.runs));
  std::string h =
      job.runs > 1 ? fmt::format("{} runs of {} GPU{}", job.runs, gpus, gpus == 1 ? "" : "s")
                   : fmt::format("{} GPU{} × {}", gpus, gpus == 1 ? "" : "s", format_duration(job.end_s - job.start_s));
  h += fmt::format(" ({}): {} = {} GPU-h", job.span, format_duration(cost::seconds(s.total.time)),
                   sig3(static_cast<double>(s.total.time) / cost::kMicrosPerHour));
  if (s.total.energy)
    h += fmt::format(", {} = {} kWh ({})", energy_cell(s.total.energy),
                     sig3(static_cast<double>(*s.total.energy) / cost::kMillijoulesPerKwh),
                     energy_words(s.energy_method));
  else
    h += ", energy not measured";
  if (s.total.money) h += ", " + money_cell(s.total.money, s.currency);
  if (s.total.co2_g) h += ", " + format_co2(*s.total.co2_g) + " CO2";
  return h;
}

// How many units a per-unit line speaks of: one, or a thousand or a million when one unit's GPU
// time is under a millisecond (a token's few nanoseconds read better per million), never more
// than the run reported.
double units_per_line(const cost::PerUnit& u) {
  double n = 1;
  for (double scale : {1e3, 1e6})
    if (u.gpu_s * n < 1e-3 && u.count >= scale) n = scale;
  return n;
}

std::string per_unit_line(const cost::PerUnit& u, const std::optional<std::string>& currency) {
  const double n = units_per_line(u);
  const std::string per = n == 1 ? u.unit : fmt::format("{} {}s", n == 1e3 ? "thousand" : "million", u.unit);
  std::string l = fmt::format("per {}: {} of GPU time", per, format_duration(u.gpu_s * n));
  if (u.energy_j) l += ", " + format_energy(*u.energy_j * n);
  if (u.money) l += ", " + format_money(*u.money * n, currency.value_or(""));
  if (u.co2_g) l += ", " + format_co2(*u.co2_g * n) + " CO2";
  const bool whole = u.count == std::floor(u.count) && u.count < 1e15;
  return l + fmt::format(" ({} {}s reported)", whole ? fmt::format("{:.0f}", u.count) : sig3(u.count), u.unit);
}

std::string finding_where(const cost::FindingCost& f, int runs) {
  std::string gpus;
  for (int g : f.gpus) gpus += (gpus.empty() ? "" : ", ") + std::to_string(g);
  return fmt::format("{}GPU {}, {:.1f}–{:.1f} s", runs > 1 ? fmt::format("run {}, ", f.run) : std::string(), gpus,
                     f.window_start_s, f.window_end_s);
}

}  // namespace

std::string format_duration(double s) {
  if (!std::isfinite(s)) return "?";
  if (std::abs(s) < 1e-3 && s != 0) return sig3(s * 1e6) + " µs";
  if (std::abs(s) < 1) return sig3(s * 1000) + " ms";
  if (std::abs(s) < 120) return sig3(s) + " s";
  if (std::abs(s) < 7200) return sig3(s / 60) + " min";
  return sig3(s / 3600) + " h";
}

std::string format_energy(double j) {
  static const char* const units[] = {"mJ", "J", "kJ", "MJ", "GJ"};
  static const double steps[] = {1e-3, 1, 1e3, 1e6, 1e9};
  return scaled(j, units, steps, 5);
}

std::string format_co2(double g) {
  static const char* const units[] = {"g", "kg", "t"};
  static const double steps[] = {1, 1e3, 1e6};
  return scaled(g, units, steps, 3);
}

std::string format_money(double amount, const std::string& currency) {
  const std::string n = std::abs(amount) >= 1 ? fmt::format("{:.2f}", amount) : sig3(amount);
  return currency.empty() ? n : n + " " + currency;
}

std::string render_cost(const cost::JobCost& job, const cost::PriceBook& prices) {
  const cost::Summary s = cost::summarize(job, prices);
  std::string out = "Cost: " + headline(job, s) + "\n";
  std::vector<std::vector<std::string>> rows{{"part", "GPU time", "share", "energy", "money"}};
  for (const cost::Line& l : s.parts) {
    if (l.time == 0 && l.part != "useful" && l.part != "unexplained") continue;  // a cause that took nothing
    rows.push_back({l.part, format_duration(cost::seconds(l.time)), share(l.time, s.total.time), energy_cell(l.energy),
                    money_cell(l.money, s.currency)});
  }
  const std::string table = core::render_table(rows);
  for (std::size_t at = 0, nl = 0; at < table.size(); at = nl + 1) {
    nl = table.find('\n', at);
    if (nl == std::string::npos) nl = table.size();
    out += "  " + table.substr(at, nl - at) + "\n";
  }
  for (std::size_t i = 0; i < job.findings.size() && i < s.findings.size(); ++i) {
    const cost::Line& l = s.findings[i];
    out += fmt::format("  {} ({}) lost {}", job.findings[i].id, finding_where(job.findings[i], job.runs),
                       format_duration(cost::seconds(l.time)));
    if (l.energy) out += ", " + energy_cell(l.energy);
    if (l.money) out += ", " + money_cell(l.money, s.currency);
    out += "\n";
  }
  for (const cost::PerUnit& u : s.per_unit) out += "  " + per_unit_line(u, s.currency) + "\n";
  for (const std::string& u : s.unpriced) out += "  " + core::terminal_safe(u) + "\n";
  for (const std::string& n : job.notes) out += "  note: " + core::terminal_safe(n) + "\n";
  return out;
}

std::string cost_html(const cost::JobCost& job, const cost::PriceBook& prices) {
  const cost::Summary s = cost::summarize(job, prices);
  std::string out = "<div class=\"cost\"><h3>Cost</h3>\n<p>" + html_escape(headline(job, s)) + "</p>\n";
  out += "<table><tr><th>part</th><th>GPU time</th><th>share</th><th>energy</th><th>money</th></tr>\n";
  for (const cost::Line& l : s.parts)
    out += fmt::format(
        "<tr><td><code>{}</code></td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td></tr>\n",
        html_escape(l.part), html_escape(format_duration(cost::seconds(l.time))), share(l.time, s.total.time),
        html_escape(energy_cell(l.energy)), html_escape(money_cell(l.money, s.currency)));
  out += "</table>\n<ul>";
  for (std::size_t i = 0; i < job.findings.size() && i < s.findings.size(); ++i) {
    const cost::Line& l = s.findings[i];
    out += fmt::format("<li><code>{}</code> ({}) lost {}{}{}</li>", html_escape(job.findings[i].id),
                       html_escape(finding_where(job.findings[i], job.runs)),
                       html_escape(format_duration(cost::seconds(l.time))),
                       l.energy ? ", " + html_escape(energy_cell(l.energy)) : std::string(),
                       l.money ? ", " + html_escape(money_cell(l.money, s.currency)) : std::string());
  }
  for (const cost::PerUnit& u : s.per_unit) out += "<li>" + html_escape(per_unit_line(u, s.currency)) + "</li>";
  for (const std::string& u : s.unpriced) out += "<li class=\"muted\">" + html_escape(u) + "</li>";
  for (const std::string& n : job.notes) out += "<li class=\"muted\">note: " + html_escape(n) + "</li>";
  out += "</ul></div>\n";
  return out;
}

void add_costs(nlohmann::json& document, std::span<const diagnose::Diagnosed> items, const cost::PriceBook& prices) {
  for (std::size_t i = 0; i < items.size(); ++i) {
    auto c = cost::to_json(cost::cost_of_trace(items[i].trace, items[i].diagnosis, {}), prices);
    if (items.size() == 1)
      document["cost"] = std::move(c);
    else if (document.contains("traces") && i < document["traces"].size())
      document["traces"][i]["cost"] = std::move(c);
  }
}

}  // namespace gpudoc::view
