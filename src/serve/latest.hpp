// gpudoc::serve::Latest — the newest value of every metric of every GPU, fed by the sampler's
// records and read by each scrape as a serve::Snapshot. The values are kept by the live state every
// live command shares (telemetry::LiveState); this adds the lock, the process labels and the
// snapshot.
//
// Honest values: a value older than its group's staleness limit (three periods, and at least
// `min_stale`) is left out of the snapshot, never repeated as if fresh, so a GPU whose reads stop
// (lost, hung) shows no values rather than frozen ones. A GPU's processes are those of its last
// process read.
//
//   serve::Latest latest(devices, config.periods);   // devices: the sampler's GPUs, in its order
//   for (auto& rec : sampler.drain(250ms)) latest.apply(rec);        // the sampling thread
//   serve::Snapshot s = latest.snapshot(clock.unix_now_ns());        // a scrape, any thread
//
// Thread-safety: apply() and snapshot() may be called from different threads (one mutex, held
// for a copy of the values only; rendering happens outside it).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "gpu/backend.hpp"
#include "serve/exposition.hpp"
#include "telemetry/live_state.hpp"
#include "telemetry/sampler.hpp"

namespace gpudoc::serve {

class Latest {
 public:
  using Periods = std::array<std::chrono::milliseconds, gpu::kMetricGroupCount>;
  Latest(const std::vector<gpu::DeviceInfo>& devices, const Periods& periods,
         std::chrono::nanoseconds min_stale = std::chrono::seconds(5));

  // Called on each process of a process read, before it is kept (container and pod labels): once a
  // read, not once a scrape. Set before the first apply().
  void set_labeler(std::function<void(ProcessSnapshot&)> labeler) { labeler_ = std::move(labeler); }
  // Takes a record's samples (the newest of each metric by its time) or processes; a record of a
  // GPU not in the list is ignored, and so are events.
  void apply(const telemetry::SamplerRecord& record);
  // GPUs in the list's order with the values that are fresh at `now_unix_ns`; findings and self
  // are left empty for the caller.
  [[nodiscard]] Snapshot snapshot(std::int64_t now_unix_ns) const;

 private:
  mutable std::mutex mu_;
  std::function<void(ProcessSnapshot&)> labeler_;
  std::vector<GpuSnapshot> identity_;  // by slot; latest values and processes filled by snapshot()
  telemetry::LiveState state_;
  std::vector<std::vector<ProcessSnapshot>> processes_;  // by slot: the last process read, labelled
};

}  // namespace gpudoc::serve
