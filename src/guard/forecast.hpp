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
// The model (docs/results/guard-forecast.md): the irregular stream is held onto a fixed step
// (ForecastConfig::step_s) and a first-order model T[k+1] = a*T[k] + b*P[k] + c is fitted by
// recursive least squares with exponential forgetting. Until the fit is trusted (enough power
// variation seen, a stable and physical model), and whenever its own recent forecasts, checked
// when their time came, were worse than persistence's, the forecast is persistence.
#pragma once

#include <cstddef>
#include <deque>
#include <optional>

#include "gpu/backend.hpp"

namespace gpudoc::guard {

// Every constant of the forecaster, each with its reason. Defaults were chosen on the tuning
// traces only (tests/perf/forecast_accuracy.cpp names the split).
struct ForecastConfig {
  // The grid the stream is held onto. H200 power and temperature update about every 100 ms
  // (reference: h200.md), so a finer step only repeats values; 0.5 s keeps one step's change
  // above the 1 °C quantisation often enough to fit, and a 5 s forecast is 10 steps.
  double step_s = 0.5;
  // A sample older than this is not held into later cells: a gap restarts the grid (the fit is
  // kept, no regression pair spans the gap). Twice the slowest sensor (HBM temperature, 1 s).
  double max_hold_s = 2.0;
  // RLS forgetting factor per step: memory of about step_s / (1 - lambda) = 25 s at 0.5 s, long
  // enough to see a load change and its settling, short enough to follow the heat sink warming.
  double forgetting = 0.98;
  // Steps a fit needs before it is used (20 s at 0.5 s): three parameters from fewer points
  // over-fit the sensor's 1 °C steps; on the tuning traces 10 s fits (20 steps) lost to
  // persistence (4.27 vs 4.17 °C) and 20 s fits won (4.10).
  std::size_t min_fit_steps = 40;
  // The power must have varied by this much (exponentially weighted standard deviation, W) for b
  // to be identifiable; an idle or steady GPU gives persistence. An H200 idles near 80 W and a
  // load step moves it by hundreds of watts, so 20 W separates noise from excitation.
  double min_power_sd_watts = 20.0;
  // Bound on the covariance trace (anti wind-up): without excitation, forgetting grows it by
  // 1/lambda per step until one new sample swings the estimate; this caps that growth.
  double max_covariance_trace = 1.0e4;
  // Initial covariance (diagonal), large: the first samples decide, no prior model is assumed.
  double initial_covariance = 1.0e3;
  // Power held for the forecast: the mean over this many seconds, so that a fast on/off load
  // (sawtooth) is forecast at its average heat, not at whichever phase the last sample caught.
  double power_hold_s = 2.0;
  // The horizon at which the model checks itself (its own forecasts against what arrived).
  double self_check_horizon_s = 5.0;
  // Weight of a new forecast error in the running mean absolute error (about 50 checks).
  double error_weight = 0.02;
  // The model keeps the word while its running error is within this of persistence's: a tie
  // (both exact on a steady load) must not hand a sound fit back to persistence; a tenth of the
  // sensor's 1 °C resolution.
  double switch_tolerance_celsius = 0.1;
  // Forecasts iterate at most this far ahead (throttle_risk's search); beyond it nothing is said.
  double max_horizon_s = 600.0;
};

// What a forecast says. `temperature_celsius` is always finite once one temperature was seen.
struct Forecast {
  double temperature_celsius = 0;
  // Running mean absolute error of this model's own self_check_horizon_s forecasts, measured when
  // their time arrived; absent until the first one was checked.
  std::optional<double> error_celsius;
  // false: persistence (no trusted fit yet, or the fit's recent forecasts were worse than
  // persistence's: the model is used only while it checks out better)
  bool from_model = false;
};

// The fitted parameters, for display and tests (per grid step of ForecastConfig::step_s).
struct ThermalFit {
  double a = 1;           // T[k+1] = a*T[k] + b*P[k] + c
  double b = 0;           // °C per W per step
  double c = 0;           // °C per step
  std::size_t steps = 0;  // regression pairs seen
  bool trusted = false;
};

// One sensor's first-order thermal model (GPU die or HBM), driven by board power.
class ThermalModel {
 public:
  explicit ThermalModel(ForecastConfig config = {});
  // Adds a reading at time t (seconds, any origin). Either value may be absent. Samples with a
  // non-finite t, or older than the newest one, are ignored (counted in ignored()); a sample at
  // the same t as the newest replaces its values. Non-finite values are treated as absent.
  void add(double t, std::optional<double> power_watts, std::optional<double> temperature_celsius);
  // Temperature horizon_s (>= 0, clamped to max_horizon_s) ahead of the newest sample, the power
  // held at its recent mean. Persistence until the fit is trusted; 0 with no temperature yet
  // (has_temperature() says which).
  [[nodiscard]] Forecast forecast(double horizon_s) const;
  // Seconds until the forecast first reaches limit_celsius (0 when already there); nullopt when
  // it does not within max_horizon_s, or no temperature was seen.
  [[nodiscard]] std::optional<double> seconds_to(double limit_celsius) const;
  [[nodiscard]] ThermalFit fit() const;
  [[nodiscard]] bool has_temperature() const { return temperature_.has_value(); }
  [[nodiscard]] std::size_t ignored() const { return ignored_; }
  [[nodiscard]] const ForecastConfig& config() const { return config_; }

 private:
  void advance_grid(double t);
  void on_cell(double power, double temperature);
  void update_fit(double t_prev, double p_prev, double t_next);
  void self_check(double temperature);
  [[nodiscard]] double held_power() const;
  [[nodiscard]] bool model_wins() const;
  [[nodiscard]] double iterate(double temperature, double power, std::size_t steps) const;

  ForecastConfig config_;
  // Newest sample and the values held from it.
  std::optional<double> last_t_;
  std::optional<double> power_, temperature_;
  double power_t_ = 0, temperature_t_ = 0;
  // The grid: time of the next cell, the last cell's temperature, the power since it.
  std::optional<double> cell_t_;
  std::optional<double> cell_temperature_;
  double interval_power_sum_ = 0;
  std::size_t interval_power_n_ = 0;
  // RLS state on scaled regressors x = [(T - kT0)/kTs, (P - kP0)/kPs, 1], y = T[k+1] - T[k].
  double theta_[3] = {1, 0, 0};
  double cov_[3][3] = {};
  std::size_t steps_ = 0;
  bool power_seen_ = false;
  double power_mean_ = 0, power_var_ = 0;  // exponentially weighted, same forgetting
  std::deque<double> recent_power_;        // cells within power_hold_s
  // Self-check: forecasts waiting for their time (cell index at which they are due).
  struct Pending {
    std::size_t due_cell = 0;
    double output = 0;            // what forecast() said
    std::optional<double> model;  // the fitted model's forecast, when it had a trusted fit
    double persistence = 0;
  };
  std::deque<Pending> pending_;
  std::size_t cell_index_ = 0;
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
