#include "diagnose/features.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace gpudoc::diagnose {

Grid resample(const telemetry::Series& s, double t0, double t1, double dt, double max_hold_s) {
  Grid g;
  g.t0 = t0;
  g.dt = dt > 0 ? dt : 0.1;
  if (!(t1 > t0) || !std::isfinite(t0) || !std::isfinite(t1)) return g;
  const auto cells = static_cast<std::size_t>(std::ceil((t1 - t0) / g.dt));
  g.v.assign(cells, std::nan(""));
  const std::size_t n = std::min(s.t.size(), s.v.size());
  if (n == 0) return g;

  // Indices of the usable samples, in time order (the reader sorts; synthetic input may not be).
  std::vector<std::size_t> idx;
  idx.reserve(n);
  bool sorted = true;
  double last = -INFINITY;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(s.t[i]) || !std::isfinite(s.v[i])) continue;
    if (s.t[i] < last) sorted = false;
    last = s.t[i];
    idx.push_back(i);
  }
  if (!sorted) std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return s.t[a] < s.t[b]; });

  std::size_t k = 0;  // next sample not yet at or before the cell's time
  std::size_t held = idx.size();
  for (std::size_t c = 0; c < cells; ++c) {
    const double tc = g.time_at(c);
    while (k < idx.size() && s.t[idx[k]] <= tc) held = k++;
    if (held < idx.size() && tc - s.t[idx[held]] <= max_hold_s) g.v[c] = s.v[idx[held]];
  }
  return g;
}

Levels levels(std::span<const double> v) {
  Levels l;
  std::vector<double> f;
  f.reserve(v.size());
  for (double x : v)
    if (std::isfinite(x)) f.push_back(x);
  l.n = f.size();
  if (f.empty()) return l;
  const double sum = std::accumulate(f.begin(), f.end(), 0.0);
  l.mean = sum / static_cast<double>(f.size());
  double ss = 0;
  for (double x : f) ss += (x - l.mean) * (x - l.mean);
  l.sd = std::sqrt(ss / static_cast<double>(f.size()));
  std::sort(f.begin(), f.end());
  auto q = [&](double p) {
    const double pos = p * static_cast<double>(f.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(pos));
    const std::size_t hi = std::min(lo + 1, f.size() - 1);
    const double w = pos - static_cast<double>(lo);
    return f[lo] * (1 - w) + f[hi] * w;
  };
  l.p05 = q(0.05);
  l.p50 = q(0.5);
  l.p95 = q(0.95);
  l.min = f.front();
  l.max = f.back();
  return l;
}

std::vector<double> autocorrelation(std::span<const double> v, std::size_t max_lag) {
  const Levels l = levels(v);
  if (l.n < 4 || l.sd <= 1e-9) return {};
  std::vector<double> d(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) d[i] = std::isfinite(v[i]) ? v[i] - l.mean : std::nan("");
  const double var = l.sd * l.sd;
  max_lag = std::min(max_lag, v.size() - 1);
  std::vector<double> r(max_lag + 1, 0.0);
  r[0] = 1.0;
  for (std::size_t k = 1; k <= max_lag; ++k) {
    double acc = 0;
    std::size_t pairs = 0;
    for (std::size_t i = 0; i + k < d.size(); ++i) {
      const double p = d[i] * d[i + k];
      if (std::isfinite(p)) {
        acc += p;
        ++pairs;
      }
    }
    r[k] = pairs > 0 ? acc / static_cast<double>(pairs) / var : 0.0;
  }
  return r;
}

std::optional<AcfPeak> first_acf_peak(std::span<const double> acf, double min_value) {
  if (acf.size() < 3) return std::nullopt;
  // Skip the central lobe first: a smooth or slowly drifting signal is correlated with itself at
  // short lags without being periodic.
  std::size_t k = 1;
  while (k < acf.size() && acf[k] >= std::min(0.0, min_value / 2)) ++k;
  if (k >= acf.size()) {
    k = 1;
    while (k < acf.size() && acf[k] >= min_value / 2) ++k;
  }
  for (; k + 1 < acf.size(); ++k) {
    if (acf[k] >= min_value && acf[k] >= acf[k - 1] && acf[k] >= acf[k + 1]) return AcfPeak{k, acf[k]};
  }
  return std::nullopt;
}

std::size_t crossings(std::span<const double> v, double level) {
  std::size_t n = 0;
  int prev = 0;  // -1 below, +1 at or above, 0 unknown
  for (double x : v) {
    if (!std::isfinite(x)) {
      prev = 0;
      continue;
    }
    const int side = x >= level ? 1 : -1;
    if (prev != 0 && side != prev) ++n;
    prev = side;
  }
  return n;
}

double share_at_or_above(std::span<const double> v, double level) {
  std::size_t n = 0, above = 0;
  for (double x : v) {
    if (!std::isfinite(x)) continue;
    ++n;
    if (x >= level) ++above;
  }
  return n > 0 ? static_cast<double>(above) / static_cast<double>(n) : 0.0;
}

Fit linear_fit(std::span<const double> t, std::span<const double> v) {
  Fit f;
  const std::size_t n = std::min(t.size(), v.size());
  double st = 0, sv = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(t[i]) || !std::isfinite(v[i])) continue;
    st += t[i];
    sv += v[i];
    ++f.n;
  }
  if (f.n < 2) return f;
  const double mt = st / static_cast<double>(f.n), mv = sv / static_cast<double>(f.n);
  double stt = 0, stv = 0, svv = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(t[i]) || !std::isfinite(v[i])) continue;
    stt += (t[i] - mt) * (t[i] - mt);
    stv += (t[i] - mt) * (v[i] - mv);
    svv += (v[i] - mv) * (v[i] - mv);
  }
  if (stt <= 0) return f;
  f.slope = stv / stt;
  f.intercept = mv - f.slope * mt;
  f.r2 = svv > 0 ? (stv * stv) / (stt * svv) : 1.0;
  return f;
}

}  // namespace gpudoc::diagnose
