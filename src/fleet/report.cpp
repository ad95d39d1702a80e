// The fleet report (report.hpp): PromQL over serve's counters, aggregated by Prometheus.
#include "fleet/report.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "findings/finding.hpp"

namespace gpudoc::fleet {
namespace {

constexpr const char* kObserved = "gpudoc_gpu_observed_seconds_total";
constexpr const char* kUseful = "gpudoc_gpu_useful_seconds_total";
constexpr const char* kUnexplained = "gpudoc_gpu_unexplained_seconds_total";
constexpr const char* kLost = "gpudoc_gpu_lost_seconds_total";
constexpr const char* kEnergy = "gpudoc_gpu_energy_joules_total";
constexpr const char* kLostEnergy = "gpudoc_gpu_lost_energy_joules_total";

// The labels --by groups with.
core::Result<std::vector<std::string>> group_labels(const std::string& by) {
  if (by == "node") return std::vector<std::string>{"instance"};
  if (by == "namespace") return std::vector<std::string>{"namespace"};
  if (by == "pod") return std::vector<std::string>{"namespace", "pod"};
  if (by == "job") return std::vector<std::string>{"hpc_job", "slurm_job_id"};
  return core::Error(core::ErrorKind::kUsage, fmt::format("--by {}: expected node, namespace, pod or job", by));
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// Runs queries at one time over one range, keeping the warnings; the first error stops it.
class Querier {
 public:
  Querier(const Prometheus& p, double at, std::int64_t range_s, std::int64_t offset_s, FleetReport& r)
      : p_(p),
        at_(at),
        range_(fmt::format("[{}s]{}", range_s, offset_s > 0 ? fmt::format(" offset {}s", offset_s) : "")),
        r_(r) {}
  [[nodiscard]] const std::string& range() const { return range_; }
  // increase(NAME[range]) summed by `by`.
  core::Result<std::vector<Sample>> increase(const char* name, const std::string& by) {
    return run(fmt::format("sum by ({}) (increase({}{}))", by, name, range_));
  }
  core::Result<std::vector<Sample>> run(const std::string& q) {
    auto a = p_.query(q, at_);
    if (!a) return a.error();
    for (auto& w : a->warnings)
      if (std::find(r_.warnings.begin(), r_.warnings.end(), w) == r_.warnings.end()) r_.warnings.push_back(w);
    return std::move(a->samples);
  }
  // Prices at their last value in the range: the GPU time's (per hour) and the energy's (per J, PUE in).
  [[nodiscard]] std::string time_money(const char* name, const std::string& by) const {
    return fmt::format(
        "sum by ({}) (increase({}{}) / 3600 * on (instance, uuid) group_left (currency) "
        "last_over_time(gpudoc_price_gpu_hour{}))",
        by, name, range_, range_);
  }
  [[nodiscard]] std::string energy_money(const char* name, const std::string& by) const {
    return fmt::format(
        "sum by ({0}) (increase({1}{2}) / 3.6e6 * on (instance, uuid) group_left (currency) "
        "last_over_time(gpudoc_price_kwh{2}) * on (instance, uuid) group_left () "
        "(last_over_time(gpudoc_price_pue{2}) or on (instance, uuid) (last_over_time(gpudoc_price_kwh{2}) * 0 + 1)))",
        by, name, range_);
  }

 private:
  const Prometheus& p_;
  double at_;
  std::string range_;
  FleetReport& r_;
};

double total(const std::vector<Sample>& v) {
  double t = 0;
  for (const auto& s : v)
    if (std::isfinite(s.value)) t += s.value;
  return t;
}

std::string label(const Sample& s, const std::string& name) {
  const auto it = s.labels.find(name);
  return it == s.labels.end() ? std::string() : it->second;
}

void add_money(Money& m, const std::vector<Sample>& v) {
  for (const auto& s : v)
    if (std::isfinite(s.value)) m[label(s, "currency")] += s.value;
}

// The totals of one period (the report's, or the one before with `offset`).
core::Status read_totals(Querier& q, Totals& t) {
  struct Plain {
    const char* name;
    double Totals::*field;
  };
  for (const Plain& p : {Plain{kObserved, &Totals::observed_s}, Plain{kUseful, &Totals::useful_s},
                         Plain{kUnexplained, &Totals::unexplained_s}, Plain{kLost, &Totals::lost_s},
                         Plain{kEnergy, &Totals::energy_j}, Plain{kLostEnergy, &Totals::lost_energy_j}}) {
    auto v = q.increase(p.name, "");
    if (!v) return v.error();
    t.*(p.field) = total(*v);
  }
  for (auto [money, time, energy] :
       {std::tuple{&Totals::money, kObserved, kEnergy}, std::tuple{&Totals::money_lost, kLost, kLostEnergy}}) {
    for (const std::string& expr : {q.time_money(time, "currency"), q.energy_money(energy, "currency")}) {
      auto v = q.run(expr);
      if (!v) return v.error();
      add_money(t.*money, *v);
    }
  }
  auto priced = q.run(fmt::format("sum(increase({}{}) and on (instance, uuid) last_over_time(gpudoc_price_gpu_hour{}))",
                                  kObserved, q.range(), q.range()));
  if (!priced) return priced.error();
  t.unpriced_s = std::max(0.0, t.observed_s - total(*priced));
  return core::ok_status();
}

core::Status read_causes(Querier& now, Querier& before, const ReportOptions& o, FleetReport& r) {
  std::map<std::string, Cause> by_id;
  auto time = now.increase(kLost, "id");
  if (!time) return time.error();
  for (const auto& s : *time) by_id[label(s, "id")].gpu_s += s.value;
  auto energy = now.increase(kLostEnergy, "id");
  if (!energy) return energy.error();
  for (const auto& s : *energy) by_id[label(s, "id")].energy_j += s.value;
  for (const std::string& expr :
       {now.time_money(kLost, "id, currency"), now.energy_money(kLostEnergy, "id, currency")}) {
    auto v = now.run(expr);
    if (!v) return v.error();
    for (const auto& s : *v) by_id[label(s, "id")].money[label(s, "currency")] += s.value;
  }
  auto prev = before.increase(kLost, "id");
  if (!prev) return prev.error();
  for (const auto& s : *prev) by_id[label(s, "id")].previous_gpu_s += s.value;
  for (auto& [id, c] : by_id) {
    c.id = id;
    if (const auto* e = findings::find_entry(id)) {
      c.title = std::string(e->title);
      if (!e->next_steps.empty()) c.next_step = std::string(e->next_steps.front());
    }
    if (c.gpu_s > 0) r.causes.push_back(std::move(c));
  }
  std::sort(r.causes.begin(), r.causes.end(), [](const Cause& a, const Cause& b) { return a.gpu_s > b.gpu_s; });
  if (r.causes.size() > o.top) r.causes.resize(o.top);
  return core::ok_status();
}

// Groups by `labels`: observed, useful, lost and its money. `jobs_only`: those with a job label.
core::Result<std::vector<Group>> read_groups(Querier& q, const std::vector<std::string>& labels, bool jobs_only) {
  const std::string by = join(labels);
  auto key = [&](const Sample& s) {
    std::string k;
    for (const auto& l : labels)
      if (std::string v = label(s, l); !v.empty()) k += (k.empty() ? "" : "/") + v;
    return k;
  };
  std::map<std::string, Group> groups;
  for (auto [name, field] : {std::pair{kObserved, &Group::observed_s}, std::pair{kUseful, &Group::useful_s},
                             std::pair{kLost, &Group::lost_s}}) {
    auto v = q.increase(name, by);
    if (!v) return v.error();
    for (const auto& s : *v) groups[key(s)].*field += s.value;
  }
  for (const std::string& expr :
       {q.time_money(kLost, by + ", currency"), q.energy_money(kLostEnergy, by + ", currency")}) {
    auto v = q.run(expr);
    if (!v) return v.error();
    for (const auto& s : *v) groups[key(s)].money_lost[label(s, "currency")] += s.value;
  }
  std::vector<Group> out;
  for (auto& [k, g] : groups) {
    if (jobs_only && k.empty()) continue;
    g.key = k;
    out.push_back(std::move(g));
  }
  std::sort(out.begin(), out.end(), [](const Group& a, const Group& b) { return a.lost_s > b.lost_s; });
  return out;
}

core::Status read_nodes(Querier& q, const Prometheus& p, double end_s, FleetReport& r) {
  auto seen = q.run(fmt::format("count by (instance) (last_over_time({}{}))", kObserved, q.range()));
  if (!seen) return seen.error();
  auto gpus = q.run(fmt::format("count(count by (instance, uuid) (last_over_time({}{})))", kObserved, q.range()));
  if (!gpus) return gpus.error();
  r.gpus = static_cast<std::size_t>(std::llround(total(*gpus)));
  auto live = p.query(fmt::format("count by (instance) ({})", kObserved), end_s);  // the last 5 minutes
  if (!live) return live.error();
  std::set<std::string> now;
  for (const auto& s : live->samples) now.insert(label(s, "instance"));
  for (const auto& s : *seen) {
    r.nodes.push_back(label(s, "instance"));
    if (now.count(r.nodes.back()) == 0) r.vanished.push_back(r.nodes.back());
  }
  std::sort(r.nodes.begin(), r.nodes.end());
  std::sort(r.vanished.begin(), r.vanished.end());
  auto resets = q.run(fmt::format("sum(max by (instance) (resets({}{})))", kObserved, q.range()));
  if (!resets) return resets.error();
  r.resets = total(*resets);
  return core::ok_status();
}

// The timeline: one range query per kind, aggregated by Prometheus; a step without data reads 0.
core::Status read_timeline(const Prometheus& p, const ReportOptions& o, FleetReport& r) {
  Timeline& t = r.timeline;
  t.step_s = std::max(60.0, std::round(static_cast<double>(o.since_s) / 28 / 60) * 60);
  const auto steps = static_cast<std::size_t>(std::max(1.0, std::floor(static_cast<double>(o.since_s) / t.step_s)));
  for (std::size_t i = 0; i < steps; ++i) t.end_s.push_back(o.end_s - static_cast<double>(steps - 1 - i) * t.step_s);
  for (auto [name, field] : {std::pair{kUseful, &Timeline::useful_s}, std::pair{kLost, &Timeline::lost_s},
                             std::pair{kUnexplained, &Timeline::unexplained_s}}) {
    auto a = p.query_range(fmt::format("sum(increase({}[{:.0f}s]))", name, t.step_s), t.end_s.front(), t.end_s.back(),
                           t.step_s);
    if (!a) return a.error();
    for (auto& w : a->warnings)
      if (std::find(r.warnings.begin(), r.warnings.end(), w) == r.warnings.end()) r.warnings.push_back(w);
    std::vector<double>& v = t.*field;
    v.assign(t.end_s.size(), 0.0);
    for (const auto& series : a->series)
      for (const auto& [at, value] : series.points) {
        const double k = std::round((at - t.end_s.front()) / t.step_s);
        if (k >= 0 && k < static_cast<double>(v.size()) && std::isfinite(value))
          v[static_cast<std::size_t>(k)] += value;
      }
  }
  return core::ok_status();
}

void add_notes(FleetReport& r) {
  if (r.nodes.empty())
    r.notes.push_back(
        fmt::format("no {} in the period: is gpudoc serve (with its fleet counters) scraped by this "
                    "Prometheus?",
                    kObserved));
  if (!r.vanished.empty())
    r.notes.push_back(
        fmt::format("{} node(s) stopped reporting inside the period (their time up to then is "
                    "counted): {}",
                    r.vanished.size(), join(r.vanished)));
  if (r.resets > 0)
    r.notes.push_back(
        fmt::format("counters restarted {:.0f} time(s) (serve restarts): increase() counts across "
                    "them; up to one scrape interval each is lost",
                    r.resets));
  if (r.now.unpriced_s > 0.5)
    r.notes.push_back(
        fmt::format("{:.1f} GPU-h ran on GPUs without a GPU-hour price: not in the money (set "
                    "prices where serve runs: docs/cost.md)",
                    r.now.unpriced_s / 3600));
  if (!r.warnings.empty())
    r.notes.push_back("Prometheus warned that its answers may be partial: the figures may be low (see warnings)");
  if (r.previous.observed_s <= 0) r.notes.push_back("no data in the period before: no change against it");
}

}  // namespace

core::Result<FleetReport> build_report(const Prometheus& prom, const ReportOptions& o) {
  auto labels = group_labels(o.by);
  if (!labels) return labels.error();
  FleetReport r;
  r.url = prom.url();
  r.end_s = o.end_s;
  r.start_s = o.end_s - static_cast<double>(o.since_s);
  r.by = o.by;
  Querier now(prom, o.end_s, o.since_s, 0, r), before(prom, o.end_s, o.since_s, o.since_s, r);
  if (auto s = read_nodes(now, prom, o.end_s, r); !s) return s.error();
  if (auto s = read_totals(now, r.now); !s) return s.error();
  if (auto s = read_totals(before, r.previous); !s) return s.error();
  if (auto s = read_causes(now, before, o, r); !s) return s.error();
  auto groups = read_groups(now, *labels, false);
  if (!groups) return groups.error();
  r.groups = std::move(*groups);
  auto jobs = read_groups(now, {"namespace", "pod", "hpc_job", "slurm_job_id"}, true);
  if (!jobs) return jobs.error();
  r.worst_jobs = std::move(*jobs);
  if (r.worst_jobs.size() > o.top) r.worst_jobs.resize(o.top);
  if (auto s = read_timeline(prom, o, r); !s) return s.error();
  add_notes(r);
  return r;
}

}  // namespace gpudoc::fleet
