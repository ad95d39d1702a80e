// The compute cap inside the job (gpudoc slice --sm PERCENT without MPS): kernel and graph launches
// pass only while the slice's gate is open, `duty` of each 20 ms period, in the slice's own part of
// the period — [offset, offset + cap), given by `gpudoc slice` so that slices of this user do not
// overlap (choose_compute_offset) — turned by a rotation that changes from period to period, the
// same for every slice (so that NVML's periodic samples do not alias with it and the windows stay
// apart). A controller thread sets `duty`, at most the cap, from the slice's share of the GPU as NVML
// reports it — per-process SM utilization, summed over the slice's processes — so that figure settles
// at the cap whatever the kernels' lengths (closed loop). With each slice's window at a place of its
// own, two slices side by side time-sliced and NVML's figure was not the work (a slice held at its
// cap by NVML did far more than its share of a job alone's work: docs/results/slice.md); kept apart,
// each slice's kernels run in its own part of the period. A process outside any slice is not kept apart.
// Internal to libgpudoc_slice.so.
//
//   inject::DutyController c(/*target*/ 30);    // pure logic, tested without a GPU
//   c.update(/*measured*/ 80, /*dt_s*/ 0.5);     // duty shrinks
//   inject::compute_gate(c.duty(), offset_ns);   // in the launch hook: waits while the gate is shut
//
// Thread-safety: compute_gate may be called from any thread; a DutyController is used by one.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace gpudoc::slice::inject {

// A proportional-integral controller of the duty in the logarithmic domain: a job's share is about
// proportional to the duty it is allowed, with a factor that changes with what else runs on the GPU
// (a neighbour that time-slices with it halves it), so the loop's gain does not depend on that factor.
// The measured share is smoothed first: NVML's per-process samples are 1/6 s time shares, noisy at
// a 20 ms gate, and arrive late; an undamped loop on them oscillated (15-72 % per second around a
// 30 % cap on the H200, two capped jobs side by side).
class DutyController {
 public:
  struct Config {
    // Chosen on a model of two time-slicing jobs read 1 s late with 8 points of noise
    // (tests/unit/slice/duty_controller_test.cpp), not on the H200 runs that judge it.
    double filter_s = 2.0;        // time constant of the measured share's smoothing
    double integral_per_s = 0.2;  // integral gain: the log-duty moves by this x the log-error each second
    double proportional = 0.1;    // proportional gain on the smoothed log-error
  };
  explicit DutyController(double target_percent) : DutyController(target_percent, Config{}) {}
  // Starts at duty = target (a job alone is about as busy as the share of time it may launch), and
  // never goes above it: the slice's part of the period is the target's share, and its windows must
  // not reach into another slice's part.
  DutyController(double target_percent, const Config& config)
      : config_(config),
        target_(std::clamp(target_percent, 1.0, 100.0)),
        max_log_(std::log(std::clamp(target_ / 100.0, kMinDuty, 1.0))),
        integral_(max_log_),
        duty_(std::exp(integral_)) {}

  // One step of the loop, `dt_s` after the last: the slice's share in percent of the GPU over that
  // time (< 0: no reading, the duty holds).
  void update(double measured_percent, double dt_s) {
    if (measured_percent < 0 || dt_s <= 0) return;
    filtered_ = filtered_ < 0 ? measured_percent
                              : filtered_ + (measured_percent - filtered_) * dt_s / (config_.filter_s + dt_s);
    // A share far from the target moves the duty at most twofold per second.
    const double error = std::clamp(std::log(target_ / std::max(filtered_, 1.0)), -std::log(2.0), std::log(2.0));
    const double lo = std::log(kMinDuty);
    integral_ = std::clamp(integral_ + config_.integral_per_s * dt_s * error, lo, max_log_);  // no wind-up
    duty_ = std::exp(std::clamp(integral_ + config_.proportional * error, lo, max_log_));
  }
  [[nodiscard]] double duty() const { return duty_; }

  static constexpr double kMinDuty = 0.01;

 private:
  Config config_;
  double target_;
  double max_log_;
  double integral_;
  double duty_;
  double filtered_ = -1;
};

// The gate's period in nanoseconds: long enough that a sleep is precise, short against a
// latency-sensitive step.
inline constexpr std::int64_t kGatePeriodNs = 20'000'000;

// Where every slice's windows are turned to in period `k` (CLOCK_MONOTONIC / kGatePeriodNs): a hash of
// k alone, in [0, kGatePeriodNs), the same in every process of every slice. A window at the same place
// every period would beat against NVML's per-process samples, taken every 1/6 s (8.33 periods): they
// would see the same three places of the period over and over.
[[nodiscard]] inline std::int64_t gate_rotation_ns(std::int64_t k) {
  std::uint64_t z = static_cast<std::uint64_t>(k) * 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;  // splitmix64's finaliser
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<std::int64_t>(static_cast<double>(z >> 11) * 0x1p-53 * static_cast<double>(kGatePeriodNs));
}

// How long a launch at `now_ns` (CLOCK_MONOTONIC, the same in every process) waits for the gate of a
// slice whose window starts `offset_ns` into each period and is open for `duty` of it: 0 when open.
// In period k the window is [rotation(k) + offset, + duty x period) modulo the period, so it may come
// in two pieces, both inside period k. Slices given disjoint [offset, offset + cap) (the slice's
// duty never exceeds its cap) are never open at once: the rotation turns all of them together.
// (Beside another process the windows must be kept apart: with each slice's window at a place of its
// own, NVML's per-process figure the controller steers did not divide the GPU the way the work did;
// the figures are in docs/results/slice.md.)
[[nodiscard]] inline std::int64_t gate_wait_ns(std::int64_t now_ns, double duty, std::int64_t offset_ns) {
  if (duty >= 1.0) return 0;
  const std::int64_t period = kGatePeriodNs;
  const std::int64_t k = now_ns >= 0 ? now_ns / period : (now_ns - period + 1) / period;  // floor
  const std::int64_t x = now_ns - k * period;
  const auto open = static_cast<std::int64_t>(std::max(duty, 0.0) * static_cast<double>(period));
  if (open <= 0) return period - x + period;  // shut: look again in a period (the duty may change)
  const std::int64_t off = ((offset_ns % period) + period) % period;
  // The start of the window in period c, within the period; its end is start + open, past the
  // period's end when the window wraps to the period's beginning.
  auto start = [&](std::int64_t c) { return (gate_rotation_ns(c) + off) % period; };
  const std::int64_t s = start(k);
  const std::int64_t e = s + open;
  if ((x >= s && x < e) || x < e - period) return 0;  // the main piece, or the wrapped one
  if (x < s) return s - x;
  // Past this period's window: the next period's, which may begin with its wrapped piece at 0.
  const std::int64_t s1 = start(k + 1);
  return period - x + (s1 + open > period ? 0 : s1);
}

// Waits until the gate of the slice is open (gate_wait_ns).
void compute_gate(double duty, std::int64_t offset_ns);

// Starts (once per process) the controller thread for a cap of `percent`; the launch hooks read
// the duty it sets through current_duty().
void start_compute_cap(std::uint32_t percent);
[[nodiscard]] double current_duty();
void compute_cap_after_fork();

}  // namespace gpudoc::slice::inject
