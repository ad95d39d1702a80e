#include "telemetry/replay_backend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace gpudoc::telemetry {

using gpu::DeviceEvent;
using gpu::DeviceInfo;
using gpu::GroupReading;
using gpu::kMetricCount;
using gpu::Metric;
using gpu::MetricGroup;
using gpu::MetricSample;
using gpu::MetricSet;
using gpu::ProcessSample;
using gpu::SystemInfo;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

core::Error no_such_gpu(int gpu, std::size_t count) {
  return core::Error(core::ErrorKind::kBadInput,
                     fmt::format("replay: GPU {} is not in the trace ({} GPUs)", gpu, count));
}

}  // namespace

ReplayClock::ReplayClock(core::Clock& base, double speed)
    : base_(base), speed_(speed), origin_(base.now()), origin_unix_ns_(base.unix_now_ns()) {}

core::Nanos ReplayClock::scaled_since_origin() const {
  const double real = static_cast<double>((base_.now() - origin_).count());
  return core::Nanos(std::llround(real * speed_));
}

core::MonoTime ReplayClock::now() const { return origin_ + scaled_since_origin(); }

std::int64_t ReplayClock::unix_now_ns() const { return origin_unix_ns_ + scaled_since_origin().count(); }

void ReplayClock::sleep_until(core::MonoTime t) {
  const double ahead = static_cast<double>((t - origin_).count()) / speed_;
  base_.sleep_until(origin_ + core::Nanos(std::llround(std::min(ahead, 9e18))));
}

ReplayBackend::ReplayBackend(telemetry::Trace trace, core::Clock& clock, ReplayOptions options)
    : trace_(std::move(trace)),
      clock_(clock),
      options_(options),
      opened_(clock.now()),
      stamp_origin_unix_ns_(options.live_timestamps ? clock.unix_now_ns() : trace_.header.start_unix_ns) {
  metric_next_.assign(trace_.gpus.size(), {});
  process_next_.assign(trace_.gpus.size(), 0);
  for (const auto& e : trace_.events) {
    // The reader guarantees an xid has a gpu and an unsigned code; keep the check local anyway.
    if (e.kind != "xid" || !e.gpu) continue;
    auto code = e.fields.find("code");
    if (code == e.fields.end() || !code->is_number()) continue;
    xids_.push_back(e);
  }
}

double ReplayBackend::position_locked() const {
  if (options_.speed == 0) return furthest_t_;
  return core::to_seconds(clock_.now() - opened_) * options_.speed;
}

double ReplayBackend::position_s() const {
  std::lock_guard lock(mu_);
  return position_locked();
}

std::int64_t ReplayBackend::unix_ns(double t) const { return stamp_origin_unix_ns_ + std::llround(t * 1e9); }

bool ReplayBackend::finished() const {
  std::lock_guard lock(mu_);
  if (options_.speed > 0) return position_locked() >= trace_.duration_s;
  for (std::size_t g = 0; g < trace_.gpus.size(); ++g) {
    const auto& gt = trace_.gpus[g];
    for (std::size_t m = 0; m < kMetricCount; ++m)
      if (metric_next_[g][m] < gt.metrics[m].size()) return false;
    if (process_next_[g] < gt.processes.size()) return false;
  }
  return true;
}

core::Result<SystemInfo> ReplayBackend::system_info() {
  SystemInfo s = trace_.header.system;
  s.backend = "replay";
  return s;
}

core::Result<int> ReplayBackend::device_count() { return static_cast<int>(trace_.gpus.size()); }

core::Result<DeviceInfo> ReplayBackend::device_info(int gpu) {
  if (gpu < 0 || static_cast<std::size_t>(gpu) >= trace_.gpus.size()) return no_such_gpu(gpu, trace_.gpus.size());
  // The replay numbers its GPUs 0..n-1 whatever the recording machine called them, and a
  // DeviceInfo's index is the number its backend answers to.
  DeviceInfo d = trace_.header.gpus[static_cast<std::size_t>(gpu)];
  d.index = gpu;
  return d;
}

core::Result<MetricSet> ReplayBackend::capabilities(int gpu) {
  if (gpu < 0 || static_cast<std::size_t>(gpu) >= trace_.gpus.size()) return no_such_gpu(gpu, trace_.gpus.size());
  MetricSet set;
  const auto& gt = trace_.gpus[static_cast<std::size_t>(gpu)];
  for (std::size_t m = 0; m < kMetricCount; ++m)
    if (!gt.metrics[m].empty()) set.set(m);
  return set;
}

core::Result<GroupReading> ReplayBackend::read(int gpu, MetricGroup group) {
  if (gpu < 0 || static_cast<std::size_t>(gpu) >= trace_.gpus.size()) return no_such_gpu(gpu, trace_.gpus.size());
  const auto g = static_cast<std::size_t>(gpu);
  const telemetry::GpuTrace& gt = trace_.gpus[g];
  const MetricSet in_group = metrics_in(group);
  GroupReading out;

  std::lock_guard lock(mu_);
  auto& next = metric_next_[g];
  if (group == MetricGroup::kProcesses) {
    auto& pn = process_next_[g];
    double until = position_locked();
    if (options_.speed == 0) {
      if (pn >= gt.processes.size()) return out;
      until = gt.processes[pn].t;
      furthest_t_ = std::max(furthest_t_, until);
    }
    for (; pn < gt.processes.size() && gt.processes[pn].t <= until; ++pn) {
      ProcessSample p = gt.processes[pn].sample;
      p.time_unix_ns = unix_ns(gt.processes[pn].t);
      out.processes.push_back(std::move(p));
    }
    return out;
  }

  bool supported = false;
  double until = position_locked();
  if (options_.speed == 0) until = kInf;
  for (std::size_t m = 0; m < kMetricCount; ++m) {
    if (!in_group.test(m) || gt.metrics[m].empty()) continue;
    supported = true;
    // Speed 0: the group's next sample time is the earliest pending sample of its metrics.
    if (options_.speed == 0 && next[m] < gt.metrics[m].size()) until = std::min(until, gt.metrics[m].t[next[m]]);
  }
  if (!supported)
    return core::Error(core::ErrorKind::kNotSupported,
                       fmt::format("replay: the trace has no {} samples for GPU {}", info(group).name, gpu));
  if (until == kInf) return out;  // speed 0, all consumed
  if (options_.speed == 0) furthest_t_ = std::max(furthest_t_, until);

  for (std::size_t m = 0; m < kMetricCount; ++m) {
    if (!in_group.test(m)) continue;
    const telemetry::Series& s = gt.metrics[m];
    for (; next[m] < s.size() && s.t[next[m]] <= until; ++next[m])
      out.metrics.push_back({static_cast<Metric>(m), s.v[next[m]], unix_ns(s.t[next[m]])});
  }
  // One reading may span several sample times (a slow poll at real speed): time order, then the
  // catalog's order, as a live backend would have produced them one read at a time.
  std::stable_sort(out.metrics.begin(), out.metrics.end(),
                   [](const MetricSample& a, const MetricSample& b) { return a.time_unix_ns < b.time_unix_ns; });
  return out;
}

core::Result<std::vector<DeviceEvent>> ReplayBackend::wait_events(core::Nanos timeout) {
  auto collect = [this] {
    std::vector<DeviceEvent> out;
    double until = position_locked();
    for (; xid_next_ < xids_.size() && xids_[xid_next_].t <= until; ++xid_next_) {
      const telemetry::Event& e = xids_[xid_next_];
      DeviceEvent d;
      d.gpu = *e.gpu;
      d.time_unix_ns = unix_ns(e.t);
      d.kind = "xid";
      const auto& code = e.fields["code"];
      d.code = code.is_number_unsigned() ? code.get<std::uint64_t>()
                                         : static_cast<std::uint64_t>(std::max(0.0, code.get<double>()));
      out.push_back(std::move(d));
    }
    return out;
  };

  core::MonoTime wake = clock_.now() + timeout;
  {
    std::lock_guard lock(mu_);
    auto due = collect();
    if (!due.empty()) return due;
    // At real speed, wake when the next event falls due if that comes before the timeout.
    if (options_.speed > 0 && xid_next_ < xids_.size()) {
      // Clamped: a tiny speed must not overflow the nanosecond clock.
      double wait_s = std::clamp(xids_[xid_next_].t / options_.speed, 0.0, 1e9);
      auto due_at = opened_ + std::chrono::duration_cast<core::Nanos>(std::chrono::duration<double>(wait_s));
      wake = std::min(wake, due_at);
    }
  }
  clock_.sleep_until(wake);
  std::lock_guard lock(mu_);
  return collect();
}

core::Result<std::unique_ptr<ReplayBackend>> open_replay_backend(telemetry::Trace trace, core::Clock& clock,
                                                                 ReplayOptions options) {
  if (!std::isfinite(options.speed) || options.speed < 0)
    return core::Error(
        core::ErrorKind::kUsage,
        fmt::format("replay speed must be 0 (as fast as possible) or a positive factor, not {}", options.speed));
  return std::make_unique<ReplayBackend>(std::move(trace), clock, options);
}

}  // namespace gpudoc::telemetry
