// gpudoc::telemetry::LiveState — the one live state of the GPUs a run samples: per GPU the newest
// value of each metric with its time, the last process list with its time, the GPU's status (lost,
// unresponsive) and, when asked, a short history per metric in time buckets (sparklines). `gpudoc
// watch` renders it (view::render_watch), `gpudoc serve` scrapes it (serve::Latest). A GPU is found
// by one lookup (its backend index to its slot). Pure logic: fed with sampler records, asked
// questions; no I/O, no clock (now is set by the caller).
//
//   telemetry::LiveState state(header.gpus, config.periods);
//   for (auto& rec : sampler.drain(...)) state.add(rec);
//   state.set_now(clock.unix_now_ns());
//   auto util = state.latest(0, gpu::Metric::kGpuUtilizationPercent);   // absent when stale
//
// Not thread-safe: a caller that reads it from other threads holds its own lock.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "gpu/backend.hpp"
#include "telemetry/sampler.hpp"

namespace gpudoc::telemetry {

struct LatestValue {
  double value = 0;
  std::int64_t time_unix_ns = 0;
};

struct LiveStateOptions {
  std::chrono::milliseconds bucket{500};  // history resolution
  std::size_t width = 32;                 // buckets kept per metric; 0: no history
  // A value is stale when older than three periods of its group and than this (buffered sensors
  // arrive late).
  std::chrono::nanoseconds min_stale = std::chrono::milliseconds(1500);
};

class LiveState {
 public:
  using Periods = std::array<std::chrono::milliseconds, gpu::kMetricGroupCount>;
  LiveState(std::vector<gpu::DeviceInfo> gpus, const Periods& periods, LiveStateOptions options = {});

  // A record of one of the GPUs (others are ignored): its samples (the newest of each metric by its
  // time: an older buffered sample never replaces it), its process list, or its event.
  void add(const telemetry::SamplerRecord& record);
  // Moves the state's clock; buckets older than the history are dropped.
  void set_now(std::int64_t unix_ns);

  [[nodiscard]] std::size_t gpu_count() const { return gpus_.size(); }
  // The slot of a GPU by its backend index (DeviceInfo::index); absent when not sampled here.
  [[nodiscard]] std::optional<std::size_t> slot_of(int gpu) const;
  [[nodiscard]] const gpu::DeviceInfo& device(std::size_t slot) const { return gpus_[slot].info; }
  // The latest value, absent when never read or stale at now_unix_ns() (see LiveStateOptions).
  [[nodiscard]] std::optional<double> latest(std::size_t slot, gpu::Metric m) const {
    return latest_at(slot, m, now_ns_);
  }
  // The same, judged at `now_unix_ns`.
  [[nodiscard]] std::optional<double> latest_at(std::size_t slot, gpu::Metric m, std::int64_t now_unix_ns) const;
  // The newest value whatever its age.
  [[nodiscard]] const std::optional<LatestValue>& newest(std::size_t slot, gpu::Metric m) const {
    return gpus_[slot].metrics[gpu::index(m)].latest;
  }
  // The time of the newest sample of any metric (absent before the first).
  [[nodiscard]] std::optional<std::int64_t> newest_sample_unix_ns(std::size_t slot) const {
    return gpus_[slot].newest_sample_ns;
  }
  // Whether a reading of `group` taken at `time_unix_ns` is still fresh at `now_unix_ns`; a group
  // that is not read is never fresh.
  [[nodiscard]] bool fresh(gpu::MetricGroup group, std::int64_t time_unix_ns, std::int64_t now_unix_ns) const;
  // Mean per bucket, oldest first, `width` entries; absent where no sample fell.
  [[nodiscard]] std::vector<std::optional<double>> history(std::size_t slot, gpu::Metric m) const;
  // Share of each bucket during which a slowdown reason (power cap, thermal, HW slowdown) was
  // active, 0..1, from the clock-event reasons; absent where none was read.
  [[nodiscard]] std::vector<std::optional<double>> slowdown_history(std::size_t slot) const;
  [[nodiscard]] const std::vector<gpu::ProcessSample>& processes(std::size_t slot) const {
    return gpus_[slot].processes;
  }
  // When the last process list was read (0: never).
  [[nodiscard]] std::int64_t processes_time_unix_ns(std::size_t slot) const { return gpus_[slot].processes_time_ns; }
  // "lost", "unresponsive", or empty.
  [[nodiscard]] const std::string& status(std::size_t slot) const { return gpus_[slot].status; }
  [[nodiscard]] std::int64_t now_unix_ns() const { return now_ns_; }
  [[nodiscard]] std::vector<std::string> recent_events() const;

 private:
  struct Bucket {
    double sum = 0;
    int n = 0;
  };
  struct PerMetric {
    std::optional<LatestValue> latest;
    std::deque<std::pair<std::int64_t, Bucket>> buckets;  // bucket index -> sum
  };
  struct Gpu {
    gpu::DeviceInfo info;
    std::array<PerMetric, gpu::kMetricCount> metrics;
    PerMetric slowdown;  // 1 when a slowdown reason was active, 0 otherwise
    std::vector<gpu::ProcessSample> processes;
    std::int64_t processes_time_ns = 0;
    std::optional<std::int64_t> newest_sample_ns;
    std::string status;
  };
  void add_point(PerMetric& pm, double value, std::int64_t time_unix_ns);
  [[nodiscard]] std::vector<std::optional<double>> history_of(const PerMetric& pm) const;

  std::vector<Gpu> gpus_;
  std::vector<std::pair<int, std::size_t>> slot_by_index_;             // (backend index, slot), sorted
  std::array<std::int64_t, gpu::kMetricGroupCount> stale_after_ns_{};  // 0: the group is not read
  std::int64_t bucket_ns_;
  std::size_t width_;
  std::int64_t now_ns_ = 0;
  std::deque<std::string> events_;
};

}  // namespace gpudoc::telemetry
