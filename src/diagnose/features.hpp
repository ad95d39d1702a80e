// gpudoc::diagnose features — the numbers a diagnosis is built from, as pure functions on
// time series: resampling onto a regular grid, levels, autocorrelation and period, mid-level
// crossings, slopes (the correlation of two series: core/numeric.hpp). No I/O; thread-safe (no
// shared state); never throw.
//
//   diagnose::Grid g = diagnose::resample(util, 10.0, 40.0, 0.1, 1.0);   // NaN where no data
//   diagnose::Levels l = diagnose::levels(g.v);                          // mean, p05, p95, ...
//   std::vector<double> acf = diagnose::autocorrelation(g.v, 200);
//   auto p = diagnose::first_acf_peak(acf, 0.3);                         // lag in cells
//
//   diagnose::StepGrid s = diagnose::resample_steps(util, 0, 1e8, 0.1, 1.0);   // one step per sample
//   diagnose::Levels w = diagnose::levels(s, 0, 600);                          // the first minute
//
// Missing values are NaN throughout and are skipped, never read as zero. A Grid holds every cell
// of its span; a StepGrid holds one step per sample, so its memory follows the data, not the span
// (two samples a year apart are two steps, not 3e8 cells), and gives the same numbers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "telemetry/trace.hpp"

namespace gpudoc::diagnose {

// Values on a regular grid: v[i] describes time t0 + i*dt. NaN = no data there.
struct Grid {
  double t0 = 0;
  double dt = 0.1;
  std::vector<double> v;
  [[nodiscard]] double time_at(std::size_t i) const { return t0 + static_cast<double>(i) * dt; }
};

// Sample-and-hold of `s` onto [t0, t1) at step dt (seconds): each cell takes the latest sample at
// or before its time, if that sample is at most max_hold_s old (else NaN: a gap). Samples with a
// non-finite t or v are ignored; `s` need not be sorted (it is sorted here if it is not).
[[nodiscard]] Grid resample(const telemetry::Series& s, double t0, double t1, double dt, double max_hold_s);

// The same grid as resample() gives, kept as steps: each step is a run of cells that hold one
// sample's value; cells in no step are gaps. Steps are in cell order, never overlap, and
// adjacent steps hold different values (equal ones are merged).
struct StepGrid {
  struct Step {
    std::uint32_t first = 0;  // first cell
    std::uint32_t count = 0;  // cells, > 0
    double v = 0;             // finite
  };
  double t0 = 0;
  double dt = 0.1;
  std::size_t cells = 0;  // the grid's length: cells [0, cells); at most 2^32 - 1
  std::vector<Step> steps;
  [[nodiscard]] double time_at(std::size_t i) const { return t0 + static_cast<double>(i) * dt; }
  // Cells with data in [a, b).
  [[nodiscard]] std::size_t count(std::size_t a, std::size_t b) const;
  // Cells [a, b) as a Grid would hold them: NaN in gaps.
  [[nodiscard]] std::vector<double> dense(std::size_t a, std::size_t b) const;
};

// Sample-and-hold as resample(), kept as steps. Memory: one step per sample at most. The grid is
// cut at 2^32 - 1 cells.
[[nodiscard]] StepGrid resample_steps(const telemetry::Series& s, double t0, double t1, double dt, double max_hold_s);

struct Levels {
  std::size_t n = 0;  // finite values
  double mean = 0;
  double sd = 0;
  double p05 = 0;  // 5th percentile: the trough level
  double p50 = 0;
  double p95 = 0;  // 95th percentile: the peak level
  double min = 0;
  double max = 0;
};
// Levels of the finite values of v; n == 0 when there are none (the other fields are then 0).
[[nodiscard]] Levels levels(std::span<const double> v);

// Levels of the cells [a, b) of a step grid: the same numbers levels() gives on the dense cells
// (sums taken cell by cell in cell order, percentiles of the same sorted values).
[[nodiscard]] Levels levels(const StepGrid& g, std::size_t a, std::size_t b);

// Normalised autocorrelation r[k], k = 0..max_lag (r[0] = 1), over pairs where both values are
// finite. Empty when v has fewer than 4 finite values or no variance.
[[nodiscard]] std::vector<double> autocorrelation(std::span<const double> v, std::size_t max_lag);

struct AcfPeak {
  std::size_t lag = 0;  // in cells
  double value = 0;
};
// The first local maximum of acf after it has first fallen below zero (or below half of
// min_value when it never goes negative), with value >= min_value. nullopt when none.
[[nodiscard]] std::optional<AcfPeak> first_acf_peak(std::span<const double> acf, double min_value);

// Number of crossings of `level` by the finite values of v (a NaN breaks the sequence).
[[nodiscard]] std::size_t crossings(std::span<const double> v, double level);
// The same over the cells [a, b) of a step grid (a gap breaks the sequence).
[[nodiscard]] std::size_t crossings(const StepGrid& g, std::size_t a, std::size_t b, double level);

// Share of finite values >= level; 0 when there are none.
[[nodiscard]] double share_at_or_above(std::span<const double> v, double level);

struct Fit {
  double slope = 0;      // units of v per second
  double intercept = 0;  // value at t = 0
  double r2 = 0;
  std::size_t n = 0;
};
// Least-squares line through the finite points (t, v). n < 2 or no spread in t: slope 0, n as seen.
[[nodiscard]] Fit linear_fit(std::span<const double> t, std::span<const double> v);

}  // namespace gpudoc::diagnose
