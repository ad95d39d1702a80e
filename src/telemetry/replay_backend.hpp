// gpudoc::telemetry::ReplayBackend — a recorded trace played back through the gpu::Backend
// interface, as if the GPUs were live, so diagnosis, health, guard and the dashboards run end to
// end on real recordings in CI. It lives in telemetry/ because it reads traces; gpu/ knows nothing
// of it.
//
//   auto trace = telemetry::read_trace_file("run.jsonl");
//   core::SystemClock clock;
//   auto replay = telemetry::open_replay_backend(std::move(*trace), clock, {.speed = 10.0});  // 10x
//   std::unique_ptr<gpu::Backend> backend = std::move(*replay);  // or keep the ReplayBackend
//   auto r = backend->read(0, gpu::MetricGroup::kFast);          // what is "due" by now
//
// To run a whole command on a replay as if it were live (`gpudoc --backend replay:FILE@10 doctor`)
// give the replay a ReplayClock (below) at the wanted speed, speed 1 on that clock, and
// live_timestamps: every schedule, duration and timestamp of the command is then in trace seconds.
//
// Replay position: with speed > 0 it is (clock.now() - open time) * speed, in trace seconds; a
// read returns the samples of that group whose t lies in (last returned t, position], stamped
// time_unix_ns = start_unix_ns + t, in time order. With speed 0 ("as fast as possible") each read
// of a group advances that group to its next sample time and returns the samples taken then, so
// a loop that reads every group until finished() consumes the whole trace without waiting.
// Nothing is lost or returned twice either way. Sample times are the recording's own
// (start_unix_ns + t) or, with live_timestamps, the clock's time when the replay opened + t.
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

namespace gpudoc::telemetry {

struct ReplayOptions {
  double speed = 1.0;            // trace seconds per clock second; 0 = as fast as possible (see above)
  bool live_timestamps = false;  // stamp samples as read now (see above), not as recorded
};

// A clock that runs `speed` times as fast as `base` from the moment it is made: trace time for a
// replay played as live. now(), unix_now_ns() and sleep_until() all count trace seconds, so a
// command's "10 s" is 10 s of the trace (1 s of wall time at speed 10). Thread-safe as `base`.
class ReplayClock final : public core::Clock {
 public:
  // Precondition: speed > 0 and finite (open_replay_backend and the backend spec check it).
  ReplayClock(core::Clock& base, double speed);
  [[nodiscard]] core::MonoTime now() const override;
  [[nodiscard]] std::int64_t unix_now_ns() const override;
  void sleep_until(core::MonoTime t) override;
  [[nodiscard]] double speed() const { return speed_; }

 private:
  [[nodiscard]] core::Nanos scaled_since_origin() const;

  core::Clock& base_;
  double speed_;
  core::MonoTime origin_;
  std::int64_t origin_unix_ns_;
};

class ReplayBackend final : public gpu::Backend {
 public:
  // Use open_replay_backend(); public for make_unique.
  ReplayBackend(telemetry::Trace trace, core::Clock& clock, ReplayOptions options);

  [[nodiscard]] std::string_view name() const override { return "replay"; }
  // The recording's system, with backend "replay".
  [[nodiscard]] core::Result<gpu::SystemInfo> system_info() override;
  [[nodiscard]] core::Result<int> device_count() override;
  // The recorded DeviceInfo, with index = gpu (the replay's own numbering, 0..n-1).
  [[nodiscard]] core::Result<gpu::DeviceInfo> device_info(int gpu) override;
  // The metrics that have at least one sample for this GPU in the trace.
  [[nodiscard]] core::Result<gpu::MetricSet> capabilities(int gpu) override;
  // Errors: kBadInput (gpu out of range), kNotSupported (a metric group with no samples for this
  // GPU). kProcesses is always supported: a recording in which no process ran returns none.
  [[nodiscard]] core::Result<gpu::GroupReading> read(int gpu, gpu::MetricGroup group) override;
  // The trace's xid events whose t lies in (last returned, position]. When none is due it sleeps
  // on the clock until the next one is due or `timeout` has passed. With speed 0 the position for
  // events is the latest sample time any read has returned.
  [[nodiscard]] core::Result<std::vector<gpu::DeviceEvent>> wait_events(core::Nanos timeout) override;

  // True once the replay position has passed the end of the trace (duration_s); with speed 0,
  // once every group of every GPU has returned its last sample. A read after that returns what is
  // left, so `while (!finished()) read all; then read all once more` misses nothing. Thread-safe.
  [[nodiscard]] bool finished() const override;
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
  std::int64_t stamp_origin_unix_ns_;                                    // what t = 0 is stamped as
  std::vector<std::array<std::size_t, gpu::kMetricCount>> metric_next_;  // per GPU: next index per metric
  std::vector<std::size_t> process_next_;                                // per GPU
  std::vector<telemetry::Event> xids_;                                   // xid events with gpu and code
  std::size_t xid_next_ = 0;
  double furthest_t_ = -1.0;  // speed 0: latest t returned
  mutable std::mutex mu_;
};

// Opens a replay of `trace`. Errors: kUsage for a speed that is negative or not finite.
[[nodiscard]] core::Result<std::unique_ptr<ReplayBackend>> open_replay_backend(telemetry::Trace trace,
                                                                               core::Clock& clock,
                                                                               ReplayOptions options = {});

}  // namespace gpudoc::telemetry
