// The fleet counters of `gpudoc serve` (accounting.hpp): each diagnosed window's newest part, per
// GPU, accounted by cost::cost_of_trace with the findings' losses taken at their rate.
#include "serve/accounting.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "cost/job.hpp"

namespace gpudoc::serve {
namespace {

using gpu::Metric;

// The GPU's busy readings, as cost::cost_of_trace reads them (utilization, else SM activity), or
// its power: the attribution ends at the newest of them (time after it has no reading yet).
const telemetry::Series* newest_series(const telemetry::GpuTrace& g) {
  for (Metric m : {Metric::kGpuUtilizationPercent, Metric::kGpmSmActivityPercent, Metric::kPowerWatts})
    if (!g.metric(m).empty()) return &g.metric(m);
  return nullptr;
}

std::optional<double> first_sample(const telemetry::GpuTrace& g) {
  std::optional<double> first;
  for (const auto& s : g.metrics)
    if (!s.empty()) first = first ? std::min(*first, s.t.front()) : s.t.front();
  return first;
}

// The findings with each loss scaled to the part [a, b) of its window: the loss at its rate.
std::vector<findings::Finding> prorated(const std::vector<findings::Finding>& found, double a, double b) {
  std::vector<findings::Finding> out = found;
  for (auto& f : out) {
    const double span = f.window.end_s - f.window.start_s;
    const double overlap = std::max(0.0, std::min(b, f.window.end_s) - std::max(a, f.window.start_s));
    const double share = span > 0 ? std::clamp(overlap / span, 0.0, 1.0) : 0.0;
    for (auto& e : f.evidence)
      if (e.name == "gpu_time_lost_s") e.value *= share;
    if (f.details.is_object() && f.details.contains("waiting") && f.details["waiting"].is_array())
      for (auto& w : f.details["waiting"])
        if (w.is_object() && w.contains("waiting_s") && w["waiting_s"].is_number())
          w["waiting_s"] = w["waiting_s"].get<double>() * share;
  }
  return out;
}

double secs(cost::Micros us) { return cost::seconds(us); }
double joules(cost::Millijoules mj) { return static_cast<double>(mj) / 1000.0; }

}  // namespace

LabelPairs holder_labels(const GpuSnapshot& g) {
  LabelPairs out;
  for (const auto& [name, value] : attribution_labels(g.attribution)) out.emplace_back(std::string(name), value);
  if (g.processes.empty()) return out;
  auto shared = [&](std::string ProcessSnapshot::*field) -> std::string {
    const std::string& first = g.processes.front().*field;
    for (const auto& p : g.processes)
      if (p.*field != first) return {};
    return first;
  };
  const std::pair<const char*, std::string ProcessSnapshot::*> ids[] = {
      {"container_id", &ProcessSnapshot::container_id},
      {"pod_uid", &ProcessSnapshot::pod_uid},
      {"slurm_job_id", &ProcessSnapshot::slurm_job_id}};
  for (const auto& [name, field] : ids)
    if (std::string v = shared(field); !v.empty()) out.emplace_back(name, std::move(v));
  return out;
}

void Accounting::add_window(const telemetry::Trace& trace, const std::vector<findings::Finding>& found,
                            const std::map<int, LabelPairs>& holders) {
  ++adds_;
  const std::int64_t origin_ns = trace.header.start_unix_ns;
  for (std::size_t pos = 0; pos < trace.gpus.size() && pos < trace.header.gpus.size(); ++pos) {
    const gpu::DeviceInfo& dev = trace.header.gpus[pos];
    const telemetry::Series* newest = newest_series(trace.gpus[pos]);
    const auto first = first_sample(trace.gpus[pos]);
    if (newest == nullptr || !first) continue;
    const auto until = until_ns_.find(dev.index);
    const double a = until != until_ns_.end() ? std::max(0.0, static_cast<double>(until->second - origin_ns) / 1e9)
                                              : std::max(0.0, *first);
    const double b = newest->t.back();
    if (!(b > a)) continue;
    diagnose::Diagnosis d;  // no start-up or teardown: a sliding window has neither
    d.source = "serve";
    d.findings = prorated(found, a, b);
    const cost::JobCost job =
        cost::cost_of_trace(trace, d, {.gpus = {static_cast<int>(pos)}, .start_s = a, .end_s = b});
    if (job.gpus.empty()) continue;
    const cost::GpuAccount& acc = job.gpus.front().account;
    until_ns_[dev.index] = origin_ns + cost::micros(b) * 1000;
    LabelPairs labels{{"gpu", fmt::format("{}", dev.index)}, {"uuid", dev.uuid}, {"name", dev.name}};
    if (const auto h = holders.find(dev.index); h != holders.end())
      labels.insert(labels.end(), h->second.begin(), h->second.end());
    Totals& t = totals_[Key{dev.index, std::move(labels)}];
    t.last_add = adds_;
    t.observed += acc.gpu_time;
    t.useful += acc.useful.time;
    t.unexplained += acc.unexplained.time;
    for (const auto& c : acc.claims) t.lost[c.cause] += c.got.time;
    if (acc.energy) {
      t.energy_known = true;
      t.energy += *acc.energy;
      t.useful_energy += acc.useful.energy;
      t.unexplained_energy += acc.unexplained.energy;
      for (const auto& c : acc.claims) t.lost_energy[c.cause] += c.got.energy;
    }
  }
  bound();
}

void Accounting::bound() {
  while (totals_.size() > kMaxAccountSeries) {
    auto oldest = std::min_element(totals_.begin(), totals_.end(),
                                   [](const auto& x, const auto& y) { return x.second.last_add < y.second.last_add; });
    totals_.erase(oldest);
  }
}

std::vector<AccountSeries> Accounting::series() {
  std::vector<AccountSeries> out;
  out.reserve(totals_.size());
  for (auto& [key, t] : totals_) {
    AccountSeries s;
    s.labels = key.second;
    const bool show = t.shown;  // the first scrape of a series shows 0 (accounting.hpp)
    t.shown = true;
    auto v = [&](cost::Micros us) { return show ? secs(us) : 0.0; };
    s.observed_s = v(t.observed);
    s.useful_s = v(t.useful);
    s.unexplained_s = v(t.unexplained);
    // A cause, or the energy, that first comes on a series already shown: 0 on its first scrape too.
    for (const auto& [cause, us] : t.lost)
      s.lost_s.emplace_back(cause, show && t.lost_shown.count(cause) > 0 ? secs(us) : 0.0);
    if (t.energy_known) {
      const bool energy_show = show && t.energy_shown;
      auto ej = [&](cost::Millijoules mj) { return energy_show ? joules(mj) : 0.0; };
      s.energy_j = ej(t.energy);
      s.useful_energy_j = ej(t.useful_energy);
      s.unexplained_energy_j = ej(t.unexplained_energy);
      for (const auto& [cause, mj] : t.lost_energy)
        s.lost_energy_j.emplace_back(cause, energy_show && t.lost_shown.count(cause) > 0 ? joules(mj) : 0.0);
      t.energy_shown = true;
    }
    for (const auto& [cause, us] : t.lost) t.lost_shown.insert(cause);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace gpudoc::serve
