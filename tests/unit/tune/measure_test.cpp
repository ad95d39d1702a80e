// tune::judge: the gate's rank test, the bootstrap interval and the confirmation on trials.
#include "tune/measure.hpp"

#include <gtest/gtest.h>

#include <random>

namespace gpudoc::tune {
namespace {

// `trials` trials of `n` samples around `mean` with a relative spread `cv`; the generator starts
// from `rng_seed`.
Groups arm(double mean, double cv, int trials, int n, unsigned rng_seed) {
  std::mt19937 rng(rng_seed);
  std::normal_distribution<double> d(mean, mean * cv);
  Groups g(static_cast<std::size_t>(trials));
  for (auto& t : g)
    for (int i = 0; i < n; ++i) t.push_back(d(rng));
  return g;
}

TEST(Judge, AClearGainIsFasterWithAnIntervalAboveZero) {
  const Judgement j = judge(arm(20, 0.03, 3, 20, 1), arm(10, 0.03, 3, 20, 2), {});
  EXPECT_TRUE(j.faster);
  EXPECT_FALSE(j.slower);
  EXPECT_NEAR(j.speedup_percent, 100, 5);
  ASSERT_TRUE(j.interval);
  EXPECT_GT(j.interval->low_percent, 80);
  EXPECT_LT(j.interval->high_percent, 120);
  EXPECT_EQ(j.control_trials, 3u);
  EXPECT_EQ(j.candidate_samples, 60u);
  ASSERT_TRUE(j.comparison.p_value);
  EXPECT_LT(*j.comparison.p_value, 0.05);
}

// The negative control: the same job twice is never faster, and its interval holds 0.
TEST(Judge, ANullChangeIsNotFaster) {
  const Judgement j = judge(arm(20, 0.05, 3, 20, 3), arm(20, 0.05, 3, 20, 4), {});
  EXPECT_FALSE(j.faster);
  ASSERT_TRUE(j.interval);
  EXPECT_LT(j.interval->low_percent, 3.0);
  EXPECT_LT(std::abs(j.speedup_percent), 3.0);
}

TEST(Judge, AGainBelowTheMinimumIsNotFaster) {
  const Judgement j = judge(arm(20.0, 0.002, 3, 30, 5), arm(19.8, 0.002, 3, 30, 6), {});
  EXPECT_NEAR(j.speedup_percent, 1.0, 0.3);
  EXPECT_FALSE(j.faster);  // significant, but under the 3 % worth keeping
  Rules r;
  r.min_gain_percent = 0.5;
  EXPECT_TRUE(judge(arm(20.0, 0.002, 3, 30, 5), arm(19.8, 0.002, 3, 30, 6), r).faster);
}

TEST(Judge, ASlowerChangeIsSlower) {
  const Judgement j = judge(arm(10, 0.02, 3, 20, 7), arm(15, 0.02, 3, 20, 8), {});
  EXPECT_TRUE(j.slower);
  EXPECT_FALSE(j.faster);
  EXPECT_LT(j.speedup_percent, -25);
}

// The noise is measured: between the trials of the unchanged job and within them.
TEST(Judge, TheUnchangedJobsNoiseIsMeasured) {
  Groups control = {{10, 10.1, 9.9}, {12, 12.1, 11.9}};
  const Judgement j = judge(control, {{9, 9.1, 8.9}}, {});
  EXPECT_GT(j.control_trial_noise_percent, 10);
  EXPECT_GT(j.control_sample_noise_percent, 0);
}

TEST(Confirm, FasterTwiceIsConfirmedOnceIsNot) {
  const Judgement first = judge(arm(20, 0.03, 3, 20, 9), arm(10, 0.03, 3, 20, 10), {});
  const Judgement again = judge(arm(20, 0.03, 2, 20, 11), arm(10, 0.03, 2, 20, 12), {});
  const Judgement null = judge(arm(20, 0.03, 2, 20, 13), arm(20, 0.03, 2, 20, 14), {});
  EXPECT_TRUE(confirm(first, again).confirmed);
  EXPECT_FALSE(confirm(first, null).confirmed);
}

TEST(Judge, EmptySidesGiveNoVerdict) {
  const Judgement j = judge({}, {{1, 2}}, {});
  EXPECT_FALSE(j.faster);
  EXPECT_FALSE(j.interval);
}

}  // namespace
}  // namespace gpudoc::tune
