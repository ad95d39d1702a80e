#include "serve/liveness.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

namespace gpudoc::serve {
namespace {

std::string seconds_text(core::Nanos d) { return fmt::format("{:.1f} s", std::chrono::duration<double>(d).count()); }

}  // namespace

Liveness::Liveness(core::Nanos period, int missed)
    : period_(std::max(period, core::Nanos(1))), missed_(std::max(missed, 2)) {}

void Liveness::start(core::MonoTime now) {
  ticked_ = false;
  last_ns_ = now.time_since_epoch().count();
  running_ = true;
}

void Liveness::tick(core::MonoTime now) {
  last_ns_ = now.time_since_epoch().count();
  ticked_ = true;
}

void Liveness::stop() { running_ = false; }

Alive Liveness::check(core::MonoTime now) const {
  if (!running_) return {.ok = false, .reason = "the sampler is not running"};
  const core::Nanos since = now.time_since_epoch() - core::Nanos(last_ns_.load());
  if (since <= limit()) return {.ok = true, .reason = ""};
  const std::string what = ticked_ ? "the sampler's last tick was " + seconds_text(since) + " ago"
                                   : "the sampler has not ticked since it started " + seconds_text(since) + " ago";
  return {.ok = false,
          .reason =
              fmt::format("{} (more than {} periods of {}): its loop is stuck", what, missed_, seconds_text(period_))};
}

}  // namespace gpudoc::serve
