#include "serve/latest.hpp"

#include <algorithm>

namespace gpudoc::serve {

Latest::Latest(const std::vector<gpu::DeviceInfo>& devices, const Periods& periods, std::chrono::nanoseconds min_stale)
    : state_(devices, periods, {.width = 0, .min_stale = min_stale}), processes_(devices.size()) {
  for (const auto& d : devices) {
    GpuSnapshot g;
    g.index = d.index;
    g.uuid = d.uuid;
    g.name = d.name;
    g.pci_bus_id = d.pci_bus_id;
    identity_.push_back(std::move(g));
  }
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
  const auto slot = state_.slot_of(record.gpu);
  if (!slot) return;
  state_.add(record);
  if (record.kind == Kind::kProcesses) processes_[*slot] = std::move(procs);
}

Snapshot Latest::snapshot(std::int64_t now_unix_ns) const {
  Snapshot s;
  std::lock_guard lock(mu_);
  s.gpus.reserve(identity_.size());
  for (std::size_t slot = 0; slot < identity_.size(); ++slot) {
    GpuSnapshot out = identity_[slot];
    for (gpu::Metric m : gpu::all_metrics()) out.latest[gpu::index(m)] = state_.latest_at(slot, m, now_unix_ns);
    if (state_.fresh(gpu::MetricGroup::kProcesses, state_.processes_time_unix_ns(slot), now_unix_ns))
      out.processes = processes_[slot];
    s.gpus.push_back(std::move(out));
  }
  return s;
}

}  // namespace gpudoc::serve
