// gpudoc::serve::Liveness — whether serve's sampling loop is alive, for /healthz: the loop that
// drains the sampler and publishes the latest values ticks once a period (a second); when its last
// tick is older than `missed` periods, /healthz answers 503 with the reason, so that a probe
// (Kubernetes' livenessProbe, a load balancer) sees a stuck loop and not just an open socket.
//
//   serve::Liveness alive(std::chrono::seconds(1));
//   alive.start(now);                         // counts from here until the first tick
//   alive.tick(now);                          // the loop, each period
//   serve::Alive a = alive.check(now);        // any thread: a.ok, else a.reason
//   alive.stop();                             // "the sampler is not running"
//
// A GPU that hangs in a driver call does not stop the loop (the sampler's watchdog marks that GPU
// unresponsive, which the metrics show): restarting serve would not cure the driver.
// Thread-safety: every member may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "core/clock.hpp"

namespace gpudoc::serve {

struct Alive {
  bool ok = false;
  std::string reason;  // why not, when !ok
};

class Liveness {
 public:
  // `period`: how often the loop ticks; not alive after `missed` periods without a tick (>= 2).
  explicit Liveness(core::Nanos period, int missed = 10);

  void start(core::MonoTime now);
  void tick(core::MonoTime now);
  void stop();
  [[nodiscard]] Alive check(core::MonoTime now) const;
  // How long without a tick is still alive.
  [[nodiscard]] core::Nanos limit() const { return period_ * missed_; }

 private:
  core::Nanos period_;
  int missed_;
  std::atomic<bool> running_{false};
  std::atomic<bool> ticked_{false};
  std::atomic<std::int64_t> last_ns_{0};  // the start, then the last tick (monotonic ns)
};

}  // namespace gpudoc::serve
