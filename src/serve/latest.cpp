#include "serve/latest.hpp"

#include <algorithm>

namespace gpudoc::serve {

Latest::Latest(const std::vector<gpu::DeviceInfo>& devices, const Periods& periods,
               std::chrono::nanoseconds min_stale) {
  for (const auto& d : devices) {
    Gpu g;
    g.info.index = d.index;
    g.info.uuid = d.uuid;
    g.info.name = d.name;
    g.info.pci_bus_id = d.pci_bus_id;
    gpus_.push_back(std::move(g));
  }
  for (std::size_t i = 0; i < periods.size(); ++i) {
    const auto period = std::chrono::duration_cast<std::chrono::nanoseconds>(periods[i]);
    stale_after_ns_[i] = period.count() <= 0 ? 0 : std::max(3 * period, min_stale).count();
  }
}

Latest::Gpu* Latest::find(int gpu) {
  for (auto& g : gpus_)
    if (g.info.index == gpu) return &g;
  return nullptr;
}

void Latest::apply(const telemetry::SamplerRecord& record) {
  using Kind = telemetry::SamplerRecord::Kind;
  if (record.kind == Kind::kEvent) return;
  std::vector<ProcessSnapshot> procs;
  if (record.kind == Kind::kProcesses) {
    procs.reserve(record.processes.size());
    for (const auto& p : record.processes) {
      ProcessSnapshot ps;
      ps.pid = p.pid;
      ps.name = p.name;
      ps.sm_utilization_percent = p.sm_utilization_percent;
      ps.memory_utilization_percent = p.memory_utilization_percent;
      ps.memory_used_bytes = p.memory_used_bytes;
      if (labeler_) labeler_(ps);  // outside the lock: it may read /proc
      procs.push_back(std::move(ps));
    }
  }
  std::lock_guard lock(mu_);
  Gpu* g = find(record.gpu);
  if (g == nullptr) return;
  if (record.kind == Kind::kSamples) {
    for (const auto& s : record.samples) {
      const auto i = gpu::index(s.metric);
      if (g->value[i] && s.time_unix_ns < g->time_unix_ns[i]) continue;  // an older buffered sample
      g->value[i] = s.value;
      g->time_unix_ns[i] = s.time_unix_ns;
    }
    return;
  }
  g->processes = std::move(procs);
  g->processes_time_unix_ns = record.time_unix_ns;
}

Snapshot Latest::snapshot(std::int64_t now_unix_ns) const {
  Snapshot s;
  std::lock_guard lock(mu_);
  s.gpus.reserve(gpus_.size());
  const auto fresh = [&](gpu::MetricGroup group, std::int64_t t) {
    const auto limit = stale_after_ns_[gpu::index(group)];
    return limit > 0 && now_unix_ns - t <= limit;
  };
  for (const auto& g : gpus_) {
    GpuSnapshot out = g.info;
    for (gpu::Metric m : gpu::all_metrics()) {
      const auto i = gpu::index(m);
      if (g.value[i] && fresh(gpu::info(m).group, g.time_unix_ns[i])) out.latest[i] = g.value[i];
    }
    if (fresh(gpu::MetricGroup::kProcesses, g.processes_time_unix_ns)) out.processes = g.processes;
    s.gpus.push_back(std::move(out));
  }
  return s;
}

}  // namespace gpudoc::serve
