#include "guard/forecast.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace gpudoc::guard {
namespace {

// A first-order system sampled every 0.125 s (exact in binary, so the model's 0.5 s grid falls on
// samples): time constant tau_s, gain gain_c_per_w, ambient ambient_c. A sample's power is the
// power of the interval that ends at it (as a sensor's average), and power changes only on the
// 0.5 s grid, so the exact 0.5 s discretisation is the model the fit must find.
struct Plant {
  double tau_s = 3.0;
  double gain_c_per_w = 0.05;
  double ambient_c = 30.0;
  double a(double dt) const { return std::exp(-dt / tau_s); }
  double step(double t_c, double p_w, double dt) const {
    const double k = a(dt);
    return k * t_c + (1 - k) * (ambient_c + gain_c_per_w * p_w);
  }
};

constexpr double kDt = 0.125;

struct PlantRun {
  std::vector<double> t, p, temp;
};

// A first sample at t = 0, then power levels held for hold_s each (a multiple of 0.5 s).
PlantRun simulate(const Plant& plant, const std::vector<double>& levels, double hold_s, double start_c) {
  PlantRun r;
  double temp = start_c;
  r.t.push_back(0);
  r.p.push_back(levels.front());
  r.temp.push_back(temp);
  const auto per_level = static_cast<int>(std::lround(hold_s / kDt));
  int k = 0;
  for (double level : levels) {
    for (int i = 0; i < per_level; ++i) {
      temp = plant.step(temp, level, kDt);
      r.t.push_back(++k * kDt);
      r.p.push_back(level);
      r.temp.push_back(temp);
    }
  }
  return r;
}

std::vector<double> excitation_levels(int n) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(80.0, 700.0);
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(u(rng));
  return v;
}

TEST(ThermalModel, RecoversKnownFirstOrderSystem) {
  const Plant plant;
  const PlantRun r = simulate(plant, excitation_levels(40), 4.0, 35.0);
  ThermalModel m;
  for (std::size_t i = 0; i < r.t.size(); ++i) m.add(r.t[i], r.p[i], r.temp[i]);
  const ThermalFit f = m.fit();
  const double a = plant.a(0.5);
  EXPECT_TRUE(f.trusted);
  EXPECT_NEAR(f.a, a, 1e-3);
  EXPECT_NEAR(f.b, (1 - a) * plant.gain_c_per_w, 1e-5);
  EXPECT_NEAR(f.c, (1 - a) * plant.ambient_c, 2e-2);
}

TEST(ThermalModel, FiveSecondForecastErrorGoesToZero) {
  const Plant plant;
  // Levels held 8 s: 3 s into a level the held power (2 s) is that level for the next 5 s.
  const PlantRun r = simulate(plant, excitation_levels(30), 8.0, 35.0);
  ThermalModel m;
  double worst_late = 0;
  for (std::size_t i = 0; i < r.t.size(); ++i) {
    m.add(r.t[i], r.p[i], r.temp[i]);
    const std::size_t ahead = i + 40;  // 5 s
    const double into_level = std::fmod(r.t[i], 8.0);
    if (ahead >= r.t.size() || r.t[i] < 120 || into_level < 3.0 || into_level > 3.0 + 1e-9) continue;
    worst_late = std::max(worst_late, std::abs(m.forecast(5.0).temperature_celsius - r.temp[ahead]));
  }
  EXPECT_LT(worst_late, 0.02);
  ASSERT_TRUE(m.forecast(5.0).error_celsius.has_value());
  EXPECT_TRUE(std::isfinite(*m.forecast(5.0).error_celsius));
}

TEST(ThermalModel, StepInPowerIsForecastBeforeTheTemperatureMoves) {
  const Plant plant;
  PlantRun r = simulate(plant, excitation_levels(30), 4.0, 35.0);
  ThermalModel m;
  for (std::size_t i = 0; i < r.t.size(); ++i) m.add(r.t[i], r.p[i], r.temp[i]);
  // Settle at 100 W, then step to 650 W.
  double t = r.t.back(), newest = r.temp.back();
  auto feed = [&](double p, double seconds) {
    for (int i = 0; i < static_cast<int>(seconds / kDt); ++i) {
      t += kDt;
      newest = plant.step(newest, p, kDt);
      m.add(t, p, newest);
    }
  };
  feed(100, 30);
  feed(650, 2.5);  // power_hold_s and one cell: the held power is now the new level
  double truth = newest;
  for (int i = 0; i < 40; ++i) truth = plant.step(truth, 650, kDt);
  const Forecast f = m.forecast(5.0);
  EXPECT_TRUE(f.from_model);
  EXPECT_NEAR(f.temperature_celsius, truth, 0.02);
  EXPECT_GT(truth - newest, 5.0);  // persistence would be off by this much
}

TEST(ThermalModel, NoisyQuantisedSensorStillForecastsWithinOneDegree) {
  const Plant plant;
  const PlantRun r = simulate(plant, excitation_levels(60), 8.0, 35.0);
  std::mt19937 rng(11);
  std::normal_distribution<double> noise(0.0, 0.3);
  ThermalModel m;
  double sum = 0;
  int n = 0;
  for (std::size_t i = 0; i < r.t.size(); ++i) {
    m.add(r.t[i], r.p[i] + 5 * noise(rng), std::round(r.temp[i] + noise(rng)));
    const std::size_t ahead = i + 40;
    const double into_level = std::fmod(r.t[i], 8.0);
    if (ahead >= r.t.size() || r.t[i] < 60 || into_level < 2.5 || into_level > 3.0) continue;
    sum += std::abs(m.forecast(5.0).temperature_celsius - r.temp[ahead]);
    ++n;
  }
  ASSERT_GT(n, 0);
  EXPECT_LT(sum / n, 1.0);
  const ThermalFit f = m.fit();
  EXPECT_TRUE(f.trusted);
  EXPECT_NEAR(f.b / (1 - f.a), plant.gain_c_per_w, 0.15 * plant.gain_c_per_w);  // steady-state gain
}

TEST(ThermalModel, ConstantInputGivesPersistenceAndNoNaN) {
  ThermalModel m;
  for (int i = 0; i < 2000; ++i) m.add(i * 0.1, 300.0, 55.0);
  const Forecast f = m.forecast(5.0);
  EXPECT_FALSE(f.from_model);
  EXPECT_EQ(f.temperature_celsius, 55.0);
  ASSERT_TRUE(f.error_celsius.has_value());
  EXPECT_EQ(*f.error_celsius, 0.0);
  const ThermalFit fit = m.fit();
  EXPECT_TRUE(std::isfinite(fit.a) && std::isfinite(fit.b) && std::isfinite(fit.c));
  EXPECT_FALSE(m.seconds_to(80.0).has_value());
  EXPECT_EQ(m.seconds_to(50.0), 0.0);
}

TEST(ThermalModel, NoTemperatureYetSaysSo) {
  ThermalModel m;
  EXPECT_FALSE(m.has_temperature());
  m.add(0.0, 300.0, std::nullopt);
  EXPECT_FALSE(m.has_temperature());
  EXPECT_FALSE(m.seconds_to(80.0).has_value());
  EXPECT_FALSE(m.forecast(5.0).from_model);
}

TEST(ThermalModel, BadSamplesAreIgnoredAndNothingIsNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const Plant plant;
  const PlantRun r = simulate(plant, excitation_levels(30), 4.0, 35.0);
  ThermalModel m;
  std::size_t expected_ignored = 0;
  for (std::size_t i = 0; i < r.t.size(); ++i) {
    m.add(r.t[i], r.p[i], r.temp[i]);
    if (i % 17 == 0) {
      m.add(nan, 1e9, 1e9);           // no time
      m.add(r.t[i] - 3.0, 1e9, 1e9);  // older than the newest
      expected_ignored += 2;
    }
    if (i % 13 == 0) m.add(r.t[i], nan, inf);           // a duplicate time with no values
    if (i % 11 == 0) m.add(r.t[i], r.p[i], r.temp[i]);  // an exact duplicate
    const Forecast f = m.forecast(5.0);
    ASSERT_TRUE(std::isfinite(f.temperature_celsius));
    if (f.error_celsius) {
      ASSERT_TRUE(std::isfinite(*f.error_celsius));
    }
  }
  EXPECT_EQ(m.ignored(), expected_ignored);
  EXPECT_NEAR(m.fit().a, plant.a(0.5), 1e-3);  // the good samples still fit exactly

  // A gap of an hour and one of 10^7 s: the grid jumps, the fit survives, the forecast is finite.
  const double t_end = r.t.back();
  // Values at the plant's steady state for 300 W, so the pairs held after each sample fit it too.
  m.add(t_end + 3600, 300, 45);
  m.add(t_end + 1e7, 300, 45);
  m.add(t_end + 1e7 + 0.1, 300, 45);
  EXPECT_TRUE(std::isfinite(m.forecast(5.0).temperature_celsius));
  EXPECT_NEAR(m.fit().a, plant.a(0.5), 1e-3);
  EXPECT_TRUE(std::isfinite(m.forecast(std::numeric_limits<double>::infinity()).temperature_celsius));
  EXPECT_TRUE(std::isfinite(m.forecast(-1).temperature_celsius));
}

TEST(ThermalModel, ExtremeValuesNeverGiveNaN) {
  ThermalModel m;
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-1e12, 1e12);
  for (int i = 0; i < 5000; ++i) {
    m.add(i * 0.1, u(rng), u(rng));
    const Forecast f = m.forecast(5.0);
    ASSERT_TRUE(std::isfinite(f.temperature_celsius)) << i;
    const ThermalFit fit = m.fit();
    ASSERT_TRUE(std::isfinite(fit.a) && std::isfinite(fit.b) && std::isfinite(fit.c)) << i;
  }
}

TEST(ThrottleRisk, TimeUntilTheForecastCrossesSlowdownLessMargin) {
  // Fit on excitation, then run at 1000 W toward 30 + 50 = 80 °C... the plant's steady state at
  // 1200 W is 90 °C, over the 89 °C slowdown.
  const Plant plant;
  const PlantRun r = simulate(plant, excitation_levels(30), 4.0, 35.0);
  ThermalModel m;
  for (std::size_t i = 0; i < r.t.size(); ++i) m.add(r.t[i], r.p[i], r.temp[i]);
  double t = r.t.back(), temp = r.temp.back();
  for (int i = 0; i < 400; ++i) {  // 50 s at 200 W: settles at 40 °C
    t += kDt;
    temp = plant.step(temp, 200, kDt);
    m.add(t, 200, temp);
  }
  for (int i = 0; i < 20; ++i) {  // 2.5 s at 1200 W: the held power (2 s) is 1200 W
    t += kDt;
    temp = plant.step(temp, 1200, kDt);
    m.add(t, 1200, temp);
  }
  gpu::DeviceInfo info;
  info.temperature_slowdown_celsius = 89;
  info.temperature_gpu_max_celsius = 87;
  const auto risk = throttle_risk(m, info, 3.0);
  ASSERT_TRUE(risk.has_value());
  EXPECT_EQ(risk->limit_celsius, 89);
  EXPECT_EQ(risk->threshold_celsius, 86);
  // Analytically: T(s) = 90 + (T0 - 90) exp(-s / tau) reaches 86 at s = tau ln((90 - T0) / 4).
  const double expected = plant.tau_s * std::log((90 - temp) / 4.0);
  ASSERT_TRUE(risk->seconds.has_value());
  EXPECT_NEAR(*risk->seconds, expected, 0.5);  // one grid step

  // Without slowdown the maximum operating temperature is used; without any limit, nothing.
  info.temperature_slowdown_celsius.reset();
  EXPECT_EQ(throttle_risk(m, info, 0.0)->limit_celsius, 87);
  EXPECT_FALSE(throttle_risk(m, gpu::DeviceInfo{}, 3.0).has_value());
  // Already over the threshold: 0 s. Under a steady state below it: nullopt.
  info.temperature_slowdown_celsius = 50;
  EXPECT_EQ(throttle_risk(m, info, 3.0)->seconds, 0.0);
  info.temperature_slowdown_celsius = 200;
  EXPECT_FALSE(throttle_risk(m, info, 3.0)->seconds.has_value());
}

TEST(GpuForecaster, FitsHbmSeparatelyWhenTheStreamHasIt) {
  GpuForecaster with;
  GpuForecaster without;
  for (int i = 0; i < 100; ++i) {
    const double t = i * 0.1;
    ThermalSample s{t, 300.0, 50.0, std::nullopt};
    if (i % 10 == 0) s.memory_temperature_celsius = 45.0;
    with.add(s);
    s.memory_temperature_celsius.reset();
    without.add(s);
  }
  EXPECT_TRUE(with.memory().has_temperature());
  EXPECT_EQ(with.memory().forecast(5).temperature_celsius, 45.0);
  EXPECT_FALSE(without.memory().has_temperature());
  EXPECT_FALSE(memory_throttle_risk(without.memory(), gpu::DeviceInfo{}, 3.0).has_value());
}

TEST(Baselines, PersistenceAndLinearExtrapolation) {
  Persistence p;
  LinearExtrapolation l(5.0);
  EXPECT_FALSE(p.forecast(5).has_value());
  EXPECT_FALSE(l.forecast(5).has_value());
  for (int i = 0; i <= 100; ++i) {
    const double t = i * 0.1;
    p.add(t, 40 + 0.5 * t);
    l.add(t, 40 + 0.5 * t);
  }
  p.add(std::nan(""), 0.0);
  l.add(std::nan(""), 0.0);
  EXPECT_DOUBLE_EQ(*p.forecast(5), 45.0);
  EXPECT_NEAR(*l.forecast(5), 47.5, 1e-9);
  LinearExtrapolation one;
  one.add(1.0, 50.0);
  EXPECT_EQ(one.forecast(5), 50.0);  // one point: no slope, its value
}

TEST(MemoryHeadroom, TimeToFullAtTheCurrentGrowth) {
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  MemoryHeadroom m(30.0);
  EXPECT_FALSE(m.seconds_to_full(10 * kGiB).has_value());
  for (int i = 0; i <= 10; ++i) m.add(i, i * kGiB);  // 1 GiB/s, at 10 GiB of 16
  ASSERT_TRUE(m.growth_bytes_per_second().has_value());
  EXPECT_NEAR(*m.growth_bytes_per_second(), kGiB, 1.0);
  EXPECT_NEAR(*m.seconds_to_full(16 * kGiB), 6.0, 1e-9);
  EXPECT_EQ(m.seconds_to_full(8 * kGiB), 0.0);  // already past
  EXPECT_FALSE(m.seconds_to_full(std::nan("")).has_value());

  MemoryHeadroom flat;
  for (int i = 0; i < 30; ++i) flat.add(i, 5 * kGiB);
  EXPECT_FALSE(flat.seconds_to_full(16 * kGiB).has_value());
  MemoryHeadroom shrinking;
  for (int i = 0; i < 30; ++i) shrinking.add(i, (30 - i) * kGiB);
  EXPECT_FALSE(shrinking.seconds_to_full(64 * kGiB).has_value());
  // Old growth leaves the window: flat for the last 30 s is not growing.
  MemoryHeadroom old;
  for (int i = 0; i < 10; ++i) old.add(i, i * kGiB);
  for (int i = 10; i < 60; ++i) old.add(i, 10 * kGiB);
  EXPECT_FALSE(old.seconds_to_full(16 * kGiB).has_value());
}

}  // namespace
}  // namespace gpudoc::guard
