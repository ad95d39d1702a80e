// gpudoc::core::Clock — time as a seam.
//
// Everything that schedules or timestamps takes a Clock&, so tests can run ten minutes of sampling
// in milliseconds with a ManualClock, and production uses SystemClock:
//
//   core::SystemClock clock;
//   auto next = clock.now() + std::chrono::milliseconds(100);
//   clock.sleep_until(next);
//
// now() is monotonic (never jumps with NTP); unix_now() is wall-clock time for trace headers and for
// converting the driver's own sample timestamps (which are wall-clock microseconds).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace gpudoc::core {

using Nanos = std::chrono::nanoseconds;

// A point on the monotonic clock, nanoseconds since an arbitrary epoch.
using MonoTime = std::chrono::time_point<std::chrono::steady_clock, Nanos>;

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic now. Thread-safe.
  [[nodiscard]] virtual MonoTime now() const = 0;
  // Wall-clock now, nanoseconds since the Unix epoch. Thread-safe.
  [[nodiscard]] virtual std::int64_t unix_now_ns() const = 0;
  // Blocks until now() >= t (a ManualClock returns at once after advancing, see there). Thread-safe.
  virtual void sleep_until(MonoTime t) = 0;
};

class SystemClock final : public Clock {
 public:
  [[nodiscard]] MonoTime now() const override;
  [[nodiscard]] std::int64_t unix_now_ns() const override;
  void sleep_until(MonoTime t) override;
};

// A clock that moves only when told. sleep_until(t) advances the clock to t if t is in the future
// (a single-threaded simulation), so loops written against Clock run at full speed in tests.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(std::int64_t unix_start_ns = 1'780'000'000'000'000'000) : unix_start_ns_(unix_start_ns) {}
  [[nodiscard]] MonoTime now() const override { return MonoTime(Nanos(now_ns_.load())); }
  [[nodiscard]] std::int64_t unix_now_ns() const override { return unix_start_ns_ + now_ns_.load(); }
  void sleep_until(MonoTime t) override;
  void advance(Nanos d) { now_ns_ += d.count(); }

 private:
  std::int64_t unix_start_ns_;
  std::atomic<std::int64_t> now_ns_{0};
};

// Seconds as a double, for output.
[[nodiscard]] inline double to_seconds(Nanos d) { return std::chrono::duration<double>(d).count(); }

}  // namespace gpudoc::core
