// The waveform features: resampling (gaps, NaN, unsorted input), levels, autocorrelation and
// period, crossings, slope; the step grid gives the dense grid's numbers in memory that follows
// the samples.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>

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
  EXPECT_DOUBLE_EQ(g.v[9], 30);      // 0.9 s: 0.5 s old, still held
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

// Random series of every shape the diagnosis meets: jittered and regular times, bursts, long gaps,
// repeated times and values, samples before the grid's start, unsorted input, NaN.
telemetry::Series random_series(std::mt19937_64& rng) {
  telemetry::Series s;
  std::uniform_real_distribution<double> u(0, 1);
  double t = -1 + 2 * u(rng);
  const int n = std::uniform_int_distribution<int>(0, 400)(rng);
  for (int i = 0; i < n; ++i) {
    const double r = u(rng);
    t += r < 0.05 ? 0 : r < 0.1 ? 5 + 30 * u(rng) : r < 0.6 ? 0.1 : 0.2 * u(rng);
    s.t.push_back(std::round(t * 1e6) / 1e6);
    s.v.push_back(u(rng) < 0.02 ? NAN : u(rng) < 0.3 ? 100 : std::round(100 * u(rng) * 8) / 8);
  }
  if (u(rng) < 0.2 && n > 2) std::swap(s.t[0], s.t[static_cast<std::size_t>(n) - 1]);
  return s;
}

bool same(double a, double b) {
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b) || (std::isnan(a) && std::isnan(b));
}

TEST(StepGrid, HoldsExactlyTheCellsTheDenseGridHolds) {
  std::mt19937_64 rng(42);
  for (int round = 0; round < 300; ++round) {
    const auto s = random_series(rng);
    const double t0 = std::uniform_real_distribution<double>(-1, 5)(rng);
    const double t1 = t0 + std::uniform_real_distribution<double>(0, 90)(rng);
    const double dt = round % 3 == 0 ? 0.1 : 0.05 + 0.5 * std::uniform_real_distribution<double>(0, 1)(rng);
    const double hold = std::uniform_real_distribution<double>(0.05, 40)(rng);
    const Grid dense = resample(s, t0, t1, dt, hold);
    const StepGrid steps = resample_steps(s, t0, t1, dt, hold);
    ASSERT_EQ(steps.cells, dense.v.size()) << "round " << round;
    const std::vector<double> expanded = steps.dense(0, steps.cells);
    ASSERT_EQ(expanded.size(), dense.v.size());
    for (std::size_t c = 0; c < dense.v.size(); ++c)
      ASSERT_TRUE(same(expanded[c], dense.v[c])) << "round " << round << " cell " << c;
    // Levels and crossings of any range: bit for bit the dense grid's.
    for (int k = 0; k < 5 && !dense.v.empty(); ++k) {
      std::size_t a = std::uniform_int_distribution<std::size_t>(0, dense.v.size() - 1)(rng);
      std::size_t b = std::uniform_int_distribution<std::size_t>(a, dense.v.size())(rng);
      const auto part = std::span<const double>(dense.v).subspan(a, b - a);
      const Levels x = levels(steps, a, b), y = levels(part);
      EXPECT_EQ(x.n, y.n);
      EXPECT_EQ(steps.count(a, b), y.n);
      for (auto [p, q] : {std::pair{x.mean, y.mean},
                          {x.sd, y.sd},
                          {x.p05, y.p05},
                          {x.p50, y.p50},
                          {x.p95, y.p95},
                          {x.min, y.min},
                          {x.max, y.max}})
        EXPECT_TRUE(same(p, q)) << p << " vs " << q << ", round " << round;
      EXPECT_EQ(crossings(steps, a, b, 50), crossings(part, 50));
    }
  }
}

TEST(StepGrid, MemoryFollowsTheSamplesNotTheSpan) {
  // Two samples 10^8 s apart: a dense grid would be 10^9 cells; the steps are two short runs.
  const auto s = series({0.1, 1e8}, {97, 3});
  const StepGrid g = resample_steps(s, 0.1, 1e8 + 1, 0.1, 600);
  EXPECT_GT(g.cells, 1'000'000'000u);
  ASSERT_EQ(g.steps.size(), 2u);
  EXPECT_EQ(g.steps[0].first, 0u);
  EXPECT_NEAR(g.steps[0].count, 6001, 1);  // held 600 s, then a gap of three years
  EXPECT_LE(g.steps[1].count, 11u);        // the last second of the grid
  const Levels l = levels(g, 0, g.cells);
  EXPECT_EQ(l.n, g.count(0, g.cells));
  EXPECT_LT(l.n, 6020u);
  // Equal neighbours merge: a constant series is one step, however many samples.
  std::vector<double> t, v;
  for (int i = 0; i < 1000; ++i) {
    t.push_back(i * 0.2);
    v.push_back(42);
  }
  EXPECT_EQ(resample_steps(series(t, v), 0, 200, 0.1, 0.6).steps.size(), 1u);
}

}  // namespace
}  // namespace gpudoc::diagnose
