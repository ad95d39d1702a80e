// The compute cap inside the job (gpudoc slice --sm PERCENT without MPS): kernel and graph launches
// pass only in the first `duty` part of each 20 ms period, and a controller thread sets `duty`
// from the slice's measured share of the GPU — NVML's per-process SM utilization (the share of
// time a kernel of the process ran), summed over the slice's processes — so the share settles at
// the cap whatever the kernels' lengths (closed loop). Internal to libgpudoc_slice.so.
//
//   inject::DutyController c;                // pure logic, tested without a GPU
//   c.update(/*measured*/ 80, /*target*/ 30);  // duty shrinks
//   inject::compute_gate(c.duty());          // in the launch hook: waits while the gate is shut
//
// Thread-safety: compute_gate may be called from any thread; a DutyController is used by one.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace gpudoc::slice::inject {

class DutyController {
 public:
  // One step of the loop: measured and target in percent of the GPU (measured < 0: no reading).
  // Multiplicative, bounded to halving or doubling per step, so a wrong reading cannot swing it.
  void update(double measured_percent, double target_percent) {
    if (measured_percent < 0 || target_percent <= 0) return;
    const double ratio = target_percent / std::max(measured_percent, 1.0);
    duty_ = std::clamp(duty_ * std::clamp(std::sqrt(ratio), 0.5, 2.0), kMinDuty, 1.0);
  }
  [[nodiscard]] double duty() const { return duty_; }

  static constexpr double kMinDuty = 0.01;

 private:
  double duty_ = 1.0;
};

// The gate's period in nanoseconds: long enough that a sleep is precise, short against a
// latency-sensitive step.
inline constexpr std::int64_t kGatePeriodNs = 20'000'000;
// Waits, when the time within the current period is past `duty` of it, until the next period.
void compute_gate(double duty);

// Starts (once per process) the controller thread for a cap of `percent`; the launch hooks read
// the duty it sets through current_duty().
void start_compute_cap(std::uint32_t percent);
[[nodiscard]] double current_duty();
void compute_cap_after_fork();

}  // namespace gpudoc::slice::inject
