// The waveform features: resampling (gaps, NaN, unsorted input), levels, autocorrelation and
// period, crossings, slope.
#include <gtest/gtest.h>

#include <cmath>

#include "diagnose/features.hpp"

namespace gpudoc::diagnose {
namespace {

telemetry::Series series(std::vector<double> t, std::vector<double> v) {
  telemetry::Series s;
  s.t = std::move(t);
  s.v = std::move(v);
  return s;
}

TEST(Resample, HoldsTheLatestSampleAndMarksGaps) {
  const auto s = series({0.0, 0.2, 0.4, 3.0}, {10, 20, 30, 40});
  const Grid g = resample(s, 0.0, 3.2, 0.1, 0.6);
  ASSERT_EQ(g.v.size(), 32u);
  EXPECT_DOUBLE_EQ(g.v[0], 10);
  EXPECT_DOUBLE_EQ(g.v[1], 10);
  EXPECT_DOUBLE_EQ(g.v[2], 20);
  EXPECT_DOUBLE_EQ(g.v[9], 30);    // 0.9 s: 0.5 s old, still held
  EXPECT_TRUE(std::isnan(g.v[15]));  // 1.5 s: a gap, not a value
  EXPECT_DOUBLE_EQ(g.v[30], 40);
}

TEST(Resample, SkipsNanAndSortsUnorderedInput) {
  const auto s = series({0.4, 0.0, 0.2, NAN}, {30, 10, NAN, 5});
  const Grid g = resample(s, 0.0, 0.6, 0.1, 1.0);
  EXPECT_DOUBLE_EQ(g.v[0], 10);
  EXPECT_DOUBLE_EQ(g.v[3], 10);  // the NaN at 0.2 is skipped, 10 held
  EXPECT_DOUBLE_EQ(g.v[4], 30);
}

TEST(Resample, EmptyAndDegenerate) {
  EXPECT_TRUE(resample(series({}, {}), 0, 0, 0.1, 1).v.empty());
  const Grid g = resample(series({}, {}), 0, 1, 0.1, 1);
  ASSERT_EQ(g.v.size(), 10u);
  for (double x : g.v) EXPECT_TRUE(std::isnan(x));
}

TEST(Levels, PercentilesIgnoreNan) {
  std::vector<double> v;
  for (int i = 0; i <= 100; ++i) v.push_back(i);
  v.push_back(NAN);
  const Levels l = levels(v);
  EXPECT_EQ(l.n, 101u);
  EXPECT_DOUBLE_EQ(l.mean, 50);
  EXPECT_DOUBLE_EQ(l.p05, 5);
  EXPECT_DOUBLE_EQ(l.p95, 95);
  EXPECT_EQ(levels(std::vector<double>{NAN}).n, 0u);
}

TEST(Autocorrelation, FindsThePeriodOfASquareWave) {
  std::vector<double> v;
  for (int i = 0; i < 300; ++i) v.push_back((i % 10) < 5 ? 100 : 0);  // period 10 cells
  const auto acf = autocorrelation(v, 40);
  ASSERT_EQ(acf.size(), 41u);
  EXPECT_DOUBLE_EQ(acf[0], 1.0);
  const auto p = first_acf_peak(acf, 0.3);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->lag, 10u);
  EXPECT_GT(p->value, 0.9);
  EXPECT_EQ(crossings(v, 50), 59u);
  EXPECT_NEAR(share_at_or_above(v, 50), 0.5, 1e-9);
}

TEST(Autocorrelation, FlatOrShortSignalsHaveNoPeriod) {
  EXPECT_TRUE(autocorrelation(std::vector<double>(100, 42.0), 20).empty());
  EXPECT_TRUE(autocorrelation(std::vector<double>{1, 2}, 20).empty());
  std::vector<double> ramp;
  for (int i = 0; i < 100; ++i) ramp.push_back(i);
  EXPECT_FALSE(first_acf_peak(autocorrelation(ramp, 40), 0.3));
}

TEST(LinearFit, SlopeAndFit) {
  const std::vector<double> t{0, 1, 2, 3, NAN}, v{1, 3, 5, 7, 100};
  const Fit f = linear_fit(t, v);
  EXPECT_EQ(f.n, 4u);
  EXPECT_NEAR(f.slope, 2, 1e-12);
  EXPECT_NEAR(f.intercept, 1, 1e-12);
  EXPECT_NEAR(f.r2, 1, 1e-12);
  EXPECT_EQ(linear_fit(std::vector<double>{1}, std::vector<double>{1}).n, 1u);
}

}  // namespace
}  // namespace gpudoc::diagnose
