// gpudoc::guard forecast — temperature seconds ahead, time to the GPU's slowdown temperature and
// time to out-of-memory, from the stream of samples a guard reads. Pure logic: no I/O, no clock
// (times come with the samples), no threads. Never throws; never returns NaN. Thread-compatible:
// one object per GPU, used from one thread at a time (const calls may run concurrently).
//
//   guard::GpuForecaster f;                                  // one per GPU
//   f.add({.t = 12.3, .power_watts = 690, .gpu_temperature_celsius = 61});
//   guard::Forecast g = f.gpu().forecast(5.0);               // 5 s ahead, with its error
//   auto risk = guard::throttle_risk(f.gpu(), device_info, 3.0);  // seconds to slowdown - 3 °C
//   guard::MemoryHeadroom m;  m.add(t, used_bytes);
//   std::optional<double> s = m.seconds_to_full(*info.memory_total_bytes);
//
// The model (docs/results/guard-forecast.md): the temperature is a fast static response to the
// power plus first-order states that follow it with fixed time constants (the die's settling, the
// HBM's, the heat sink's):
//     T(t) = c + g0 P(t) + sum_j g_j S_j(t),   tau_j dS_j/dt = P(t) - S_j(t),
// its gains fitted online by least squares with exponential forgetting, constrained to be
// non-negative (more power never cools). The power it is driven by is the reading with its ramp
// completed: the H200's reading is a 1 s mean, so a load step shows as a 1 s ramp that the die has
// already jumped over. A forecast holds that power, lets each state approach it for the horizon,
// and starts from the fit's present value plus its smoothed residual (the sensor's 1 °C steps and
// what the model does not capture). Until the fit is trusted (enough power variation and time
// seen), and whenever its own recent forecasts, checked when their time came, were worse than
// persistence's, the forecast is persistence.
#pragma once

#include <array>
#include <cstddef>
#include <deque>
#include <optional>

#include "gpu/backend.hpp"

namespace gpudoc::guard {

// The first-order states of the model (their time constants: ForecastConfig::time_constants_s).
inline constexpr std::size_t kThermalStates = 3;

// Every constant of the forecaster, each with its reason. Defaults were chosen on the tuning
// traces only (tests/perf/forecast_accuracy.cpp names the split).
struct ForecastConfig {
  // Time constants of the states, seconds. On a step from idle to full load the H200 die jumps
  // 12-13 °C in the first 100 ms sample (the static gain), rises ~7 °C more within 0.7 s (0.5 s),
  // 1-2 °C within a few seconds (3 s) and ~1 °C more over tens of seconds with its heat sink
  // (40 s); the HBM jumps ~4 °C, rises ~5 °C more within 3 s (3 s) and ~4 °C more over a minute
  // (40 s) (tests/data/thermal/thermal_tune_heatup.jsonl: die 35 -> 48 -> 55 -> 57 -> 58 °C, HBM
  // 37 -> 41 -> 46 -> 50 °C). The fit gives each
  // sensor its own non-negative gains, so a state a sensor does not show drops out. On the thermal
  // tuning traces (die MAE with no load change ahead) {0.5, 3, 40} gave 0.56 °C, two states
  // {1, 40} 0.58 and {3, 40} 0.59; the slow constant is flat between 30 and 100 s (0.56-0.57).
  std::array<double, kThermalStates> time_constants_s = {0.5, 3.0, 40.0};
  // The power reading is a mean over this many seconds (NVML on the H200: a step from 122 to
  // 694 W reads as a ramp of ten 100 ms samples). A ramp is completed to the level it is heading
  // for; 0 takes the reading as it is (a sensor that reports instantaneous power). Without it the
  // model lags every step: 0.76 instead of 0.56 °C die MAE with no load change ahead on the
  // thermal tuning traces.
  double power_average_s = 1.0;
  // A ramp starts with two successive moves of the reading by more than this, the same way: a
  // 200 W step moves a 1 s mean by 20 W per 100 ms sample, a steady full load by less than 10 W
  // (tests/data/thermal); bursty jobs move it by 20-60 W, which is why one move is not enough.
  // 15 and 30 W gave the same errors on the tuning traces (within 0.01 °C).
  double ramp_onset_watts = 20.0;
  // ...or with one move by more than ramp_jump_watts when the temperature in the same sample has
  // jumped the same way by at least ramp_jump_celsius: the die has already seen the step, one
  // sample before the second move would confirm it (0.59 -> 0.56 °C die MAE with no load change
  // ahead on the thermal tuning traces; 2 and 5 °C gave the same).
  double ramp_jump_watts = 40.0;
  double ramp_jump_celsius = 3.0;
  // Memory of the fit (exponential forgetting by time): several times the slowest time constant,
  // so that a step and its settling stay in the fit long after the load has become steady.
  // 120-900 s gave the same errors on the tuning traces (each about 110 s long).
  double fit_memory_s = 300.0;
  // The fit is used only after this much data (first to newest row)...
  double min_fit_s = 20.0;
  // ...and while the power has spanned at least this range within the fit's memory: without a
  // load change the gains cannot be told apart from the constant. An H200 idles near 80-120 W and
  // a load step moves it by hundreds of watts (50 and 200 W gave the same errors). 10 s fits lost
  // to persistence on the tuning patterns and jobs (1.49 vs 1.28 °C die MAE with no load change
  // ahead); 40 s fits never spoke on those 20-38 s traces and gave 0.61 instead of 0.56 °C on the
  // thermal ones.
  double min_power_range_watts = 100.0;
  // Ridge on the normal equations (scaled regressors: °C and 100 W): keeps them solvable while
  // the power has not moved, far below any real row's weight.
  double ridge = 1.0e-6;
  // The forecast starts from the fit's present value plus the residual smoothed over this many
  // seconds, not from the last 1 °C-quantised reading: on the thermal tuning traces 1 s gave
  // 0.56 °C die MAE with no load change ahead, 0 s (the raw reading) 0.71, 0.5 s 0.57, 2 s 0.61.
  double residual_smoothing_s = 1.0;
  // The sensor's resolution: while every reading has been a whole multiple of it (NVML reports
  // whole degrees), the forecast is rounded to it. The reading 5 s ahead is such a multiple, and
  // under absolute error the best forecast of it is the median of its distribution, itself a
  // multiple: a forecast of 57.3 °C scores 0.3 against a reading of 57 that persistence gets
  // exactly. On the thermal tuning traces: 0.56 instead of 0.61 °C die MAE with no load change
  // ahead. seconds_to() searches the unrounded forecast. 0: never round.
  double sensor_resolution_celsius = 1.0;
  // A power reading older than this is not held: the model says persistence, and the states
  // restart at the next reading (nothing is known about the gap). Twice the slowest sensor
  // (HBM temperature, 1 s).
  double max_hold_s = 2.0;
  // The horizon at which the model checks itself (its own forecasts against what arrived).
  double self_check_horizon_s = 5.0;
  // Memory of the running mean absolute errors of the self-check, seconds (the old forecaster's
  // 50 checks of 0.5 s); 5-25 s gave the same errors on the tuning traces (within 0.01 °C).
  double error_memory_s = 25.0;
  // The model keeps the word while its running error is within this of persistence's: a tie
  // (both exact on a steady load) must not hand a sound fit back to persistence; a tenth of the
  // sensor's 1 °C resolution.
  double switch_tolerance_celsius = 0.1;
  // seconds_to() searches the forecast on this grid...
  double search_step_s = 0.5;
  // ...at most this far ahead (throttle_risk's search); beyond it nothing is said.
  double max_horizon_s = 600.0;
};

// What a forecast says. `temperature_celsius` is always finite once one temperature was seen.
struct Forecast {
  double temperature_celsius = 0;
  // Running mean absolute error of this model's own self_check_horizon_s forecasts, measured when
  // their time arrived; absent until the first one was checked.
  std::optional<double> error_celsius;
  // false: persistence (no trusted fit yet, a stale power reading, or the fit's recent forecasts
  // were worse than persistence's: the model is used only while it checks out better)
  bool from_model = false;
};

// The fitted model, for display and tests: T = offset + static_gain*P + sum_j gains[j]*S_j with
// tau_j dS_j/dt = P - S_j (°C, W, s).
struct ThermalFit {
  double offset_celsius = 0;
  double static_gain = 0;                      // °C per W, at once
  std::array<double, kThermalStates> gains{};  // °C per W, reached with time_constants_s[j]
  std::array<double, kThermalStates> time_constants_s{};
  std::size_t samples = 0;  // temperature readings fitted
  bool trusted = false;
  // °C per W once every state has settled.
  [[nodiscard]] double steady_gain() const {
    double g = static_gain;
    for (double v : gains) g += v;
    return g;
  }
};

// One sensor's thermal model (GPU die or HBM), driven by board power.
class ThermalModel {
 public:
  explicit ThermalModel(ForecastConfig config = {});
  // Adds a reading at time t (seconds, any origin). Either value may be absent. Samples with a
  // non-finite t, or older than the newest one, are ignored (counted in ignored()); a sample at
  // the same t as the newest replaces its values. Non-finite values are treated as absent.
  void add(double t, std::optional<double> power_watts, std::optional<double> temperature_celsius);
  // Temperature horizon_s (>= 0, clamped to max_horizon_s) ahead of the newest sample, the power
  // held at its present level. Persistence until the fit is trusted; 0 with no temperature yet
  // (has_temperature() says which).
  [[nodiscard]] Forecast forecast(double horizon_s) const;
  // Seconds until the forecast first reaches limit_celsius (0 when already there); nullopt when
  // it does not within max_horizon_s, or no temperature was seen.
  [[nodiscard]] std::optional<double> seconds_to(double limit_celsius) const;
  [[nodiscard]] ThermalFit fit() const;
  // The power the model holds for a forecast: the reading, its ramp completed (W; 0 before any).
  [[nodiscard]] double held_power() const { return load_; }
  [[nodiscard]] bool has_temperature() const { return temperature_.has_value(); }
  [[nodiscard]] std::size_t ignored() const { return ignored_; }
  [[nodiscard]] const ForecastConfig& config() const { return config_; }

 private:
  static constexpr std::size_t kParams = 2 + kThermalStates;  // offset, static gain, state gains
  void on_power(double t, double watts, std::optional<double> temperature_jump);
  void on_temperature(double t, double celsius);
  void self_check(double t, double celsius);
  void solve();
  void reset_fit();
  [[nodiscard]] bool power_fresh() const;
  [[nodiscard]] bool usable() const;
  [[nodiscard]] bool model_wins() const;
  [[nodiscard]] double present() const;  // the fit's value now
  [[nodiscard]] std::optional<double> model_forecast(double horizon_s) const;
  [[nodiscard]] double as_read(double celsius) const;  // rounded to the sensor's resolution

  ForecastConfig config_;
  std::optional<double> last_t_;
  // Temperature: the newest reading; whether every reading so far was on the sensor's grid.
  std::optional<double> temperature_;
  double temperature_t_ = 0;
  bool on_grid_ = true;
  // Power: the newest reading, the move that led to it, the ramp in progress (the reading before
  // it began, and when), the held load and the states.
  std::optional<double> power_t_;
  double power_ = 0;
  struct Move {
    double t0 = 0, from = 0, watts = 0;
  };
  std::optional<Move> last_move_;
  struct Ramp {
    double t0 = 0, from = 0;
    bool rising = false;
  };
  std::optional<Ramp> ramp_;
  double load_ = 0;
  std::array<double, kThermalStates> states_{};
  double power_min_ = 0, power_max_ = 0;  // the range seen, decaying with fit_memory_s
  // The fit: forgetting-weighted normal equations on scaled regressors
  // x = [1, (P - kP0)/kPs, (S_j - kP0)/kPs], y = T, and their constrained solution.
  std::array<std::array<double, kParams>, kParams> normal_{};
  std::array<double, kParams> moment_{};
  std::array<double, kParams> theta_{};
  std::size_t rows_ = 0;
  std::optional<double> first_row_t_, last_row_t_;
  std::optional<double> residual_;
  // Self-check: forecasts waiting for their time.
  struct Pending {
    double due_t = 0;
    double output = 0;            // what forecast() said
    std::optional<double> model;  // the fit's forecast as forecast() gives it, when usable
    double persistence = 0;
  };
  std::deque<Pending> pending_;
  std::optional<double> last_check_t_;
  std::optional<double> error_, model_error_, persistence_error_;  // running mean absolute errors
  std::size_t ignored_ = 0;
};

// One GPU's samples as a guard reads them: any field may be absent.
struct ThermalSample {
  double t = 0;  // seconds
  std::optional<double> power_watts;
  std::optional<double> gpu_temperature_celsius;
  std::optional<double> memory_temperature_celsius;  // HBM, when the GPU reports it
};

// The GPU die and HBM models of one GPU, fed from one stream (each fitted separately).
class GpuForecaster {
 public:
  explicit GpuForecaster(ForecastConfig config = {}) : gpu_(config), memory_(config) {}
  void add(const ThermalSample& s);
  [[nodiscard]] const ThermalModel& gpu() const { return gpu_; }
  [[nodiscard]] const ThermalModel& memory() const { return memory_; }

 private:
  ThermalModel gpu_;
  ThermalModel memory_;
};

// Baseline: the temperature stays where it is.
class Persistence {
 public:
  void add(double t, std::optional<double> temperature_celsius);
  [[nodiscard]] std::optional<double> forecast(double horizon_s) const;

 private:
  std::optional<double> last_t_, last_;
};

// Baseline: the least-squares slope of the last window_s seconds, extended horizon_s ahead.
class LinearExtrapolation {
 public:
  explicit LinearExtrapolation(double window_s = 5.0) : window_s_(window_s) {}
  void add(double t, std::optional<double> temperature_celsius);
  [[nodiscard]] std::optional<double> forecast(double horizon_s) const;

 private:
  double window_s_;
  std::deque<std::pair<double, double>> points_;  // (t, temperature), sorted by t
};

// Time until a model's forecast crosses the GPU's own limit less a margin.
struct ThrottleRisk {
  double limit_celsius = 0;       // the device's limit the margin was taken from
  double threshold_celsius = 0;   // limit - margin: what the forecast is compared with
  std::optional<double> seconds;  // 0: already at or over; nullopt: not within max_horizon_s
};
// Die: the slowdown temperature (else the maximum operating one, else shutdown). Memory: the HBM
// maximum. nullopt when the device reports no such limit or the model has no temperature: never a
// fixed number of degrees.
[[nodiscard]] std::optional<ThrottleRisk> throttle_risk(const ThermalModel& gpu_model, const gpu::DeviceInfo& info,
                                                        double margin_celsius);
[[nodiscard]] std::optional<ThrottleRisk> memory_throttle_risk(const ThermalModel& memory_model,
                                                               const gpu::DeviceInfo& info, double margin_celsius);

// Time to out-of-memory at the current growth: the least-squares slope of memory_used over the
// last window_s seconds.
class MemoryHeadroom {
 public:
  explicit MemoryHeadroom(double window_s = 30.0) : window_s_(window_s) {}
  // Samples with a non-finite t or value, or older than the newest, are ignored.
  void add(double t, double memory_used_bytes);
  // Bytes per second over the window; nullopt with fewer than 3 points or no time spread.
  [[nodiscard]] std::optional<double> growth_bytes_per_second() const;
  // Seconds until memory_used reaches memory_total_bytes at that growth; 0 when already there;
  // nullopt when not growing (slope below kMinGrowthBytesPerSecond) or unknown.
  [[nodiscard]] std::optional<double> seconds_to_full(double memory_total_bytes) const;

 private:
  double window_s_;
  std::deque<std::pair<double, double>> points_;
};

// Growth below this is not growth: allocators round up and caching allocators breathe by a few
// MiB; 1 MiB/s would fill an H200 in 40 hours, far beyond anything a guard acts on.
inline constexpr double kMinGrowthBytesPerSecond = 1024.0 * 1024.0;

}  // namespace gpudoc::guard
