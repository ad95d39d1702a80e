#include "diagnose/features.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>

namespace gpudoc::diagnose {
namespace {

// Indices of the usable samples of s (finite t and v), in time order, stably (the reader sorts;
// synthetic input may not be).
std::vector<std::size_t> usable_in_time_order(const telemetry::Series& s) {
  const std::size_t n = std::min(s.t.size(), s.v.size());
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
  return idx;
}

// The first cell c (0 <= c <= cells) whose time satisfies `reached(time_at(c))`, for a predicate
// that, once true, stays true as c grows; `guess` is where to start looking. Exact: the cell
// times are computed as the dense loop computes them.
template <class Reached>
std::size_t first_cell(const StepGrid& g, double guess, Reached reached) {
  const double cap = static_cast<double>(g.cells);
  std::size_t c = !(guess > 0) ? 0 : guess >= cap ? g.cells : static_cast<std::size_t>(guess);
  while (c > 0 && reached(g.time_at(c - 1))) --c;
  while (c < g.cells && !reached(g.time_at(c))) ++c;
  return c;
}

bool same_bits(double a, double b) { return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b); }

// The steps of g that overlap cells [a, b), clipped to them: f(first, count, v) in cell order.
template <class F>
void for_steps(const StepGrid& g, std::size_t a, std::size_t b, F f) {
  b = std::min(b, g.cells);
  if (a >= b) return;
  auto it = std::upper_bound(g.steps.begin(), g.steps.end(), a,
                             [](std::size_t x, const StepGrid::Step& st) { return x < st.first; });
  if (it != g.steps.begin()) --it;
  for (; it != g.steps.end() && it->first < b; ++it) {
    const std::size_t s0 = std::max<std::size_t>(a, it->first);
    const std::size_t s1 = std::min<std::size_t>(b, std::size_t{it->first} + it->count);
    if (s0 < s1) f(s0, s1 - s0, it->v);
  }
}

}  // namespace

Grid resample(const telemetry::Series& s, double t0, double t1, double dt, double max_hold_s) {
  Grid g;
  g.t0 = t0;
  g.dt = dt > 0 ? dt : 0.1;
  if (!(t1 > t0) || !std::isfinite(t0) || !std::isfinite(t1)) return g;
  const auto cells = static_cast<std::size_t>(std::ceil((t1 - t0) / g.dt));
  g.v.assign(cells, std::nan(""));
  const std::size_t n = std::min(s.t.size(), s.v.size());
  if (n == 0) return g;

  const std::vector<std::size_t> idx = usable_in_time_order(s);

  std::size_t k = 0;  // next sample not yet at or before the cell's time
  std::size_t held = idx.size();
  for (std::size_t c = 0; c < cells; ++c) {
    const double tc = g.time_at(c);
    while (k < idx.size() && s.t[idx[k]] <= tc) held = k++;
    if (held < idx.size() && tc - s.t[idx[held]] <= max_hold_s) g.v[c] = s.v[idx[held]];
  }
  return g;
}

StepGrid resample_steps(const telemetry::Series& s, double t0, double t1, double dt, double max_hold_s) {
  StepGrid g;
  g.t0 = t0;
  g.dt = dt > 0 ? dt : 0.1;
  if (!(t1 > t0) || !std::isfinite(t0) || !std::isfinite(t1)) return g;
  const double cells = std::ceil((t1 - t0) / g.dt);
  g.cells = static_cast<std::size_t>(std::min(cells, static_cast<double>(std::numeric_limits<std::uint32_t>::max())));
  const std::vector<std::size_t> idx = usable_in_time_order(s);
  // Sample k holds the cells from the first at or after its time to the first at or after the
  // next sample's time, as long as they are at most max_hold_s after it.
  std::size_t start = 0;  // first cell of sample k
  for (std::size_t k = 0; k < idx.size() && start < g.cells; ++k) {
    const double tk = s.t[idx[k]];
    if (k == 0) start = first_cell(g, std::ceil((tk - t0) / g.dt), [&](double tc) { return tc >= tk; });
    std::size_t next = g.cells;
    if (k + 1 < idx.size()) {
      const double tn = s.t[idx[k + 1]];
      next = first_cell(g, std::ceil((tn - t0) / g.dt), [&](double tc) { return tc >= tn; });
    }
    const std::size_t held_until =
        first_cell(g, std::floor((tk + max_hold_s - t0) / g.dt) + 1, [&](double tc) { return tc - tk > max_hold_s; });
    const std::size_t end = std::min(next, held_until);
    if (end > start) {
      const double v = s.v[idx[k]];
      auto& steps = g.steps;
      if (!steps.empty() && std::size_t{steps.back().first} + steps.back().count == start &&
          same_bits(steps.back().v, v))
        steps.back().count += static_cast<std::uint32_t>(end - start);
      else
        steps.push_back({static_cast<std::uint32_t>(start), static_cast<std::uint32_t>(end - start), v});
    }
    start = next;
  }
  return g;
}

std::size_t StepGrid::count(std::size_t a, std::size_t b) const {
  std::size_t n = 0;
  for_steps(*this, a, b, [&](std::size_t, std::size_t c, double) { n += c; });
  return n;
}

std::vector<double> StepGrid::dense(std::size_t a, std::size_t b) const {
  b = std::min(b, cells);
  if (a >= b) return {};
  std::vector<double> out(b - a, std::nan(""));
  for_steps(*this, a, b, [&](std::size_t first, std::size_t c, double v) {
    std::fill_n(out.begin() + static_cast<std::ptrdiff_t>(first - a), c, v);
  });
  return out;
}

Levels levels(const StepGrid& g, std::size_t a, std::size_t b) {
  Levels l;
  struct Run {
    double v;
    std::size_t count;
  };
  std::vector<Run> runs;
  for_steps(g, a, b, [&](std::size_t, std::size_t c, double v) {
    runs.push_back({v, c});
    l.n += c;
  });
  if (l.n == 0) return l;
  // Cell by cell, in cell order, as levels() sums the dense cells: the same rounding.
  double sum = 0;
  for (const Run& r : runs)
    for (std::size_t i = 0; i < r.count; ++i) sum += r.v;
  l.mean = sum / static_cast<double>(l.n);
  double ss = 0;
  for (const Run& r : runs)
    for (std::size_t i = 0; i < r.count; ++i) ss += (r.v - l.mean) * (r.v - l.mean);
  l.sd = std::sqrt(ss / static_cast<double>(l.n));
  std::sort(runs.begin(), runs.end(), [](const Run& x, const Run& y) { return x.v < y.v; });
  // The value at a rank of the sorted cells: walk the sorted runs' counts.
  auto at_rank = [&](std::size_t rank) {
    std::size_t seen = 0;
    for (const Run& r : runs) {
      seen += r.count;
      if (rank < seen) return r.v;
    }
    return runs.back().v;
  };
  auto q = [&](double p) {
    const double pos = p * static_cast<double>(l.n - 1);
    const auto lo = static_cast<std::size_t>(std::floor(pos));
    const std::size_t hi = std::min(lo + 1, l.n - 1);
    const double w = pos - static_cast<double>(lo);
    return at_rank(lo) * (1 - w) + at_rank(hi) * w;
  };
  l.p05 = q(0.05);
  l.p50 = q(0.5);
  l.p95 = q(0.95);
  l.min = runs.front().v;
  l.max = runs.back().v;
  return l;
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

std::size_t crossings(const StepGrid& g, std::size_t a, std::size_t b, double level) {
  std::size_t n = 0;
  int prev = 0;  // -1 below, +1 at or above, 0 unknown (start, or after a gap)
  std::size_t end = a;
  for_steps(g, a, b, [&](std::size_t first, std::size_t c, double v) {
    if (first > end) prev = 0;
    const int side = v >= level ? 1 : -1;
    if (prev != 0 && side != prev) ++n;
    prev = side;
    end = first + c;
  });
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
