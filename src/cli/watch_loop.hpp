// gpudoc::cli::WatchLoop — `gpudoc watch` over time: the GPUs of the backend chosen for the run
// sampled into a telemetry::LiveState, and a frame (render_watch's text, or one JSON line) made every interval
// until --once, --duration, the end of a replay, a stop request, or an output that is gone. It
// writes nothing itself: the caller's `emit` does. A replay runs on the trace's clock, SPEED times
// as fast as the wall: the interval and duration are wall time and scaled here, and what is stale
// is judged in trace time.
//
//   auto header = telemetry::make_header(*live.backend, *live.clock, config, {});
//   cli::WatchLoop loop(live, *header, config, {.interval = std::chrono::milliseconds(500)});
//   if (auto s = loop.start(); !s) return s.error();                     // the sampler's threads
//   int frames = loop.run([](const std::string& frame) { return write(frame); },
//                         [] { return stop_requests() > 0; });
//
// Not thread-safe: run() drains the sampler on the calling thread.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "core/result.hpp"
#include "telemetry/backend_source.hpp"
#include "telemetry/live_state.hpp"
#include "telemetry/sampler.hpp"
#include "telemetry/trace.hpp"

namespace gpudoc::cli {

struct WatchOptions {
  std::chrono::milliseconds interval{500};  // wall time between frames
  double duration_s = 0;                    // wall seconds; 0: until stopped or the replay's end
  bool once = false;                        // one frame, after 1.5 s of sampling
  bool json = false;                        // frames as JSON lines (with their "\n"), not text
};

class WatchLoop {
 public:
  // `live` and `header` must outlive the loop; `header` is make_header's for `config`.
  WatchLoop(const telemetry::Live& live, const telemetry::TraceHeader& header, const telemetry::SamplerConfig& config,
            WatchOptions options);

  // Starts sampling. Errors: the sampler's.
  [[nodiscard]] core::Status start();
  // Makes frames until one of the ends above; `emit` returns false when the output is gone. Stops
  // the sampler. Returns how many frames were emitted.
  int run(const std::function<bool(const std::string& frame)>& emit, const std::function<bool()>& stop_requested);

 private:
  [[nodiscard]] std::string frame() const;

  const telemetry::Live& live_;
  WatchOptions options_;
  std::string title_;
  telemetry::LiveState state_;
  telemetry::Sampler sampler_;
};

}  // namespace gpudoc::cli
