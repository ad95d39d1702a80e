#include "cli/watch_loop.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <ctime>

#include "telemetry/replay_backend.hpp"
#include "view/watch_render.hpp"

namespace gpudoc::cli {

namespace {

std::string local_clock(std::int64_t unix_ns) {
  std::time_t t = static_cast<std::time_t>(unix_ns / 1'000'000'000);
  std::tm tm{};
  localtime_r(&t, &tm);
  return fmt::format("{:%H:%M:%S}", tm);
}

std::string title_of(const telemetry::TraceHeader& header) {
  const auto& sys = header.system;
  return fmt::format("gpudoc watch — {} — {} GPU{} — driver {}, CUDA {}", header.host, header.gpus.size(),
                     header.gpus.size() == 1 ? "" : "s", sys.driver_version.empty() ? "?" : sys.driver_version,
                     sys.cuda_driver_version.empty() ? "?" : sys.cuda_driver_version);
}

// A replay's sampler reads every period of wall time, `speed` periods of trace time: staleness is
// judged on the trace's clock.
std::array<std::chrono::milliseconds, gpu::kMetricGroupCount> view_periods(const telemetry::Live& live,
                                                                           const telemetry::SamplerConfig& config) {
  auto periods = config.periods;
  if (live.replay != nullptr)
    for (auto& p : periods)
      p = std::chrono::milliseconds(static_cast<long>(static_cast<double>(p.count()) * std::max(1.0, live.speed)));
  return periods;
}

}  // namespace

WatchLoop::WatchLoop(const telemetry::Live& live, const telemetry::TraceHeader& header,
                     const telemetry::SamplerConfig& config, WatchOptions options)
    : live_(live),
      options_(options),
      title_(title_of(header)),
      state_(header.gpus, view_periods(live, config)),
      sampler_(*live.backend, *live.clock, config) {}

core::Status WatchLoop::start() { return sampler_.start(); }

std::string WatchLoop::frame() const {
  core::Clock& clock = *live_.clock;
  if (options_.json) {
    auto j = view::watch_json(state_);
    if (live_.replay != nullptr) j["replay"] = live_.spec->file;
    if (!live_.real()) j["backend"] = telemetry::describe(*live_.spec);
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  std::string clock_text = local_clock(clock.unix_now_ns());
  if (live_.replay != nullptr)
    clock_text =
        fmt::format("t={:.1f} / {:.1f} s", std::min(live_.replay->position_s(), live_.replay->trace().duration_s),
                    live_.replay->trace().duration_s);
  return view::render_watch(state_, {.title = title_, .banner = live_.banner, .clock = clock_text});
}

int WatchLoop::run(const std::function<bool(const std::string&)>& emit, const std::function<bool()>& stop_requested) {
  core::Clock& clock = *live_.clock;
  const double speed = live_.speed;
  const auto t0 = clock.now();
  const auto interval = std::chrono::duration_cast<core::Nanos>(options_.interval * speed);
  // --once waits long enough for the slowest default group that a view shows (utilization).
  const auto first_frame = options_.once ? std::max<core::Nanos>(interval, std::chrono::milliseconds(1500)) : interval;
  auto next = t0 + first_frame;
  int frames = 0;
  while (true) {
    while (clock.now() < next) {
      for (auto& r : sampler_.drain(std::min<core::Nanos>(next - clock.now(), std::chrono::milliseconds(100))))
        state_.add(r);
      if (stop_requested()) break;
    }
    if (stop_requested()) break;
    const double elapsed_s = core::to_seconds(clock.now() - t0) / speed;
    state_.set_now(clock.unix_now_ns());
    if (!emit(frame())) break;  // a reader that went away (`| head -1`) ends the view
    ++frames;
    if (options_.once || (options_.duration_s > 0 && elapsed_s >= options_.duration_s) || live_.backend->finished())
      break;
    next += interval;
  }
  sampler_.stop();
  return frames;
}

}  // namespace gpudoc::cli
