#include "baseline/gpu_figures.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <vector>

#include "telemetry/trace.hpp"

namespace gpudoc::baseline {

namespace {
// How long after a context's creation the process list may first show it: its period in a
// baseline run (workload_run.cpp) and one sample more.
constexpr double kProcessListLagS = 1.0;
}  // namespace

std::optional<BusySpan> steady_busy_span(const std::vector<const telemetry::Series*>& util, double not_before) {
  std::vector<double> busy;
  for (const auto* u : util)
    for (std::size_t k = 0; k < u->size(); ++k)
      if (u->v[k] > 0 && u->t[k] >= not_before) busy.push_back(u->v[k]);
  if (busy.empty()) return std::nullopt;
  std::nth_element(busy.begin(), busy.begin() + static_cast<std::ptrdiff_t>(busy.size() / 2), busy.end());
  const double level = busy[busy.size() / 2], half = level / 2;
  std::optional<BusySpan> steady, any;
  for (const auto* u : util) {
    const auto& t = u->t;
    const auto& v = u->v;
    const std::size_t n = u->size();
    auto held = [&](std::size_t k) {  // samples k .. k + kSteadySamples - 1 all at the working level
      if (k + kSteadySamples > n) return false;
      for (std::size_t j = k; j < k + kSteadySamples; ++j)
        if (v[j] < half || t[j] < not_before) return false;
      return true;
    };
    for (std::size_t k = 0; k < n; ++k) {
      if (v[k] <= 0 || t[k] < not_before) continue;
      any = BusySpan{std::min(any ? any->start : t[k], t[k]), std::max(any ? any->end : t[k], t[k])};
    }
    // The first and last samples of a held stretch, then their edges to a fraction of a sample:
    // each sample is the busy share of the period before it, so at the steady level a sample at
    // f x that level was busy for f of its period (sub-sample edges: docs/methodology.md).
    std::optional<std::size_t> a, b;
    for (std::size_t k = 0; k + kSteadySamples <= n; ++k) {
      if (!held(k)) continue;
      if (!a) a = k;
      b = k + kSteadySamples - 1;
    }
    if (!a) continue;
    const double period = n >= 2 ? (t[n - 1] - t[0]) / static_cast<double>(n - 1) : 0.2;
    auto share = [&](std::size_t k) { return std::clamp(v[k] / level, 0.0, 1.0); };
    auto before = [&](std::size_t k) { return k > 0 && t[k - 1] >= not_before ? share(k - 1) : 0.0; };
    const double from = t[*a] - period * (share(*a) + before(*a));
    const double to = t[*b] - period * (1 - share(*b)) + (*b + 1 < n ? period * share(*b + 1) : 0.0);
    steady = BusySpan{std::min(steady ? steady->start : from, from), std::max(steady ? steady->end : to, to)};
  }
  return steady ? steady : any;
}

GpuFigures gpu_figures_from_trace(const std::string& path, const std::set<pid_t>& tree_in) {
  GpuFigures g;
  auto t = telemetry::read_trace_file(path);
  if (!t) {
    g.absent_reason = "the run's trace could not be read: " + t.error().message();
    return g;
  }
  std::set<std::uint32_t> tree;
  for (pid_t p : tree_in) tree.insert(static_cast<std::uint32_t>(p));
  for (const auto& e : t->events)
    if (e.kind == "process_start" && e.fields.contains("pid") && e.fields["pid"].is_number())
      tree.insert(e.fields["pid"].get<std::uint32_t>());
  std::vector<std::size_t> used;
  double memory = 0;
  std::optional<double> tree_seen;  // the first process sample of the tree on a GPU
  for (std::size_t i = 0; i < t->gpus.size(); ++i) {
    std::map<std::uint32_t, double> peak;
    for (const auto& p : t->gpus[i].processes)
      if (tree.count(p.sample.pid) != 0 && p.sample.memory_used_bytes) {
        peak[p.sample.pid] = std::max(peak[p.sample.pid], static_cast<double>(*p.sample.memory_used_bytes));
        tree_seen = std::min(tree_seen.value_or(p.t), p.t);
      }
    if (peak.empty()) continue;
    used.push_back(i);
    for (const auto& [pid, bytes] : peak) memory += bytes;
  }
  if (!used.empty()) {
    g.scope = "process tree";
    g.memory_peak_bytes = memory;
  } else {
    // No process of the command in NVML's lists: it used no GPU, or its PIDs are in another PID
    // namespace (a container) than NVML's. Whole-GPU figures then, said so.
    g.scope = "whole GPU";
    for (std::size_t i = 0; i < t->gpus.size(); ++i) used.push_back(i);
    double rise = 0;
    bool any = false;
    for (std::size_t i : used) {
      const auto& m = t->gpus[i].metric(gpu::Metric::kMemoryUsedBytes);
      if (m.empty()) continue;
      any = true;
      rise += *std::max_element(m.v.begin(), m.v.end()) - m.v.front();
    }
    if (any) g.memory_peak_bytes = rise;
  }
  for (std::size_t i : used) g.gpus.push_back(static_cast<int>(i));
  double util_sum = 0, util_n = 0, energy = 0;
  bool energy_any = false;
  for (std::size_t i : used) {
    const auto& u = t->gpus[i].metric(gpu::Metric::kGpuUtilizationPercent);
    for (double v : u.v) {
      util_sum += v;
      util_n += 1;
    }
    const auto& e = t->gpus[i].metric(gpu::Metric::kEnergyJoules);
    const auto& pw = t->gpus[i].metric(gpu::Metric::kPowerWatts);
    if (e.size() >= 2) {
      energy += e.v.back() - e.v.front();
      energy_any = true;
    } else if (pw.size() >= 2) {
      for (std::size_t k = 1; k < pw.size(); ++k) energy += (pw.v[k] + pw.v[k - 1]) / 2 * (pw.t[k] - pw.t[k - 1]);
      energy_any = true;
    }
  }
  if (util_n > 0) g.utilization_mean_percent = util_sum / util_n;
  // The command cannot run a kernel before its process holds a context, which the process list
  // (read every 0.5 s) shows: a busy sample before that is the tail of what ran before it (the
  // previous job's last 200 ms sample).
  const double not_before = tree_seen ? *tree_seen - kProcessListLagS : -HUGE_VAL;
  std::vector<const telemetry::Series*> util;
  for (std::size_t i : used) util.push_back(&t->gpus[i].metric(gpu::Metric::kGpuUtilizationPercent));
  if (const auto span = steady_busy_span(util, not_before)) {
    g.startup_s = std::max(0.0, span->start);
    g.active_s = span->end - span->start;
  }
  if (energy_any) g.energy_joules = energy;
  return g;
}

}  // namespace gpudoc::baseline
