#include "guard/forecast.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace gpudoc::guard {
namespace {

// The regressors are scaled so that the columns of the least-squares problem have similar size
// (W near 300 on a data-center GPU, moving by hundreds): without it the power columns' squares
// are 10^5 times the constant's and rounding decides the fit.
constexpr double kP0 = 300.0, kPs = 100.0;

bool finite(std::optional<double> v) { return v.has_value() && std::isfinite(*v); }

// 1 - exp(-dt / tau): how far a first-order state moves toward its input in dt.
double approach(double dt, double tau) { return tau > 0 ? -std::expm1(-std::max(0.0, dt) / tau) : 1.0; }

// Solves the n x n system a x = b (n <= 5) by Gaussian elimination with partial pivoting; false
// when a pivot vanishes (the system is singular to working precision).
template <std::size_t N>
bool solve_linear(std::array<std::array<double, N>, N> a, std::array<double, N> b, std::size_t n,
                  std::array<double, N>& x) {
  for (std::size_t c = 0; c < n; ++c) {
    std::size_t p = c;
    for (std::size_t r = c + 1; r < n; ++r) {
      if (std::abs(a[r][c]) > std::abs(a[p][c])) p = r;
    }
    if (!(std::abs(a[p][c]) > 1e-12)) return false;
    std::swap(a[c], a[p]);
    std::swap(b[c], b[p]);
    for (std::size_t r = c + 1; r < n; ++r) {
      const double f = a[r][c] / a[c][c];
      for (std::size_t k = c; k < n; ++k) a[r][k] -= f * a[c][k];
      b[r] -= f * b[c];
    }
  }
  for (std::size_t c = n; c-- > 0;) {
    double v = b[c];
    for (std::size_t k = c + 1; k < n; ++k) v -= a[c][k] * x[k];
    x[c] = v / a[c][c];
    if (!std::isfinite(x[c])) return false;
  }
  return true;
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
  const ForecastConfig d;
  for (std::size_t j = 0; j < kThermalStates; ++j) {
    if (!(config_.time_constants_s[j] > 0) || !std::isfinite(config_.time_constants_s[j])) {
      config_.time_constants_s[j] = d.time_constants_s[j];
    }
  }
  if (!(config_.fit_memory_s > 0)) config_.fit_memory_s = d.fit_memory_s;
  if (!(config_.error_memory_s > 0)) config_.error_memory_s = d.error_memory_s;
  if (!(config_.search_step_s > 0)) config_.search_step_s = d.search_step_s;
  if (!(config_.max_hold_s > 0)) config_.max_hold_s = d.max_hold_s;
  if (!(config_.ridge >= 0)) config_.ridge = d.ridge;
  if (!(config_.power_average_s >= 0)) config_.power_average_s = d.power_average_s;
  if (!(config_.sensor_resolution_celsius >= 0) || !std::isfinite(config_.sensor_resolution_celsius)) {
    config_.sensor_resolution_celsius = 0;
  }
}

void ThermalModel::add(double t, std::optional<double> power_watts, std::optional<double> temperature_celsius) {
  if (!std::isfinite(t) || (last_t_ && t < *last_t_)) {
    ++ignored_;
    return;
  }
  last_t_ = t;
  const bool has_temperature = finite(temperature_celsius);
  if (finite(power_watts)) {
    // The temperature's jump in this same sample, if the reading before it is fresh: evidence
    // that the power reading's first move is a load step, not noise.
    std::optional<double> jump;
    if (has_temperature && temperature_ && t - temperature_t_ <= config_.max_hold_s) {
      jump = *temperature_celsius - *temperature_;
    }
    on_power(t, *power_watts, jump);
  }
  if (has_temperature) on_temperature(t, *temperature_celsius);
}

bool ThermalModel::power_fresh() const { return power_t_ && last_t_ && *last_t_ - *power_t_ <= config_.max_hold_s; }

// The load the power reading is heading for, and the states it drives.
void ThermalModel::on_power(double t, double watts, std::optional<double> temperature_jump) {
  const auto& tau = config_.time_constants_s;
  if (!power_t_ || t - *power_t_ > config_.max_hold_s) {
    // First reading, or none for longer than a value may be held: nothing is known about the gap,
    // so the states start settled at this reading (the fit is kept).
    power_t_ = t;
    power_ = watts;
    last_move_.reset();
    ramp_.reset();
    load_ = watts;
    states_.fill(watts);
    if (rows_ == 0) power_min_ = power_max_ = watts;
    return;
  }
  const double dt = t - *power_t_;
  if (dt == 0) {  // the same time again: the newest value replaces the reading
    power_ = watts;
  } else {
    const double prev = power_, prev_t = *power_t_;
    const double move = watts - prev;
    // Ramp: the reading is a mean over power_average_s, so a step shows as a straight ramp from
    // the level before it to the new level, power_average_s long.
    const double onset = config_.ramp_onset_watts;
    if (ramp_ && (t - ramp_->t0 > config_.power_average_s + 0.5 * dt || (move > 0) != ramp_->rising ||
                  std::abs(move) <= 0.25 * onset)) {
      ramp_.reset();  // over: the reading stopped, turned or has averaged the whole step
    }
    if (!ramp_ && config_.power_average_s > 0 && std::abs(move) > onset) {
      const bool confirmed_by_the_last_move =
          last_move_ && std::abs(last_move_->watts) > onset && (last_move_->watts > 0) == (move > 0);
      const bool confirmed_by_the_temperature = std::abs(move) > config_.ramp_jump_watts && temperature_jump &&
                                                std::abs(*temperature_jump) >= config_.ramp_jump_celsius &&
                                                (*temperature_jump > 0) == (move > 0);
      if (confirmed_by_the_last_move) {
        ramp_ = Ramp{last_move_->t0, last_move_->from, move > 0};  // from where the first move began
      } else if (confirmed_by_the_temperature) {
        ramp_ = Ramp{prev_t, prev, move > 0};
      }
    }
    last_move_ = Move{prev_t, prev, move};
    power_ = watts;
  }
  power_t_ = t;
  load_ = power_;
  if (ramp_) {
    const double elapsed = t - ramp_->t0;
    if (elapsed > 0 && elapsed < config_.power_average_s) {
      const double v = ramp_->from + (power_ - ramp_->from) * config_.power_average_s / elapsed;
      if (std::isfinite(v)) load_ = v;
    }
  }
  for (std::size_t j = 0; j < kThermalStates; ++j) states_[j] += approach(dt, tau[j]) * (load_ - states_[j]);
  // The power range within the fit's memory: the extremes decay toward the present load.
  const double keep = 1.0 - approach(std::min(dt, config_.max_hold_s), config_.fit_memory_s);
  power_min_ = std::min(load_, load_ + (power_min_ - load_) * keep);
  power_max_ = std::max(load_, load_ + (power_max_ - load_) * keep);
}

void ThermalModel::on_temperature(double t, double celsius) {
  self_check(t, celsius);
  const double q = config_.sensor_resolution_celsius;
  if (q > 0 && std::abs(celsius / q - std::round(celsius / q)) > 1e-9) on_grid_ = false;
  const bool same_time = temperature_ && t == temperature_t_;
  temperature_ = celsius;
  temperature_t_ = t;
  if (power_fresh() && !same_time && (!last_row_t_ || t > *last_row_t_)) {
    std::array<double, kParams> x{};
    x[0] = 1.0;
    x[1] = (load_ - kP0) / kPs;
    for (std::size_t j = 0; j < kThermalStates; ++j) x[2 + j] = (states_[j] - kP0) / kPs;
    const double dt = last_row_t_ ? std::min(t - *last_row_t_, config_.max_hold_s) : 0.0;
    const double keep = 1.0 - approach(dt, config_.fit_memory_s);
    for (std::size_t i = 0; i < kParams; ++i) {
      moment_[i] = keep * moment_[i] + x[i] * celsius;
      for (std::size_t k = 0; k < kParams; ++k) normal_[i][k] = keep * normal_[i][k] + x[i] * x[k];
    }
    bool ok = true;
    for (std::size_t i = 0; i < kParams && ok; ++i) {
      ok = std::isfinite(moment_[i]);
      for (std::size_t k = 0; k < kParams && ok; ++k) ok = std::isfinite(normal_[i][k]);
    }
    if (!ok) {  // overflowed: start the fit again rather than carry a broken one
      reset_fit();
    } else {
      ++rows_;
      if (!first_row_t_) first_row_t_ = t;
      last_row_t_ = t;
      solve();
      const double r = celsius - present();
      if (!std::isfinite(r)) {
        residual_.reset();
      } else if (!residual_ || !(config_.residual_smoothing_s > 0)) {
        residual_ = r;
      } else {
        *residual_ += approach(dt, config_.residual_smoothing_s) * (r - *residual_);
      }
    }
  }
  // Queue this reading's forecasts for the self-check: what forecast() says, the fit's own
  // (whenever it is usable) and persistence's.
  const double h = config_.self_check_horizon_s;
  if (!(h > 0)) return;
  Pending p{t + h, celsius, model_forecast(h), celsius};
  if (p.model) p.model = as_read(*p.model);
  if (p.model && model_wins()) p.output = *p.model;
  pending_.push_back(p);
}

void ThermalModel::reset_fit() {
  for (auto& row : normal_) row.fill(0);
  moment_.fill(0);
  theta_.fill(0);
  rows_ = 0;
  first_row_t_.reset();
  last_row_t_.reset();
  residual_.reset();
}

// The constrained least-squares fit: the offset is free, every gain >= 0. The problem is a convex
// quadratic in five unknowns, so its minimum is the unconstrained minimum over some subset of the
// gains (the others 0): every subset is solved and the best feasible one kept (16 systems of at
// most 5 x 5).
void ThermalModel::solve() {
  constexpr std::size_t kGains = kParams - 1;
  double best_cost = 0;
  std::optional<std::array<double, kParams>> best;
  for (unsigned mask = 0; mask < (1U << kGains); ++mask) {
    std::array<std::size_t, kParams> idx{};
    std::size_t n = 0;
    idx[n++] = 0;
    for (std::size_t g = 0; g < kGains; ++g) {
      if (mask & (1U << g)) idx[n++] = g + 1;
    }
    std::array<std::array<double, kParams>, kParams> a{};
    std::array<double, kParams> b{}, sub{};
    for (std::size_t i = 0; i < n; ++i) {
      b[i] = moment_[idx[i]];
      for (std::size_t k = 0; k < n; ++k) a[i][k] = normal_[idx[i]][idx[k]];
      a[i][i] += config_.ridge;
    }
    if (!solve_linear(a, b, n, sub)) continue;
    std::array<double, kParams> full{};
    bool feasible = true;
    for (std::size_t i = 0; i < n; ++i) {
      full[idx[i]] = sub[i];
      if (i > 0 && sub[i] < 0) feasible = false;
    }
    if (!feasible) continue;
    // The cost up to a constant: theta' (A + ridge I) theta - 2 theta' b.
    double cost = 0;
    for (std::size_t i = 0; i < kParams; ++i) {
      cost += config_.ridge * full[i] * full[i] - 2 * full[i] * moment_[i];
      for (std::size_t k = 0; k < kParams; ++k) cost += full[i] * normal_[i][k] * full[k];
    }
    if (!std::isfinite(cost)) continue;
    if (!best || cost < best_cost) {
      best_cost = cost;
      best = full;
    }
  }
  if (best) theta_ = *best;
}

double ThermalModel::present() const {
  double v = theta_[0] + theta_[1] * (load_ - kP0) / kPs;
  for (std::size_t j = 0; j < kThermalStates; ++j) v += theta_[2 + j] * (states_[j] - kP0) / kPs;
  return v;
}

ThermalFit ThermalModel::fit() const {
  ThermalFit f;
  f.static_gain = theta_[1] / kPs;
  double offset = theta_[0] - theta_[1] * kP0 / kPs;
  for (std::size_t j = 0; j < kThermalStates; ++j) {
    f.gains[j] = theta_[2 + j] / kPs;
    offset -= theta_[2 + j] * kP0 / kPs;
  }
  f.offset_celsius = offset;
  f.time_constants_s = config_.time_constants_s;
  f.samples = rows_;
  // Trusted: enough data, the power has moved enough to tell the gains from the offset, and more
  // power heats (a fit whose gains all came out 0 says nothing persistence does not).
  const bool long_enough = first_row_t_ && last_row_t_ && *last_row_t_ - *first_row_t_ >= config_.min_fit_s;
  f.trusted = long_enough && power_max_ - power_min_ >= config_.min_power_range_watts && f.steady_gain() > 0 &&
              std::isfinite(f.offset_celsius) && std::isfinite(f.steady_gain());
  return f;
}

bool ThermalModel::usable() const { return temperature_ && residual_ && power_fresh() && fit().trusted; }

// The fit's forecast: from its present value plus the smoothed residual, each state approaches the
// held load for horizon_s; the static part does not move (the load is held).
std::optional<double> ThermalModel::model_forecast(double horizon_s) const {
  if (!usable()) return std::nullopt;
  double v = present() + *residual_;
  for (std::size_t j = 0; j < kThermalStates; ++j) {
    v += theta_[2 + j] * (load_ - states_[j]) / kPs * approach(horizon_s, config_.time_constants_s[j]);
  }
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

double ThermalModel::as_read(double celsius) const {
  const double q = config_.sensor_resolution_celsius;
  if (!(q > 0) || !on_grid_) return celsius;
  const double v = std::round(celsius / q) * q;
  return std::isfinite(v) ? v : celsius;
}

bool ThermalModel::model_wins() const {
  // The model speaks only while its own recent forecasts were no worse than persistence's: a fit
  // that the sensor's steps or an unforeseeable load change have led astray gives way at once.
  return !model_error_ || !persistence_error_ ||
         *model_error_ <= *persistence_error_ + config_.switch_tolerance_celsius;
}

void ThermalModel::self_check(double t, double celsius) {
  const double w =
      last_check_t_ ? approach(std::min(t - *last_check_t_, config_.max_hold_s), config_.error_memory_s) : 1.0;
  auto fold = [w](std::optional<double>& running, double e) { running = running ? (1 - w) * *running + w * e : e; };
  bool checked = false;
  while (!pending_.empty() && pending_.front().due_t <= t) {
    const Pending& p = pending_.front();
    if (t - p.due_t <= config_.max_hold_s) {  // the reading that came when the forecast was due
      fold(error_, std::abs(p.output - celsius));
      fold(persistence_error_, std::abs(p.persistence - celsius));
      if (p.model) fold(model_error_, std::abs(*p.model - celsius));
      checked = true;
    }
    pending_.pop_front();
  }
  if (checked) last_check_t_ = t;
}

Forecast ThermalModel::forecast(double horizon_s) const {
  Forecast out;
  out.error_celsius = error_;
  if (!temperature_) return out;
  out.temperature_celsius = *temperature_;
  const double h = std::clamp(std::isfinite(horizon_s) ? horizon_s : 0.0, 0.0, config_.max_horizon_s);
  if (model_wins()) {
    if (const auto m = model_forecast(h)) {
      out.temperature_celsius = as_read(*m);
      out.from_model = true;
    }
  }
  return out;
}

std::optional<double> ThermalModel::seconds_to(double limit_celsius) const {
  if (!temperature_ || !std::isfinite(limit_celsius)) return std::nullopt;
  if (*temperature_ >= limit_celsius) return 0.0;
  if (!model_wins() || !usable()) return std::nullopt;  // persistence never crosses
  // The forecast of model_forecast(), its parts computed once.
  const double start = present() + *residual_;
  std::array<double, kThermalStates> gap{};
  for (std::size_t j = 0; j < kThermalStates; ++j) gap[j] = theta_[2 + j] * (load_ - states_[j]) / kPs;
  const auto n = static_cast<std::size_t>(config_.max_horizon_s / config_.search_step_s);
  for (std::size_t k = 1; k <= n; ++k) {
    const double h = static_cast<double>(k) * config_.search_step_s;
    double v = start;
    for (std::size_t j = 0; j < kThermalStates; ++j) v += gap[j] * approach(h, config_.time_constants_s[j]);
    if (!std::isfinite(v)) return std::nullopt;
    if (v >= limit_celsius) return h;
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
