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
  // The used GPUs' busy span (any of them above 0 %). The command cannot run a kernel before its
  // process holds a context, which the process list (read every 0.5 s) shows: a busy sample before
  // that is the tail of what ran before it (the previous job's last 200 ms sample).
  const double not_before = tree_seen ? *tree_seen - kProcessListLagS : -HUGE_VAL;
  std::optional<double> first, last;
  for (std::size_t i : used) {
    const auto& u = t->gpus[i].metric(gpu::Metric::kGpuUtilizationPercent);
    for (std::size_t k = 0; k < u.size(); ++k) {
      if (u.v[k] <= 0 || u.t[k] < not_before) continue;
      first = std::min(first.value_or(u.t[k]), u.t[k]);
      last = std::max(last.value_or(u.t[k]), u.t[k]);
    }
  }
  if (first) {
    g.startup_s = std::max(0.0, *first);
    g.active_s = *last - *first;
  }
  if (energy_any) g.energy_joules = energy;
  return g;
}

}  // namespace gpudoc::baseline
