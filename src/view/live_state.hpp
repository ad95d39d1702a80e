// gpudoc::view::LiveState — what a live view knows about each GPU: a short history per metric in
// time buckets (for sparklines), the latest value with its age, and the latest process list.
// Pure logic: fed with sampler records, asked questions; no I/O.
//
//   view::LiveState state(header.gpus, config.periods);
//   for (auto& rec : sampler.drain(...)) state.add(rec);
//   state.set_now(clock.unix_now_ns());
//   auto util = state.latest(0, gpu::Metric::kGpuUtilizationPercent);   // absent when stale
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "gpu/backend.hpp"
#include "telemetry/sampler.hpp"

namespace gpudoc::view {

struct Latest {
  double value = 0;
  std::int64_t time_unix_ns = 0;
};

class LiveState {
 public:
  // bucket: history resolution; width: buckets kept per metric.
  LiveState(std::vector<gpu::DeviceInfo> gpus, std::array<std::chrono::milliseconds, gpu::kMetricGroupCount> periods,
            std::chrono::milliseconds bucket = std::chrono::milliseconds(500), std::size_t width = 32);

  void add(const telemetry::SamplerRecord& record);
  // Moves the view's clock; buckets older than the history are dropped.
  void set_now(std::int64_t unix_ns);

  [[nodiscard]] std::size_t gpu_count() const { return gpus_.size(); }
  [[nodiscard]] const gpu::DeviceInfo& device(std::size_t slot) const { return gpus_[slot].info; }
  // The latest value, absent when never read or older than 3 periods of its group (stale).
  [[nodiscard]] std::optional<double> latest(std::size_t slot, gpu::Metric m) const;
  // Mean per bucket, oldest first, `width` entries; absent where no sample fell.
  [[nodiscard]] std::vector<std::optional<double>> history(std::size_t slot, gpu::Metric m) const;
  // Share of each bucket during which a slowdown reason (power cap, thermal, HW slowdown) was
  // active, 0..1, from the clock-event reasons; absent where none was read.
  [[nodiscard]] std::vector<std::optional<double>> slowdown_history(std::size_t slot) const;
  [[nodiscard]] const std::vector<gpu::ProcessSample>& processes(std::size_t slot) const {
    return gpus_[slot].processes;
  }
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
    std::optional<Latest> latest;
    std::deque<std::pair<std::int64_t, Bucket>> buckets;  // bucket index -> sum
  };
  struct Gpu {
    gpu::DeviceInfo info;
    std::array<PerMetric, gpu::kMetricCount> metrics;
    PerMetric slowdown;  // 1 when a slowdown reason was active, 0 otherwise
    std::vector<gpu::ProcessSample> processes;
    std::string status;
  };
  [[nodiscard]] std::optional<std::size_t> slot_of(int gpu) const;
  void add_point(PerMetric& pm, double value, std::int64_t time_unix_ns);
  [[nodiscard]] std::vector<std::optional<double>> history_of(const PerMetric& pm) const;

  std::vector<Gpu> gpus_;
  std::array<std::chrono::milliseconds, gpu::kMetricGroupCount> periods_;
  std::int64_t bucket_ns_;
  std::size_t width_;
  std::int64_t now_ns_ = 0;
  std::deque<std::string> events_;
};

}  // namespace gpudoc::view
