// gpudoc::gpu::ReplayBackend — a recorded trace played back through the Backend interface, as if
// the GPUs were live, so diagnosis, health, guard and the dashboards run end to end on real
// recordings in CI.
//
//   auto trace = telemetry::read_trace_file("run.jsonl");
//   core::SystemClock clock;
//   auto replay = gpu::open_replay_backend(std::move(*trace), clock, {.speed = 10.0});  // 10x
//   std::unique_ptr<gpu::Backend> backend = std::move(*replay);  // or keep the ReplayBackend
//   auto r = backend->read(0, gpu::MetricGroup::kFast);          // what is "due" by now
//
// Replay position: with speed > 0 it is (clock.now() - open time) * speed, in trace seconds; a
// read returns the samples of that group whose t lies in (last returned t, position], stamped
// time_unix_ns = start_unix_ns + t, in time order. With speed 0 ("as fast as possible") each read
// of a group advances that group to its next sample time and returns the samples taken then, so
// a loop that reads every group until finished() consumes the whole trace without waiting.
// Nothing is lost or returned twice either way.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "gpu/backend.hpp"
#include "telemetry/trace.hpp"

namespace gpudoc::gpu {

struct ReplayOptions {
  double speed = 1.0;  // trace seconds per clock second; 0 = as fast as possible (see above)
};

class ReplayBackend final : public Backend {
 public:
  // Use open_replay_backend(); public for make_unique.
  ReplayBackend(telemetry::Trace trace, core::Clock& clock, ReplayOptions options);

  [[nodiscard]] std::string_view name() const override { return "replay"; }
  // The recording's system, with backend "replay".
  [[nodiscard]] core::Result<SystemInfo> system_info() override;
  [[nodiscard]] core::Result<int> device_count() override;
  // The recorded DeviceInfo, with index = gpu (the replay's own numbering, 0..n-1).
  [[nodiscard]] core::Result<DeviceInfo> device_info(int gpu) override;
  // The metrics that have at least one sample for this GPU in the trace.
  [[nodiscard]] core::Result<MetricSet> capabilities(int gpu) override;
  // Errors: kBadInput (gpu out of range), kNotSupported (a metric group with no samples for this
  // GPU). kProcesses is always supported: a recording in which no process ran returns none.
  [[nodiscard]] core::Result<GroupReading> read(int gpu, MetricGroup group) override;
  // The trace's xid events whose t lies in (last returned, position]. When none is due it sleeps
  // on the clock until the next one is due or `timeout` has passed. With speed 0 the position for
  // events is the latest sample time any read has returned.
  [[nodiscard]] core::Result<std::vector<DeviceEvent>> wait_events(core::Nanos timeout) override;

  // True once the replay position has passed the end of the trace (duration_s); with speed 0,
  // once every group of every GPU has returned its last sample. A read after that returns what is
  // left, so `while (!finished()) read all; then read all once more` misses nothing. Thread-safe.
  [[nodiscard]] bool finished() const;
  // The replay position in trace seconds (see above). Thread-safe.
  [[nodiscard]] double position_s() const;
  [[nodiscard]] const telemetry::Trace& trace() const { return trace_; }

 private:
  [[nodiscard]] double position_locked() const;
  [[nodiscard]] std::int64_t unix_ns(double t) const;

  telemetry::Trace trace_;
  core::Clock& clock_;
  ReplayOptions options_;
  core::MonoTime opened_;
  std::vector<std::array<std::size_t, kMetricCount>> metric_next_;  // per GPU: next index per metric
  std::vector<std::size_t> process_next_;                           // per GPU
  std::vector<telemetry::Event> xids_;                              // xid events with gpu and code
  std::size_t xid_next_ = 0;
  double furthest_t_ = -1.0;                                        // speed 0: latest t returned
  mutable std::mutex mu_;
};

// Opens a replay of `trace`. Errors: kUsage for a speed that is negative or not finite.
[[nodiscard]] core::Result<std::unique_ptr<ReplayBackend>> open_replay_backend(telemetry::Trace trace,
                                                                               core::Clock& clock,
                                                                               ReplayOptions options = {});

}  // namespace gpudoc::gpu
