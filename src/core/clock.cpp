#include "core/clock.hpp"

#include <thread>

namespace gpudoc::core {

MonoTime SystemClock::now() const { return std::chrono::time_point_cast<Nanos>(std::chrono::steady_clock::now()); }

std::int64_t SystemClock::unix_now_ns() const {
  return std::chrono::duration_cast<Nanos>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void SystemClock::sleep_until(MonoTime t) { std::this_thread::sleep_until(t); }

void ManualClock::sleep_until(MonoTime t) {
  std::int64_t target = t.time_since_epoch().count();
  std::int64_t cur = now_ns_.load();
  while (cur < target && !now_ns_.compare_exchange_weak(cur, target)) {
  }
}

}  // namespace gpudoc::core
