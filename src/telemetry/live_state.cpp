#include "telemetry/live_state.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace gpudoc::telemetry {

LiveState::LiveState(std::vector<gpu::DeviceInfo> gpus, const Periods& periods, LiveStateOptions options)
    : bucket_ns_(std::chrono::duration_cast<core::Nanos>(options.bucket).count()), width_(options.width) {
  for (auto& d : gpus) {
    slot_by_index_.emplace_back(d.index, gpus_.size());
    Gpu g;
    g.info = std::move(d);
    gpus_.push_back(std::move(g));
  }
  // A GPU listed twice is found at its first slot, as a search from the front would.
  std::stable_sort(slot_by_index_.begin(), slot_by_index_.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (std::size_t i = 0; i < periods.size(); ++i) {
    const auto period = std::chrono::duration_cast<core::Nanos>(periods[i]);
    stale_after_ns_[i] = period.count() <= 0 ? 0 : std::max<core::Nanos>(3 * period, options.min_stale).count();
  }
}

std::optional<std::size_t> LiveState::slot_of(int gpu) const {
  auto it = std::lower_bound(slot_by_index_.begin(), slot_by_index_.end(), gpu,
                             [](const auto& e, int index) { return e.first < index; });
  if (it == slot_by_index_.end() || it->first != gpu) return std::nullopt;
  return it->second;
}

void LiveState::add(const telemetry::SamplerRecord& r) {
  auto slot = slot_of(r.gpu);
  if (!slot) return;
  Gpu& g = gpus_[*slot];
  switch (r.kind) {
    case telemetry::SamplerRecord::Kind::kSamples:
      for (const auto& s : r.samples) {
        if (!g.newest_sample_ns || s.time_unix_ns > *g.newest_sample_ns) g.newest_sample_ns = s.time_unix_ns;
        add_point(g.metrics[gpu::index(s.metric)], s.value, s.time_unix_ns);
        if (s.metric == gpu::Metric::kClockEventReasonsMask)
          add_point(g.slowdown, gpu::is_slowdown(static_cast<std::uint64_t>(s.value)) ? 1.0 : 0.0, s.time_unix_ns);
      }
      if (!r.samples.empty() && g.status == "unresponsive") g.status.clear();
      break;
    case telemetry::SamplerRecord::Kind::kProcesses:
      g.processes = r.processes;
      g.processes_time_ns = r.time_unix_ns;
      break;
    case telemetry::SamplerRecord::Kind::kEvent:
      if (r.event_kind == "gpu_lost")
        g.status = "lost";
      else if (r.event_kind == "gpu_unresponsive")
        g.status = "unresponsive";
      else if (r.event_kind == "gpu_recovered")
        g.status.clear();
      events_.push_back(
          fmt::format("GPU {}: {}{}", r.gpu, r.event_kind,
                      r.event_fields.contains("code") ? fmt::format(" {}", r.event_fields["code"].dump()) : ""));
      while (events_.size() > 5) events_.pop_front();
      break;
  }
}

void LiveState::add_point(PerMetric& pm, double value, std::int64_t time_unix_ns) {
  if (!pm.latest || time_unix_ns >= pm.latest->time_unix_ns) pm.latest = LatestValue{value, time_unix_ns};
  if (width_ == 0) return;
  std::int64_t b = time_unix_ns / bucket_ns_;
  auto it = std::find_if(pm.buckets.rbegin(), pm.buckets.rend(), [&](const auto& e) { return e.first <= b; });
  if (it != pm.buckets.rend() && it->first == b) {
    it->second.sum += value;
    it->second.n++;
  } else {
    pm.buckets.insert(it.base(), {b, Bucket{value, 1}});
  }
  while (pm.buckets.size() > width_ + 2) pm.buckets.pop_front();
}

void LiveState::set_now(std::int64_t unix_ns) { now_ns_ = std::max(now_ns_, unix_ns); }

bool LiveState::fresh(gpu::MetricGroup group, std::int64_t time_unix_ns, std::int64_t now_unix_ns) const {
  const std::int64_t limit = stale_after_ns_[gpu::index(group)];
  return limit > 0 && now_unix_ns - time_unix_ns <= limit;
}

std::optional<double> LiveState::latest_at(std::size_t slot, gpu::Metric m, std::int64_t now_unix_ns) const {
  const auto& pm = gpus_[slot].metrics[gpu::index(m)];
  if (!pm.latest || !fresh(gpu::info(m).group, pm.latest->time_unix_ns, now_unix_ns)) return std::nullopt;
  return pm.latest->value;
}

std::vector<std::optional<double>> LiveState::history(std::size_t slot, gpu::Metric m) const {
  return history_of(gpus_[slot].metrics[gpu::index(m)]);
}

std::vector<std::optional<double>> LiveState::slowdown_history(std::size_t slot) const {
  return history_of(gpus_[slot].slowdown);
}

std::vector<std::optional<double>> LiveState::history_of(const PerMetric& pm) const {
  std::vector<std::optional<double>> out(width_);
  std::int64_t last = now_ns_ / bucket_ns_;
  std::int64_t first = last - static_cast<std::int64_t>(width_) + 1;
  for (const auto& [b, bucket] : pm.buckets) {
    if (b < first || b > last || bucket.n == 0) continue;
    out[static_cast<std::size_t>(b - first)] = bucket.sum / bucket.n;
  }
  return out;
}

std::vector<std::string> LiveState::recent_events() const { return {events_.begin(), events_.end()}; }

}  // namespace gpudoc::telemetry
