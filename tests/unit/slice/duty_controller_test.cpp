// The compute cap's controller (pure logic): the launch duty starts at the cap, shrinks while the
// slice's measured share is over it, grows back under it, holds on a missing reading, and — the
// case that oscillated on the H200 — two capped jobs that time-slice one GPU each settle at their
// own cap although what one gives up the other takes, with NVML's late and noisy readings.
#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <random>
#include <vector>

#include "slice/inject/compute_cap.hpp"

namespace gpudoc::slice::inject {
namespace {

constexpr double kDt = 0.5;  // the controller thread's period

TEST(SliceDutyController, StartsAtTheCapAndSettlesWhereTheShareMeetsIt) {
  DutyController c(30);
  EXPECT_NEAR(c.duty(), 0.30, 1e-9);
  // A workload whose share is 1.5x the duty it is allowed (kernels that spill past the gate).
  for (int step = 0; step < 120; ++step) c.update(150.0 * c.duty(), kDt);
  EXPECT_NEAR(150.0 * c.duty(), 30, 0.5);
}

TEST(SliceDutyController, HoldsWithoutAReadingGrowsWhenIdleAndHasAFloor) {
  DutyController c(30);
  c.update(-1, kDt);  // no reading
  EXPECT_DOUBLE_EQ(c.duty(), 0.30);
  const double before = c.duty();
  c.update(100, kDt);  // far over: moves, but by less than half in one step
  EXPECT_LT(c.duty(), before);
  EXPECT_GT(c.duty(), before / 2);
  DutyController idle(30);
  for (int step = 0; step < 60; ++step) idle.update(0, kDt);  // the job launches nothing
  EXPECT_DOUBLE_EQ(idle.duty(), 1.0);
  DutyController hog(1);
  for (int step = 0; step < 200; ++step) hog.update(100, kDt);  // never comes down to its cap
  EXPECT_DOUBLE_EQ(hog.duty(), DutyController::kMinDuty);
}

// Two compute-bound jobs on one GPU, each behind its own gate (20 ms period, its own phase): at each
// instant the jobs whose gate is open, and the job whose last kernel (2 ms) still runs past it,
// share the GPU equally (time-slicing). What each controller reads is its job's share one second
// late, plus noise.
struct TwoJobs {
  double share[2] = {0, 0};
  void run(const double duty[2], const std::int64_t phase[2]) {
    constexpr int kSteps = 2000;    // 10 µs grid over one 20 ms period
    constexpr double kSpill = 0.1;  // a 2 ms kernel launched at the gate's close runs 2 ms more
    double busy[2] = {0, 0};
    for (int t = 0; t < kSteps; ++t) {
      bool on[2];
      for (int j = 0; j < 2; ++j) {
        const double x =
            std::fmod(static_cast<double>(t) / kSteps - static_cast<double>(phase[j]) / kGatePeriodNs + 1.0, 1.0);
        on[j] = x < std::min(1.0, duty[j] + kSpill);
      }
      const int n = on[0] + on[1];
      for (int j = 0; j < 2; ++j) busy[j] += on[j] ? 1.0 / n : 0.0;
    }
    for (int j = 0; j < 2; ++j) share[j] = 100 * busy[j] / kSteps;
  }
};

TEST(SliceDutyController, TwoCappedJobsSideBySideEachHoldTheirShare) {
  const double target[2] = {30, 60};
  DutyController c[2] = {DutyController(target[0]), DutyController(target[1])};
  const std::int64_t phase[2] = {gate_phase_ns(4242), gate_phase_ns(4243)};
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0, 8);  // NVML's 1/6 s samples, averaged per half second
  std::deque<double> late[2];
  std::vector<double> seen[2];
  for (int step = 0; step < 120; ++step) {  // 60 s
    const double duty[2] = {c[0].duty(), c[1].duty()};
    TwoJobs gpu;
    gpu.run(duty, phase);
    for (int j = 0; j < 2; ++j) {
      seen[j].push_back(gpu.share[j]);
      late[j].push_back(gpu.share[j]);
      if (late[j].size() > 2) late[j].pop_front();  // read one second late
      c[j].update(std::max(0.0, late[j].front() + noise(rng)), kDt);
    }
  }
  for (int j = 0; j < 2; ++j) {
    double mean = 0;
    for (double s : seen[j]) mean += s;
    mean /= static_cast<double>(seen[j].size());
    EXPECT_NEAR(mean, target[j], 3) << "job " << j << " over the whole 60 s";
    // Settled after 10 s: every 10 s window within 5 points of the cap.
    for (std::size_t w = 20; w + 20 <= seen[j].size(); w += 20) {
      double window = 0;
      for (std::size_t i = w; i < w + 20; ++i) window += seen[j][i];
      EXPECT_NEAR(window / 20, target[j], 5)
          << "job " << j << ", the 10 s from " << static_cast<double>(w) * kDt << " s";
    }
  }
}

TEST(SliceComputeGate, OpenForTheDutyOfTheTimeAndAWaitEndsWhereItOpens) {
  for (double duty : {0.05, 0.3, 0.6, 0.95}) {
    std::int64_t open = 0, n = 0;
    for (std::int64_t now = 0; now < 200 * kGatePeriodNs; now += 10'000, ++n) {  // 200 periods, 10 µs apart
      const std::int64_t wait = gate_wait_ns(now, duty, 4242);
      ASSERT_GE(wait, 0);
      ASSERT_LT(wait, 2 * kGatePeriodNs);
      if (wait == 0)
        ++open;
      else
        ASSERT_EQ(gate_wait_ns(now + wait, duty, 4242), 0) << "duty " << duty << " at " << now;
    }
    EXPECT_NEAR(static_cast<double>(open) / static_cast<double>(n), duty, 0.01) << "duty " << duty;
  }
  EXPECT_EQ(gate_wait_ns(123456789, 1.0, 1), 0);
}

TEST(SliceComputeGate, SamplesEverySixthOfASecondSeeTheDutyNotOnePlaceOfThePeriod) {
  // NVML's per-process samples come every 1/6 s = 8.33 periods: they see the same three places of a
  // period forever if the window stays put. With the window moving, the share of samples that find
  // the gate open is the duty.
  for (std::int64_t slice : {1, 4242, 99991}) {
    for (double duty : {0.3, 0.6}) {
      int open = 0;
      constexpr int kSamples = 3000;
      for (int i = 0; i < kSamples; ++i) {
        const std::int64_t now = 5'000'000 + static_cast<std::int64_t>(i) * 1'000'000'000 / 6;
        if (gate_wait_ns(now, duty, slice) == 0) ++open;
      }
      EXPECT_NEAR(static_cast<double>(open) / kSamples, duty, 0.04) << "slice " << slice << ", duty " << duty;
    }
  }
}

TEST(SliceDutyController, GatePhasesDifferBetweenSlicesAndStayInThePeriod) {
  for (std::int64_t id = 1; id < 5000; id += 37) {
    EXPECT_GE(gate_phase_ns(id), 0);
    EXPECT_LT(gate_phase_ns(id), kGatePeriodNs);
    EXPECT_NE(gate_phase_ns(id), gate_phase_ns(id + 1));
  }
}

}  // namespace
}  // namespace gpudoc::slice::inject
