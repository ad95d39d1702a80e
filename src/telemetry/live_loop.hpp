// gpudoc::telemetry::LiveLoop — the GPUs of the backend chosen for the run sampled into a LiveState,
// and a tick every interval until --once, --duration, the end of a replay, a stop request, or a tick
// that says the output is gone. It renders and writes nothing: the caller's `on_tick` does (`gpudoc
// watch` renders view::watch_frame). A replay runs on the trace's clock, SPEED times as fast as the
// wall: the interval and duration are wall time and scaled here, and what is stale is judged in
// trace time.
//
//   auto header = telemetry::make_header(*live.backend, *live.clock, config, {});
//   telemetry::LiveLoop loop(live, *header, config, {.interval = std::chrono::milliseconds(500)});
//   if (auto s = loop.start(); !s) return s.error();                     // the sampler's threads
//   int ticks = loop.run([&](const telemetry::LiveState& s) { return write(render(s)); },
//                        [] { return stop_requests() > 0; });
//
// Not thread-safe: run() drains the sampler on the calling thread.
#pragma once

#include <chrono>
#include <functional>

#include "core/result.hpp"
#include "telemetry/backend_source.hpp"
#include "telemetry/live_state.hpp"
#include "telemetry/sampler.hpp"
#include "telemetry/trace.hpp"

namespace gpudoc::telemetry {

struct LiveLoopOptions {
  std::chrono::milliseconds interval{500};  // wall time between ticks
  double duration_s = 0;                    // wall seconds; 0: until stopped or the replay's end
  bool once = false;                        // one tick, after 1.5 s of sampling
};

class LiveLoop {
 public:
  // `live` and `header` must outlive the loop; `header` is make_header's for `config`.
  LiveLoop(const Live& live, const TraceHeader& header, const SamplerConfig& config, LiveLoopOptions options);

  // The sampler's periods for a live view: the catalog's, but the utilization buffer drained every
  // 500 ms, more often than a recording does, so the newest bars are not seconds behind; still never
  // faster than the buffer's 200 ms samples. --period goes over them.
  [[nodiscard]] static std::array<std::chrono::milliseconds, gpu::kMetricGroupCount> default_periods();

  // Starts sampling. Errors: the sampler's.
  [[nodiscard]] core::Status start();
  // Ticks until one of the ends above; `on_tick` sees the state as of that moment and returns false
  // when the output is gone. Stops the sampler. Returns how many ticks `on_tick` accepted.
  int run(const std::function<bool(const LiveState&)>& on_tick, const std::function<bool()>& stop_requested);

 private:
  const Live& live_;
  LiveLoopOptions options_;
  LiveState state_;
  Sampler sampler_;
};

}  // namespace gpudoc::telemetry
