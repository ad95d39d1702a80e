#include "guard/forecast.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace gpudoc::guard {
namespace {

// A first-order system sampled every 0.125 s: time constant tau_s (3 s, one of the model's
// states), gain gain_c_per_w, ambient ambient_c. A sample's power is the power of the interval
// that ends at it, the input the model's states integrate, so the plant is exactly the model with
// one state (the others and the static gain 0). Its steps are instantaneous in the reading and
// move the temperature by less than ramp_jump_celsius in one sample: no ramp is completed.
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

// A first sample at t = 0, then power levels held for hold_s each (a multiple of 0.125 s). The
// plant starts settled at the first level, as the model's states do at their first reading (an
// unsettled start would be a transient the model's states do not have).
PlantRun simulate(const Plant& plant, const std::vector<double>& levels, double hold_s) {
  PlantRun r;
  double temp = plant.ambient_c + plant.gain_c_per_w * levels.front();
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

// Changed with the two-time-constant model: the fit is no longer a, b, c of a 0.5 s difference
// equation but the gains of fixed-time-constant states; the plant's state is the 3 s one.
TEST(ThermalModel, RecoversKnownFirstOrderSystem) {
  const Plant plant;
  const PlantRun r = simulate(plant, excitation_levels(40), 4.0);
  ThermalModel m;
  for (std::size_t i = 0; i < r.t.size(); ++i) m.add(r.t[i], r.p[i], r.temp[i]);
  const ThermalFit f = m.fit();
  ASSERT_EQ(f.time_constants_s[1], plant.tau_s);
  EXPECT_TRUE(f.trusted);
  EXPECT_NEAR(f.gains[1], plant.gain_c_per_w, 1e-3);
  EXPECT_NEAR(f.static_gain, 0.0, 1e-3);
  EXPECT_NEAR(f.gains[0], 0.0, 1e-3);
  EXPECT_NEAR(f.gains[2], 0.0, 1e-3);
  EXPECT_NEAR(f.steady_gain(), plant.gain_c_per_w, 1e-3);
  EXPECT_NEAR(f.offset_celsius, plant.ambient_c, 0.2);
}

TEST(ThermalModel, FiveSecondForecastErrorGoesToZero) {
  const Plant plant;
  // Levels held 8 s: a forecast made 3 s into a level is due at its last sample, the power held.
  const PlantRun r = simulate(plant, excitation_levels(30), 8.0);
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
  PlantRun r = simulate(plant, excitation_levels(30), 4.0);
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
  // Changed with the new model: the held power is the newest reading (there is no 2 s mean to
  // fill), so one sample after the step the forecast already holds the new level.
  feed(650, kDt);
  EXPECT_EQ(m.held_power(), 650.0);
  double truth = newest;
  for (int i = 0; i < 40; ++i) truth = plant.step(truth, 650, kDt);
  const Forecast f = m.forecast(5.0);
  EXPECT_TRUE(f.from_model);
  EXPECT_NEAR(f.temperature_celsius, truth, 0.02);
  EXPECT_GT(truth - newest, 5.0);  // persistence would be off by this much
}

TEST(ThermalModel, NoisyQuantisedSensorStillForecastsWithinOneDegree) {
  const Plant plant;
  const PlantRun r = simulate(plant, excitation_levels(60), 8.0);
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
  EXPECT_NEAR(f.steady_gain(), plant.gain_c_per_w, 0.15 * plant.gain_c_per_w);
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
  EXPECT_FALSE(fit.trusted);  // the power never moved: the gains cannot be told from the offset
  EXPECT_TRUE(std::isfinite(fit.offset_celsius) && std::isfinite(fit.steady_gain()));
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
  const PlantRun r = simulate(plant, excitation_levels(30), 4.0);
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
  EXPECT_NEAR(m.fit().gains[1], plant.gain_c_per_w, 1e-3);  // the good samples still fit exactly

  // A gap of an hour and one of 10^7 s: the states restart, the fit survives, the forecast is
  // finite.
  const double t_end = r.t.back();
  // Values at the plant's steady state for 300 W, so the pairs held after each sample fit it too.
  m.add(t_end + 3600, 300, 45);
  m.add(t_end + 1e7, 300, 45);
  m.add(t_end + 1e7 + 0.1, 300, 45);
  EXPECT_TRUE(std::isfinite(m.forecast(5.0).temperature_celsius));
  EXPECT_NEAR(m.fit().gains[1], plant.gain_c_per_w, 1e-3);
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
    ASSERT_TRUE(std::isfinite(fit.offset_celsius) && std::isfinite(fit.steady_gain())) << i;
    ASSERT_TRUE(std::isfinite(m.held_power())) << i;
  }
}

// An H200-like die: a static gain (the jump within one sample), a 0.5 s settling and a 40 s heat
// sink, simulated every 10 ms; read every 100 ms as a sensor does: the power as the mean of the
// last second (NVML's reading), the temperature rounded to whole degrees.
struct DiePlant {
  double ambient_c = 30.0;
  double static_c_per_w = 0.02, settle_c_per_w = 0.014, sink_c_per_w = 0.01;
  double settle_tau_s = 0.5, sink_tau_s = 40.0;
};

struct DieRun {
  std::vector<double> t, reading_w, temp_c, truth_c;  // every 100 ms
  std::vector<double> step_t;                         // when the load changed
};

// phases: (watts, seconds), from a start settled at the first phase's power.
DieRun simulate_die(const DiePlant& d, const std::vector<std::pair<double, double>>& phases) {
  constexpr double kFine = 0.01;
  constexpr int kPerSample = 10, kPerSecond = 100;
  std::vector<double> p;
  DieRun r;
  double elapsed = 0;
  for (const auto& [w, seconds] : phases) {
    r.step_t.push_back(elapsed);
    for (int i = 0; i < static_cast<int>(std::lround(seconds / kFine)); ++i) p.push_back(w);
    elapsed += seconds;
  }
  double settle = p.front(), sink = p.front(), window = p.front() * kPerSecond;
  std::vector<double> last_second(kPerSecond, p.front());
  for (std::size_t k = 0; k < p.size(); ++k) {
    settle += (1 - std::exp(-kFine / d.settle_tau_s)) * (p[k] - settle);
    sink += (1 - std::exp(-kFine / d.sink_tau_s)) * (p[k] - sink);
    window += p[k] - last_second[k % kPerSecond];
    last_second[k % kPerSecond] = p[k];
    if ((k + 1) % kPerSample != 0) continue;
    const double temp = d.ambient_c + d.static_c_per_w * p[k] + d.settle_c_per_w * settle + d.sink_c_per_w * sink;
    r.t.push_back(static_cast<double>(k + 1) * kFine);
    r.reading_w.push_back(window / kPerSecond);
    r.truth_c.push_back(temp);
    r.temp_c.push_back(std::round(temp));
  }
  return r;
}

const std::vector<std::pair<double, double>> kDiePhases = {{120, 20}, {690, 60}, {120, 30}, {400, 40},
                                                           {120, 30}, {690, 90}, {120, 30}, {690, 60}};

// A fast static gain plus slow first-order states, identified online from the 1 s mean power and
// whole-degree readings; forecast 5 s ahead within a fraction of a degree where no load change
// lies ahead, the heat sink's slow rise included, which persistence misses.
TEST(ThermalModel, IdentifiesAndForecastsATwoTimeConstantDie) {
  const DiePlant d;
  const DieRun r = simulate_die(d, kDiePhases);
  ForecastConfig continuous;
  continuous.sensor_resolution_celsius = 0;  // to be compared with the unrounded truth
  ThermalModel m;                            // as the guard runs it: forecasts in whole degrees
  ThermalModel c(continuous);
  double truth_error = 0, truth_error_persistence = 0, after_step_model = 0, after_step_persistence = 0;
  double heatup_model = 0, heatup_persistence = 0;
  int n = 0, after_step_n = 0, heatup_n = 0;
  for (std::size_t i = 0; i < r.t.size(); ++i) {
    m.add(r.t[i], r.reading_w[i], r.temp_c[i]);
    c.add(r.t[i], r.reading_w[i], r.temp_c[i]);
    const std::size_t ahead = i + 50;  // 5 s
    if (r.t[i] < 60 || ahead >= r.t.size()) continue;
    bool change_ahead = false;
    double since_step = r.t[i];
    for (double s : r.step_t) {
      if (s > r.t[i] && s <= r.t[ahead]) change_ahead = true;
      if (s <= r.t[i]) since_step = r.t[i] - s;
    }
    if (change_ahead) continue;
    const double fc = c.forecast(5.0).temperature_celsius;
    truth_error += std::abs(fc - r.truth_c[ahead]);
    truth_error_persistence += std::abs(r.temp_c[i] - r.truth_c[ahead]);
    ++n;
    if (since_step < 10) {  // the settling after a step, against what the sensor will read
      after_step_model += std::abs(m.forecast(5.0).temperature_celsius - r.temp_c[ahead]);
      after_step_persistence += std::abs(r.temp_c[i] - r.temp_c[ahead]);
      ++after_step_n;
    }
    // 10-40 s into the 90 s full phase, after 30 s idle: the heat sink still warming, by
    // 0.2-0.5 °C per 5 s.
    if (r.t[i] >= 180 + 10 && r.t[i] <= 180 + 40) {
      heatup_model += r.truth_c[ahead] - fc;
      heatup_persistence += r.truth_c[ahead] - r.truth_c[i];
      ++heatup_n;
    }
  }
  ASSERT_GT(n, 1000);
  const ThermalFit fit = m.fit();
  EXPECT_TRUE(fit.trusted);
  const double steady = d.static_c_per_w + d.settle_c_per_w + d.sink_c_per_w;
  EXPECT_NEAR(fit.steady_gain(), steady, 0.1 * steady);
  EXPECT_NEAR(fit.gains[2], d.sink_c_per_w, 0.3 * d.sink_c_per_w);  // the heat sink, 40 s
  // Against the true temperature: within a third of a degree (the forecast starts from the
  // whole-degree readings), a quarter better than persistence (0.31 vs 0.42 °C when written).
  EXPECT_LT(truth_error / n, 0.35);
  EXPECT_LT(truth_error / n, 0.8 * truth_error_persistence / n);
  ASSERT_GT(after_step_n, 300);
  EXPECT_LT(after_step_model / after_step_n, 0.6 * after_step_persistence / after_step_n);  // 0.40 vs 0.84
  ASSERT_GT(heatup_n, 250);
  EXPECT_GT(heatup_persistence / heatup_n, 0.25);      // persistence lags the warming heat sink (0.29)
  EXPECT_LT(std::abs(heatup_model / heatup_n), 0.05);  // the model follows it (0.001)
}

// A load step, as the sensors show it: the die has jumped, the 1 s mean power is two samples into
// its ramp. The held power is the level the ramp heads for, and the forecast the settled die.
TEST(ThermalModel, StepResponseIsForecastFromTheFirstSamplesOfTheRamp) {
  const DiePlant d;
  const DieRun r = simulate_die(d, kDiePhases);
  ThermalModel m;
  const double step = 180;  // 120 W -> 690 W after a 30 s idle
  std::size_t i = 0;
  for (; i < r.t.size() && r.t[i] < step + 0.2 - 1e-9; ++i) m.add(r.t[i], r.reading_w[i], r.temp_c[i]);
  ASSERT_LT(r.reading_w[i - 1], 300);  // the reading is still low: 2 of its 10 samples
  EXPECT_NEAR(m.held_power(), 690, 0.1 * 690);
  const Forecast f = m.forecast(5.0);
  const double truth = r.truth_c[i - 1 + 50];
  EXPECT_TRUE(f.from_model);
  EXPECT_NEAR(f.temperature_celsius, truth, 1.0);
  EXPECT_GT(truth - r.temp_c[i - 1], 5.0);  // persistence would be off by this much
}

// The ramp completion does not extrapolate noise: one blip is not a step; two moves the same way
// are, and the held power is where a 1 s mean is heading.
TEST(ThermalModel, OnlyAConfirmedRampIsCompleted) {
  ThermalModel m;
  double t = 0;
  auto feed = [&](double w) {
    t += 0.1;
    m.add(t, w, 40.0);
  };
  for (int i = 0; i < 20; ++i) feed(120);
  feed(150);  // a blip of 30 W
  EXPECT_EQ(m.held_power(), 150);
  feed(121);
  EXPECT_EQ(m.held_power(), 121);
  for (int i = 0; i < 10; ++i) feed(120);
  feed(177);  // a step to 690 W, through a 1 s mean: +57 W per 100 ms sample
  EXPECT_EQ(m.held_power(), 177);
  feed(234);
  EXPECT_NEAR(m.held_power(), 690, 1.0);  // 120 + 2 x 57 over 0.2 s of a 1 s mean
  for (int i = 0; i < 20; ++i) feed(690);
  EXPECT_EQ(m.held_power(), 690);  // the ramp is over: the reading is the load
}

// When the sensor stops behaving as the fit says (here: it cools when the power rises), the
// model's own checked forecasts lose to persistence and the forecast falls back to it.
TEST(ThermalModel, FallsBackToPersistenceWhenItsForecastsLose) {
  const Plant plant;
  const PlantRun r = simulate(plant, excitation_levels(40), 4.0);
  ThermalModel m;
  for (std::size_t i = 0; i < r.t.size(); ++i) m.add(r.t[i], r.p[i], r.temp[i]);
  ASSERT_TRUE(m.forecast(5.0).from_model);
  Plant inverted;
  inverted.gain_c_per_w = -0.05;
  inverted.ambient_c = 80;
  double t = r.t.back(), temp = r.temp.back();
  const auto levels = excitation_levels(30);
  for (double level : levels) {
    for (int i = 0; i < 64; ++i) {  // 8 s each
      t += kDt;
      temp = inverted.step(temp, level, kDt);
      m.add(t, level, temp);
    }
  }
  const Forecast f = m.forecast(5.0);
  EXPECT_FALSE(f.from_model);
  EXPECT_EQ(f.temperature_celsius, temp);
  ASSERT_TRUE(f.error_celsius.has_value());
  EXPECT_TRUE(std::isfinite(*f.error_celsius));
  EXPECT_FALSE(m.seconds_to(temp + 1).has_value());  // persistence never crosses
}

TEST(ThrottleRisk, TimeUntilTheForecastCrossesSlowdownLessMargin) {
  // Fit on excitation, then run at 1000 W toward 30 + 50 = 80 °C... the plant's steady state at
  // 1200 W is 90 °C, over the 89 °C slowdown.
  const Plant plant;
  const PlantRun r = simulate(plant, excitation_levels(30), 4.0);
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
