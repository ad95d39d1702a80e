#include "telemetry/live_loop.hpp"

#include <algorithm>

namespace gpudoc::telemetry {

namespace {

// A replay's sampler reads every period of wall time, `speed` periods of trace time: staleness is
// judged on the trace's clock.
std::array<std::chrono::milliseconds, gpu::kMetricGroupCount> view_periods(const Live& live,
                                                                           const SamplerConfig& config) {
  auto periods = config.periods;
  if (live.replay != nullptr)
    for (auto& p : periods)
      p = std::chrono::milliseconds(static_cast<long>(static_cast<double>(p.count()) * std::max(1.0, live.speed)));
  return periods;
}

}  // namespace

LiveLoop::LiveLoop(const Live& live, const TraceHeader& header, const SamplerConfig& config, LiveLoopOptions options)
    : live_(live),
      options_(options),
      state_(header.gpus, view_periods(live, config)),
      sampler_(*live.backend, *live.clock, config) {}

std::array<std::chrono::milliseconds, gpu::kMetricGroupCount> LiveLoop::default_periods() {
  auto periods = SamplerConfig::default_periods();
  periods[gpu::index(gpu::MetricGroup::kUtilization)] = std::chrono::milliseconds(500);
  return periods;
}

core::Status LiveLoop::start() { return sampler_.start(); }

int LiveLoop::run(const std::function<bool(const LiveState&)>& on_tick, const std::function<bool()>& stop_requested) {
  core::Clock& clock = *live_.clock;
  const double speed = live_.speed;
  const auto t0 = clock.now();
  const auto interval = std::chrono::duration_cast<core::Nanos>(options_.interval * speed);
  // --once waits long enough for the slowest default group that a view shows (utilization).
  const auto first_tick = options_.once ? std::max<core::Nanos>(interval, std::chrono::milliseconds(1500)) : interval;
  auto next = t0 + first_tick;
  int ticks = 0;
  while (true) {
    while (clock.now() < next) {
      for (auto& r : sampler_.drain(std::min<core::Nanos>(next - clock.now(), std::chrono::milliseconds(100))))
        state_.add(r);
      if (stop_requested()) break;
    }
    if (stop_requested()) break;
    const double elapsed_s = core::to_seconds(clock.now() - t0) / speed;
    state_.set_now(clock.unix_now_ns());
    if (!on_tick(state_)) break;  // a reader that went away (`| head -1`) ends the loop
    ++ticks;
    if (options_.once || (options_.duration_s > 0 && elapsed_s >= options_.duration_s) || live_.backend->finished())
      break;
    next += interval;
  }
  sampler_.stop();
  return ticks;
}

}  // namespace gpudoc::telemetry
