// A job's cost priced (job.hpp: summarize, to_json): each GPU's parts at that GPU's prices.
#include <algorithm>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "cost/job.hpp"

namespace gpudoc::cost {
namespace {

struct Pricing {
  std::vector<GpuPrices> gpu;  // per JobCost::gpus
  bool energy_known = true;    // every GPU's
  bool time_priced = true;     // a GPU-hour price for every GPU
  bool energy_priced = true;   // a kWh price for every GPU, and every energy known
  bool co2 = true;             // a CO2 intensity for every GPU, and every energy known
};

Pricing pricing_of(const JobCost& job, const PriceBook& book) {
  Pricing p;
  for (const GpuCost& g : job.gpus) {
    p.gpu.push_back(book.for_gpu(job.host, g.name));
    const GpuPrices& x = p.gpu.back();
    p.energy_known = p.energy_known && g.account.energy.has_value();
    p.time_priced = p.time_priced && x.gpu_hour.has_value();
    p.energy_priced = p.energy_priced && x.kwh.has_value();
    p.co2 = p.co2 && x.co2_g_per_kwh.has_value();
  }
  const bool any = !job.gpus.empty();
  p.time_priced = p.time_priced && any;
  p.energy_priced = p.energy_priced && p.energy_known && any;
  p.co2 = p.co2 && p.energy_known && any;
  return p;
}

// One line from each GPU's share (index into job.gpus, the share).
Line line_of(std::string part, const std::vector<std::pair<std::size_t, Share>>& shares, const Pricing& p,
             Summary* components = nullptr) {
  Line l;
  l.part = std::move(part);
  Millijoules energy = 0;
  double money_t = 0, money_e = 0, co2 = 0;
  for (const auto& [i, s] : shares) {
    const GpuPrices& x = p.gpu[i];
    l.time += s.time;
    energy += s.energy;
    const double kwh_at_meter = static_cast<double>(s.energy) / kMillijoulesPerKwh * x.pue.value_or(1.0);
    if (p.time_priced) money_t += static_cast<double>(s.time) / kMicrosPerHour * *x.gpu_hour;
    if (p.energy_priced) money_e += kwh_at_meter * *x.kwh;
    if (p.co2) co2 += kwh_at_meter * *x.co2_g_per_kwh;
  }
  if (p.energy_known) l.energy = energy;
  if (p.time_priced || p.energy_priced) l.money = money_t + money_e;
  if (p.co2) l.co2_g = co2;
  if (components != nullptr) {
    if (p.time_priced) components->money_gpu_time = money_t;
    if (p.energy_priced) components->money_energy = money_e;
  }
  return l;
}

std::vector<std::string> unpriced(const JobCost& job, const PriceBook& book, const Pricing& p) {
  std::vector<std::string> out;
  if (book.empty()) {
    out.emplace_back(
        "money needs a price: --price-gpu-hour (a cloud rate, or the purchase amortised per GPU-hour) and/or "
        "--price-kwh with --currency, GPUDOC_PRICE_GPU_HOUR and the like, or a prices file (docs/cost.md)");
    return out;
  }
  auto first_without = [&](auto has) -> std::string {
    for (std::size_t i = 0; i < job.gpus.size(); ++i)
      if (!has(p.gpu[i]))
        return fmt::format("GPU {}{}", job.gpus[i].gpu, job.gpus[i].name.empty() ? "" : " (" + job.gpus[i].name + ")");
    return "";
  };
  if (!p.time_priced && !job.gpus.empty())
    out.push_back(fmt::format("GPU time not priced: no GPU-hour price for {}",
                              first_without([](const GpuPrices& x) { return x.gpu_hour.has_value(); })));
  if (!p.energy_known)
    out.emplace_back("energy not priced nor turned into CO2: a GPU's energy is not known");
  else if (!p.energy_priced && !job.gpus.empty())
    out.push_back(fmt::format("energy not priced: no kWh price for {} (a cloud rate per GPU-hour includes power)",
                              first_without([](const GpuPrices& x) { return x.kwh.has_value(); })));
  if (p.energy_known && !p.co2 && !job.gpus.empty())
    out.push_back(fmt::format("CO2 not counted: no --co2-per-kwh for {}",
                              first_without([](const GpuPrices& x) { return x.co2_g_per_kwh.has_value(); })));
  const bool pue_used = p.energy_priced || p.co2;
  if (pue_used && !first_without([](const GpuPrices& x) { return x.pue.has_value(); }).empty())
    out.emplace_back(
        "no PUE for every GPU: their energy is priced and counted at the GPU, without the facility's "
        "overhead (--pue)");
  return out;
}

std::string energy_method(const JobCost& job) {
  std::string m;
  for (const GpuCost& g : job.gpus) {
    if (m.empty()) m = g.energy.method;
    if (g.energy.method != m) return "mixed";
  }
  return m.empty() ? "none" : m;
}

void add_per_unit(const JobCost& job, Summary& s) {
  const std::pair<const char*, std::optional<double>> units[] = {
      {"step", job.work.steps}, {"sample", job.work.samples}, {"token", job.work.tokens}};
  for (const auto& [unit, count] : units) {
    if (!count || !(*count > 0)) continue;
    PerUnit u{.unit = unit, .count = *count, .gpu_s = seconds(s.total.time) / *count};
    if (s.total.energy) u.energy_j = static_cast<double>(*s.total.energy) / 1000 / *count;
    if (s.total.money) u.money = *s.total.money / *count;
    if (s.total.co2_g) u.co2_g = *s.total.co2_g / *count;
    s.per_unit.push_back(u);
  }
}

nlohmann::json opt(const std::optional<double>& x) { return x ? nlohmann::json(*x) : nlohmann::json(nullptr); }
nlohmann::json opt_mj(const std::optional<Millijoules>& x) { return x ? nlohmann::json(*x) : nlohmann::json(nullptr); }
nlohmann::json opt_j(const std::optional<Millijoules>& x) {
  return x ? nlohmann::json(static_cast<double>(*x) / 1000) : nlohmann::json(nullptr);
}

nlohmann::json line_json(const Line& l, Micros total) {
  return {{"part", l.part},
          {"gpu_time_us", l.time},
          {"gpu_time_s", seconds(l.time)},
          {"share", total > 0 ? static_cast<double>(l.time) / static_cast<double>(total) : 0.0},
          {"energy_mj", opt_mj(l.energy)},
          {"energy_j", opt_j(l.energy)},
          {"money", opt(l.money)},
          {"co2_g", opt(l.co2_g)}};
}

nlohmann::json gpu_json(const GpuCost& g, const GpuPrices& prices, const PriceBook& book) {
  const GpuAccount& a = g.account;
  nlohmann::json causes = nlohmann::json::array();
  for (const ClaimShare& c : a.claims)
    causes.push_back({{"cause", c.cause},
                      {"finding", c.source < std::numeric_limits<std::size_t>::max() ? nlohmann::json(c.source)
                                                                                     : nlohmann::json(nullptr)},
                      {"stated_us", c.stated},
                      {"gpu_time_us", c.got.time},
                      {"energy_mj", a.energy ? nlohmann::json(c.got.energy) : nlohmann::json(nullptr)}});
  const EnergyTotal& e = g.energy;
  return {{"gpu", g.gpu},
          {"run", g.run},
          {"name", g.name},
          {"busy_from", g.busy_from},
          {"gpu_time_us", a.gpu_time},
          {"useful_us", a.useful.time},
          {"unexplained_us", a.unexplained.time},
          {"unread_us", a.unknown},
          {"causes", causes},
          {"energy_mj", opt_mj(a.energy)},
          {"useful_mj", a.energy ? nlohmann::json(a.useful.energy) : nlohmann::json(nullptr)},
          {"unexplained_mj", a.energy ? nlohmann::json(a.unexplained.energy) : nlohmann::json(nullptr)},
          {"energy",
           {{"method", e.method},
            {"until_s", seconds(e.until)},
            {"by_counter_s", seconds(e.by_counter)},
            {"by_power_s", seconds(e.by_power)},
            {"estimated_s", seconds(e.estimated)},
            {"counter_mj", e.counter_part},
            {"power_integral_j", e.power_joules},
            {"power_known_s", seconds(e.power_known)},
            {"power_shift_s", g.power_shift_s},
            {"notes", e.notes}}},
          {"prices", to_json(prices, book)}};
}

}  // namespace

Summary summarize(const JobCost& job, const PriceBook& book) {
  const Pricing p = pricing_of(job, book);
  Summary s;
  s.currency = book.currency;
  std::vector<std::pair<std::size_t, Share>> total, useful, unexplained;
  std::map<std::string, std::vector<std::pair<std::size_t, Share>>> causes;
  for (std::size_t i = 0; i < job.gpus.size(); ++i) {
    const GpuAccount& a = job.gpus[i].account;
    total.emplace_back(i, Share{a.gpu_time, a.energy.value_or(0)});
    useful.emplace_back(i, a.useful);
    unexplained.emplace_back(i, a.unexplained);
    for (const ClaimShare& c : a.claims) causes[c.cause].emplace_back(i, c.got);
  }
  s.total = line_of("total", total, p, &s);
  s.parts.push_back(line_of("useful", useful, p));
  std::vector<Line> by_cause;
  for (const auto& [cause, shares] : causes) by_cause.push_back(line_of(cause, shares, p));
  std::stable_sort(by_cause.begin(), by_cause.end(), [](const Line& a, const Line& b) { return a.time > b.time; });
  for (Line& l : by_cause) s.parts.push_back(std::move(l));
  s.parts.push_back(line_of("unexplained", unexplained, p));
  for (const FindingCost& f : job.findings) {
    std::vector<std::pair<std::size_t, Share>> shares;
    for (std::size_t i = 0; i < job.gpus.size(); ++i)
      if (job.gpus[i].run == f.run)
        for (const ClaimShare& c : job.gpus[i].account.claims)
          if (c.source == f.index) shares.emplace_back(i, c.got);
    s.findings.push_back(line_of(f.id, shares, p));
  }
  add_per_unit(job, s);
  s.unpriced = unpriced(job, book, p);
  s.energy_method = energy_method(job);
  return s;
}

nlohmann::json to_json(const JobCost& job, const PriceBook& book) {
  const Summary s = summarize(job, book);
  const Pricing p = pricing_of(job, book);
  nlohmann::json split = nlohmann::json::array();
  for (const Line& l : s.parts) split.push_back(line_json(l, s.total.time));
  nlohmann::json fs = nlohmann::json::array();
  for (std::size_t i = 0; i < job.findings.size(); ++i) {
    const FindingCost& f = job.findings[i];
    const Line& l = s.findings[i];
    fs.push_back({{"finding", f.index},
                  {"run", f.run},
                  {"id", f.id},
                  {"severity", f.severity},
                  {"gpus", f.gpus},
                  {"window", {{"start_s", f.window_start_s}, {"end_s", f.window_end_s}}},
                  {"stated_lost_s", seconds(f.stated)},
                  {"gpu_time_lost_us", l.time},
                  {"gpu_time_lost_s", seconds(l.time)},
                  {"energy_lost_mj", opt_mj(l.energy)},
                  {"energy_lost_j", opt_j(l.energy)},
                  {"money_lost", opt(l.money)},
                  {"co2_g", opt(l.co2_g)}});
  }
  nlohmann::json units = nlohmann::json::object();
  for (const PerUnit& u : s.per_unit)
    units[u.unit] = {{"count", u.count},
                     {"gpu_s", u.gpu_s},
                     {"energy_j", opt(u.energy_j)},
                     {"money", opt(u.money)},
                     {"co2_g", opt(u.co2_g)}};
  nlohmann::json gpus = nlohmann::json::array();
  for (std::size_t i = 0; i < job.gpus.size(); ++i) gpus.push_back(gpu_json(job.gpus[i], p.gpu[i], book));
  return {{"run", {{"start_s", job.start_s}, {"end_s", job.end_s}, {"span", job.span}, {"runs", job.runs}}},
          {"gpu_count", job.gpus.size()},
          {"gpu_time_us", s.total.time},
          {"gpu_time_s", seconds(s.total.time)},
          {"gpu_hours", static_cast<double>(s.total.time) / kMicrosPerHour},
          {"energy_mj", opt_mj(s.total.energy)},
          {"energy_j", opt_j(s.total.energy)},
          {"energy_kwh", s.total.energy ? nlohmann::json(static_cast<double>(*s.total.energy) / kMillijoulesPerKwh)
                                        : nlohmann::json(nullptr)},
          {"energy_method", s.energy_method},
          {"currency", s.currency ? nlohmann::json(*s.currency) : nlohmann::json(nullptr)},
          {"money", opt(s.total.money)},
          {"money_gpu_time", opt(s.money_gpu_time)},
          {"money_energy", opt(s.money_energy)},
          {"co2_g", opt(s.total.co2_g)},
          {"unpriced", s.unpriced},
          {"split", split},
          {"findings", fs},
          {"work", to_json(job.work)},
          {"per_unit", units},
          {"gpus", gpus},
          {"notes", job.notes}};
}

}  // namespace gpudoc::cost
