#include "guard/forecast.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace gpudoc::guard {
namespace {

// The regressors are scaled so that the three columns of the least-squares problem have similar
// size (°C near 50, W near 300 on a data-center GPU); without it the covariance of the power
// column is 10^4 times that of the constant and rounding decides the fit.
constexpr double kT0 = 50.0, kTs = 10.0;
constexpr double kP0 = 300.0, kPs = 100.0;

bool finite(std::optional<double> v) { return v.has_value() && std::isfinite(*v); }

std::size_t steps_for(double seconds, double step_s) {
  if (!(seconds > 0) || !(step_s > 0)) return 0;
  return static_cast<std::size_t>(std::llround(seconds / step_s));
}

struct LineFit {
  double slope = 0;
  double value_at_last = 0;
};
// Least squares through points (t, v); nullopt with fewer than 2 points or no spread in t.
std::optional<LineFit> fit_line(const std::deque<std::pair<double, double>>& points) {
  if (points.size() < 2) return std::nullopt;
  const double t_ref = points.back().first;  // times relative to the newest: no cancellation
  double st = 0, sv = 0;
  for (const auto& [t, v] : points) {
    st += t - t_ref;
    sv += v;
  }
  const auto n = static_cast<double>(points.size());
  const double mt = st / n, mv = sv / n;
  double stt = 0, stv = 0;
  for (const auto& [t, v] : points) {
    stt += (t - t_ref - mt) * (t - t_ref - mt);
    stv += (t - t_ref - mt) * (v - mv);
  }
  if (!(stt > 1e-12)) return std::nullopt;
  const double slope = stv / stt;
  const LineFit fit{slope, mv + slope * (0.0 - mt)};
  if (!std::isfinite(fit.slope) || !std::isfinite(fit.value_at_last)) return std::nullopt;
  return fit;
}

void add_point(std::deque<std::pair<double, double>>& points, double window_s, double t, double v) {
  if (!std::isfinite(t) || !std::isfinite(v)) return;
  if (!points.empty() && t < points.back().first) return;
  if (!points.empty() && t == points.back().first) {
    points.back().second = v;
  } else {
    points.emplace_back(t, v);
  }
  while (!points.empty() && points.front().first < t - window_s) points.pop_front();
}

}  // namespace

ThermalModel::ThermalModel(ForecastConfig config) : config_(config) {
  if (!(config_.step_s > 0)) config_.step_s = ForecastConfig{}.step_s;
  if (!(config_.forgetting > 0 && config_.forgetting <= 1)) config_.forgetting = ForecastConfig{}.forgetting;
  for (int i = 0; i < 3; ++i) cov_[i][i] = config_.initial_covariance;
}

void ThermalModel::add(double t, std::optional<double> power_watts, std::optional<double> temperature_celsius) {
  if (!std::isfinite(t) || (last_t_ && t < *last_t_)) {
    ++ignored_;
    return;
  }
  if (!cell_t_) cell_t_ = t;
  if (last_t_ && t - *last_t_ > config_.max_hold_s) {
    // No sample of any kind for longer than a value may be held: nothing is known about the cells
    // in between, so none is made up; the grid jumps to t (arithmetically: a gap of a year is not
    // a year of cells) and no regression pair spans the gap.
    const double cells = std::ceil((t - *cell_t_) / config_.step_s);
    cell_t_ = *cell_t_ + cells * config_.step_s;
    cell_index_ += static_cast<std::size_t>(cells);
    cell_temperature_.reset();
    interval_power_sum_ = 0;
    interval_power_n_ = 0;
  }
  advance_grid(t);
  last_t_ = t;
  if (finite(power_watts)) {
    if (t == power_t_ && power_ && interval_power_n_ > 0) {  // a duplicate replaces, not adds
      interval_power_sum_ -= *power_;
      --interval_power_n_;
    }
    power_ = power_watts;
    power_t_ = t;
    interval_power_sum_ += *power_watts;
    ++interval_power_n_;
  }
  if (finite(temperature_celsius)) {
    temperature_ = temperature_celsius;
    temperature_t_ = t;
  }
}

// Emits the cells before t with the values held at their time; a stale value breaks the chain and
// the grid jumps over the gap (arithmetically: a gap of a year is not a year of cells).
void ThermalModel::advance_grid(double t) {
  while (*cell_t_ < t) {
    const double ct = *cell_t_;
    const bool power_fresh = power_ && ct - power_t_ <= config_.max_hold_s;
    const bool temp_fresh = temperature_ && ct - temperature_t_ <= config_.max_hold_s;
    if (!temp_fresh) {
      const double cells = std::ceil((t - ct) / config_.step_s);
      cell_t_ = ct + cells * config_.step_s;
      cell_index_ += static_cast<std::size_t>(cells);
      cell_temperature_.reset();
      interval_power_sum_ = 0;
      interval_power_n_ = 0;
      return;
    }
    // The heat put in since the last cell: the mean power of the samples in (ct - step, ct]. The
    // die follows a load change within one 100 ms sample, so the power that drives T[k+1] is the
    // power during the step, not the reading at its start.
    const double heat = interval_power_n_ > 0 ? interval_power_sum_ / static_cast<double>(interval_power_n_)
                                              : (power_fresh ? *power_ : std::nan(""));
    interval_power_sum_ = 0;
    interval_power_n_ = 0;
    on_cell(heat, *temperature_);
    cell_t_ = ct + config_.step_s;
    ++cell_index_;
  }
}

// power: the mean power over the step that ends at this cell (NaN: none known).
void ThermalModel::on_cell(double power, double temperature) {
  self_check(temperature);
  if (cell_temperature_ && std::isfinite(power)) update_fit(*cell_temperature_, power, temperature);
  cell_temperature_ = temperature;
  if (std::isfinite(power)) {
    recent_power_.push_back(power);
    while (recent_power_.size() > std::max<std::size_t>(1, steps_for(config_.power_hold_s, config_.step_s))) {
      recent_power_.pop_front();
    }
    const double l = config_.forgetting;
    const double d = power - power_mean_;
    if (!power_seen_) {
      power_mean_ = power;
      power_seen_ = true;
    } else {
      power_mean_ += (1 - l) * d;
      power_var_ = l * (power_var_ + (1 - l) * d * d);
    }
  }
  // Queue this cell's forecasts for the self-check: what forecast() would say, the fitted model's
  // own (whenever it has a physical fit) and persistence's.
  const std::size_t n = steps_for(config_.self_check_horizon_s, config_.step_s);
  if (n == 0) return;
  Pending p{cell_index_ + n, temperature, std::nullopt, temperature};
  if (fit().trusted && !recent_power_.empty()) {
    p.model = iterate(temperature, held_power(), n);
    if (model_wins()) p.output = *p.model;
  }
  pending_.push_back(p);
}

bool ThermalModel::model_wins() const {
  // The model speaks only while its own recent forecasts were no worse than persistence's: a fit
  // that the sensor's steps or an unforeseeable load change have led astray gives way at once.
  return !model_error_ || !persistence_error_ ||
         *model_error_ <= *persistence_error_ + config_.switch_tolerance_celsius;
}

void ThermalModel::self_check(double temperature) {
  const double w = config_.error_weight;
  auto fold = [w](std::optional<double>& running, double e) { running = running ? (1 - w) * *running + w * e : e; };
  while (!pending_.empty() && pending_.front().due_cell <= cell_index_) {
    const Pending& p = pending_.front();
    if (p.due_cell == cell_index_) {
      fold(error_, std::abs(p.output - temperature));
      fold(persistence_error_, std::abs(p.persistence - temperature));
      if (p.model) fold(model_error_, std::abs(*p.model - temperature));
    }
    pending_.pop_front();
  }
}

// One step of recursive least squares with forgetting on y = T[k+1] - T[k].
void ThermalModel::update_fit(double t_prev, double p_prev, double t_next) {
  const double x[3] = {(t_prev - kT0) / kTs, (p_prev - kP0) / kPs, 1.0};
  const double y = t_next - t_prev;
  const double l = config_.forgetting;
  double px[3] = {};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) px[i] += cov_[i][j] * x[j];
  const double denom = l + x[0] * px[0] + x[1] * px[1] + x[2] * px[2];
  double err = y;
  for (int i = 0; i < 3; ++i) err -= theta_[i] * x[i];
  bool ok = std::isfinite(denom) && denom > 0 && std::isfinite(err);
  double next_theta[3] = {}, next_cov[3][3] = {};
  double trace = 0;
  if (ok) {
    for (int i = 0; i < 3; ++i) next_theta[i] = theta_[i] + px[i] / denom * err;
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) {
        // Symmetrised: rounding must not make the covariance lose its symmetry over a long run.
        next_cov[i][j] = (cov_[i][j] - px[i] * px[j] / denom) / l;
      }
      trace += next_cov[i][i];
    }
    for (int i = 0; i < 3 && ok; ++i) {
      ok = std::isfinite(next_theta[i]) && next_cov[i][i] > 0;
      for (int j = 0; j < 3 && ok; ++j) ok = std::isfinite(next_cov[i][j]);
    }
  }
  if (!ok) {  // ill-conditioned: start the fit again rather than carry a broken one
    for (int i = 0; i < 3; ++i) {
      theta_[i] = 0;
      for (int j = 0; j < 3; ++j) cov_[i][j] = i == j ? config_.initial_covariance : 0;
    }
    steps_ = 0;
    return;
  }
  const double scale = trace > config_.max_covariance_trace ? config_.max_covariance_trace / trace : 1.0;
  for (int i = 0; i < 3; ++i) {
    theta_[i] = next_theta[i];
    for (int j = 0; j < 3; ++j) cov_[i][j] = 0.5 * (next_cov[i][j] + next_cov[j][i]) * scale;
  }
  ++steps_;
}

ThermalFit ThermalModel::fit() const {
  ThermalFit f;
  f.a = 1 + theta_[0] / kTs;
  f.b = theta_[1] / kPs;
  f.c = theta_[2] - theta_[0] * kT0 / kTs - theta_[1] * kP0 / kPs;
  f.steps = steps_;
  // Trusted: enough pairs, the power varied enough to tell b from c, and a physical model
  // (stable: |a| < 1; more power heats: b > 0). a may come out slightly negative: at a 0.5 s step
  // the H200's die follows its power within the step, so the model is nearly static (a ~ 0) and
  // the sensor's 1 °C steps push a either side of 0; the forecast then converges at once.
  f.trusted = steps_ >= config_.min_fit_steps && std::sqrt(std::max(0.0, power_var_)) >= config_.min_power_sd_watts &&
              f.a > -1 && f.a < 1 && f.b > 0 && std::isfinite(f.c);
  return f;
}

double ThermalModel::held_power() const {
  if (recent_power_.empty()) return power_.value_or(0);
  double s = 0;
  for (double p : recent_power_) s += p;
  return s / static_cast<double>(recent_power_.size());
}

double ThermalModel::iterate(double temperature, double power, std::size_t steps) const {
  const ThermalFit f = fit();
  double t = temperature;
  for (std::size_t k = 0; k < steps; ++k) t = f.a * t + f.b * power + f.c;
  return std::isfinite(t) ? t : temperature;
}

Forecast ThermalModel::forecast(double horizon_s) const {
  Forecast out;
  out.error_celsius = error_;
  if (!temperature_) return out;
  out.temperature_celsius = *temperature_;
  const double h = std::clamp(std::isfinite(horizon_s) ? horizon_s : 0.0, 0.0, config_.max_horizon_s);
  if (fit().trusted && !recent_power_.empty() && model_wins()) {
    out.temperature_celsius = iterate(*temperature_, held_power(), steps_for(h, config_.step_s));
    out.from_model = true;
  }
  return out;
}

std::optional<double> ThermalModel::seconds_to(double limit_celsius) const {
  if (!temperature_ || !std::isfinite(limit_celsius)) return std::nullopt;
  if (*temperature_ >= limit_celsius) return 0.0;
  const ThermalFit f = fit();
  if (!f.trusted || recent_power_.empty() || !model_wins()) return std::nullopt;  // persistence never crosses
  const double p = held_power();
  const std::size_t n = steps_for(config_.max_horizon_s, config_.step_s);
  double t = *temperature_;
  for (std::size_t k = 1; k <= n; ++k) {
    t = f.a * t + f.b * p + f.c;
    if (!std::isfinite(t)) return std::nullopt;
    if (t >= limit_celsius) return static_cast<double>(k) * config_.step_s;
  }
  return std::nullopt;
}

void GpuForecaster::add(const ThermalSample& s) {
  gpu_.add(s.t, s.power_watts, s.gpu_temperature_celsius);
  if (s.memory_temperature_celsius || memory_.has_temperature()) {
    memory_.add(s.t, s.power_watts, s.memory_temperature_celsius);
  }
}

void Persistence::add(double t, std::optional<double> temperature_celsius) {
  if (!std::isfinite(t) || (last_t_ && t < *last_t_) || !finite(temperature_celsius)) return;
  last_t_ = t;
  last_ = temperature_celsius;
}

std::optional<double> Persistence::forecast(double /*horizon_s*/) const { return last_; }

void LinearExtrapolation::add(double t, std::optional<double> temperature_celsius) {
  if (finite(temperature_celsius)) add_point(points_, window_s_, t, *temperature_celsius);
}

std::optional<double> LinearExtrapolation::forecast(double horizon_s) const {
  if (points_.empty()) return std::nullopt;
  const double h = std::isfinite(horizon_s) ? std::max(0.0, horizon_s) : 0.0;
  const auto f = fit_line(points_);
  if (!f) return points_.back().second;
  const double v = f->value_at_last + f->slope * h;
  return std::isfinite(v) ? v : points_.back().second;
}

namespace {
std::optional<ThrottleRisk> risk_against(const ThermalModel& model, std::optional<double> limit, double margin) {
  if (!limit || !std::isfinite(*limit) || !model.has_temperature()) return std::nullopt;
  ThrottleRisk r;
  r.limit_celsius = *limit;
  r.threshold_celsius = *limit - (std::isfinite(margin) ? std::max(0.0, margin) : 0.0);
  r.seconds = model.seconds_to(r.threshold_celsius);
  return r;
}
}  // namespace

std::optional<ThrottleRisk> throttle_risk(const ThermalModel& gpu_model, const gpu::DeviceInfo& info,
                                          double margin_celsius) {
  std::optional<double> limit = info.temperature_slowdown_celsius;
  if (!limit) limit = info.temperature_gpu_max_celsius;
  if (!limit) limit = info.temperature_shutdown_celsius;
  return risk_against(gpu_model, limit, margin_celsius);
}

std::optional<ThrottleRisk> memory_throttle_risk(const ThermalModel& memory_model, const gpu::DeviceInfo& info,
                                                 double margin_celsius) {
  return risk_against(memory_model, info.temperature_memory_max_celsius, margin_celsius);
}

void MemoryHeadroom::add(double t, double memory_used_bytes) { add_point(points_, window_s_, t, memory_used_bytes); }

std::optional<double> MemoryHeadroom::growth_bytes_per_second() const {
  if (points_.size() < 3) return std::nullopt;
  const auto f = fit_line(points_);
  if (!f) return std::nullopt;
  return f->slope;
}

std::optional<double> MemoryHeadroom::seconds_to_full(double memory_total_bytes) const {
  if (points_.empty() || !std::isfinite(memory_total_bytes) || memory_total_bytes <= 0) return std::nullopt;
  const double used = points_.back().second;
  if (used >= memory_total_bytes) return 0.0;
  const auto g = growth_bytes_per_second();
  if (!g || *g < kMinGrowthBytesPerSecond) return std::nullopt;
  return (memory_total_bytes - used) / *g;
}

}  // namespace gpudoc::guard
