// The compute cap's controller (pure logic): the launch duty starts at the cap, shrinks while the
// slice's measured share is over it, grows back under it but never past the cap (the slice's part
// of the period), holds on a missing reading, and two capped jobs whose kernels spill past their
// windows each settle at their own cap with NVML's late and noisy readings. The gate: open for the
// duty of the time, and two slices with disjoint parts of the period never open at once.
#include <gtest/gtest.h>

#include <climits>
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
  EXPECT_DOUBLE_EQ(idle.duty(), 0.30);                        // its whole part, not more
  DutyController hog(1);
  for (int step = 0; step < 200; ++step) hog.update(100, kDt);  // never comes down to its cap
  EXPECT_DOUBLE_EQ(hog.duty(), DutyController::kMinDuty);
}

// Two compute-bound jobs on one GPU, each behind its own gate in its own part of the period (the
// first [0, 30 %), the second [30 %, 90 %)): a job runs while its gate is open and for 2 ms after it
// closes (its last kernel); where both run, they share the GPU equally (time-slicing). What each
// controller reads is its job's share one second late, plus noise.
struct TwoJobs {
  double share[2] = {0, 0};
  void run(const double duty[2], const std::int64_t offset[2], std::int64_t first_period) {
    constexpr std::int64_t kStep = 10'000;      // 10 µs grid
    constexpr std::int64_t kSpill = 2'000'000;  // a 2 ms kernel launched at the gate's close runs 2 ms more
    constexpr int kPeriods = 4;
    double busy[2] = {0, 0};
    std::int64_t closed_at[2] = {INT64_MIN / 2, INT64_MIN / 2};
    std::int64_t steps = 0;
    for (std::int64_t now = (first_period - 1) * kGatePeriodNs; now < (first_period + kPeriods) * kGatePeriodNs;
         now += kStep) {
      bool on[2];
      for (int j = 0; j < 2; ++j) {
        const bool open = gate_wait_ns(now, duty[j], offset[j]) == 0;
        if (open) closed_at[j] = now;
        on[j] = open || now - closed_at[j] < kSpill;
      }
      if (now < first_period * kGatePeriodNs) continue;  // the period before: only for the spill
      ++steps;
      const int n = on[0] + on[1];
      for (int j = 0; j < 2; ++j) busy[j] += on[j] ? 1.0 / n : 0.0;
    }
    for (int j = 0; j < 2; ++j) share[j] = 100 * busy[j] / static_cast<double>(steps);
  }
};

TEST(SliceDutyController, TwoCappedJobsSideBySideEachHoldTheirShare) {
  const double target[2] = {30, 60};
  DutyController c[2] = {DutyController(target[0]), DutyController(target[1])};
  const std::int64_t offset[2] = {0, kGatePeriodNs * 3 / 10};
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0, 8);  // NVML's 1/6 s samples, averaged per half second
  std::deque<double> late[2];
  std::vector<double> seen[2];
  for (int step = 0; step < 120; ++step) {  // 60 s
    const double duty[2] = {c[0].duty(), c[1].duty()};
    TwoJobs gpu;
    gpu.run(duty, offset, 1000 + 25 * step);
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
      const std::int64_t offset = kGatePeriodNs * 7 / 10;  // windows that often wrap past the period's end
      const std::int64_t wait = gate_wait_ns(now, duty, offset);
      ASSERT_GE(wait, 0);
      ASSERT_LT(wait, 2 * kGatePeriodNs);
      if (wait == 0)
        ++open;
      else
        ASSERT_EQ(gate_wait_ns(now + wait, duty, offset), 0) << "duty " << duty << " at " << now;
    }
    EXPECT_NEAR(static_cast<double>(open) / static_cast<double>(n), duty, 0.01) << "duty " << duty;
  }
  EXPECT_EQ(gate_wait_ns(123456789, 1.0, 1), 0);
}

TEST(SliceComputeGate, SamplesEverySixthOfASecondSeeTheDutyNotOnePlaceOfThePeriod) {
  // NVML's per-process samples come every 1/6 s = 8.33 periods: they see the same three places of a
  // period forever if the window stays put. With the window moving, the share of samples that find
  // the gate open is the duty.
  for (std::int64_t offset : {std::int64_t{0}, kGatePeriodNs / 3, kGatePeriodNs * 9 / 10}) {
    for (double duty : {0.3, 0.6}) {
      int open = 0;
      constexpr int kSamples = 3000;
      for (int i = 0; i < kSamples; ++i) {
        const std::int64_t now = 5'000'000 + static_cast<std::int64_t>(i) * 1'000'000'000 / 6;
        if (gate_wait_ns(now, duty, offset) == 0) ++open;
      }
      EXPECT_NEAR(static_cast<double>(open) / kSamples, duty, 0.04) << "offset " << offset << ", duty " << duty;
    }
  }
}

// Slices with disjoint parts of the period ([0, 30 %), [30 %, 90 %), [90 %, 100 %)) at any duty up to
// their part are never open at the same instant, whatever the rotation does; the first slice's
// windows wrap past the period's end as often as not.
TEST(SliceComputeGate, SlicesWithDisjointPartsAreNeverOpenTogether) {
  const std::int64_t offset[3] = {0, kGatePeriodNs * 3 / 10, kGatePeriodNs * 9 / 10};
  const double most[3] = {0.3, 0.6, 0.1};
  for (double f : {1.0, 0.7, 0.2}) {
    int open_somewhere = 0;
    for (std::int64_t now = 0; now < 300 * kGatePeriodNs; now += 7'001) {
      int open = 0;
      for (int j = 0; j < 3; ++j) open += gate_wait_ns(now, most[j] * f, offset[j]) == 0 ? 1 : 0;
      ASSERT_LE(open, 1) << "at " << now << ", duties x" << f;
      open_somewhere += open;
    }
    EXPECT_GT(open_somewhere, 0);
  }
}

}  // namespace
}  // namespace gpudoc::slice::inject
