// Signals: the analysed span of a trace, each GPU's series on the grid, features of a span of it.
// Method: docs/methodology.md ("Diagnosis"); thresholds: thresholds.hpp.
#include "diagnose/signals.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

namespace gpudoc::diagnose::detail {
namespace {

using gpu::Metric;

StepGrid grid_of(const telemetry::Series& s, double t0, double t1, double* period_out = nullptr) {
  const double period = upper_median_spacing(s, 1.0);
  if (period_out) *period_out = period;
  const double hold = std::min(th::kMaxHoldS, std::max(th::kMinHoldS, th::kMaxHoldFactor * period));
  return resample_steps(s, t0, t1, th::kGridStepS, hold);
}

// Start-up: the first sign of work on one GPU (util/SM up for kOnsetMinS, or memory allocated);
// INFINITY when none.
double onset_of(const telemetry::GpuTrace& g) {
  double onset = INFINITY;
  // Work that lasts: active samples in a row for kOnsetMinS (a lone leftover sample from before
  // the recording, repeated on a few CSV rows, is not the start of work).
  for (Metric m : {Metric::kGpuUtilizationPercent, Metric::kGpmSmActivityPercent}) {
    const auto& s = g.metric(m);
    double run_start = NAN;
    for (std::size_t i = 0; i < s.t.size(); ++i) {
      if (!std::isfinite(s.v[i])) continue;
      if (s.v[i] < th::kActiveUtilPercent) {
        run_start = NAN;
        continue;
      }
      if (std::isnan(run_start)) run_start = s.t[i];
      if (s.t[i] - run_start >= th::kOnsetMinS) {
        onset = std::min(onset, run_start);
        break;
      }
    }
  }
  const auto& mem = g.metric(Metric::kMemoryUsedBytes);
  double base = NAN;
  for (std::size_t i = 0; i < mem.t.size(); ++i) {
    if (!std::isfinite(mem.v[i])) continue;
    if (std::isnan(base))
      base = mem.v[i];
    else if (mem.v[i] - base >= th::kStartupMemoryRiseBytes) {
      onset = std::min(onset, mem.t[i]);
      break;
    }
  }
  return onset;
}

}  // namespace

double upper_median_spacing(const telemetry::Series& s, double fallback) {
  std::vector<double> d;
  for (std::size_t i = 1; i < s.t.size() && d.size() < 4096; ++i) {
    const double x = s.t[i] - s.t[i - 1];
    if (std::isfinite(x) && x > 1e-3) d.push_back(x);
  }
  if (d.empty()) return fallback;
  std::nth_element(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(d.size() / 2), d.end());
  return d[d.size() / 2];
}

Signals make_signals(const telemetry::GpuTrace& g, double t0, double t1) {
  Signals s;
  s.util = grid_of(g.metric(Metric::kGpuUtilizationPercent), t0, t1, &s.util_period_s);
  s.mutil = grid_of(g.metric(Metric::kMemoryUtilizationPercent), t0, t1);
  s.sm = grid_of(g.metric(Metric::kGpmSmActivityPercent), t0, t1);
  s.tensor = grid_of(g.metric(Metric::kGpmTensorActivityPercent), t0, t1);
  s.dram = grid_of(g.metric(Metric::kGpmDramActivityPercent), t0, t1);
  s.power = grid_of(g.metric(Metric::kPowerWatts), t0, t1);
  s.nvlink_tx = grid_of(g.metric(Metric::kGpmNvlinkTxBytesPerSecond), t0, t1);
  s.has_util = s.util.count(0, s.util.cells) >= th::kMinSignalCells;
  s.has_gpm = s.sm.count(0, s.sm.cells) >= th::kMinSignalCells;
  s.has_power = s.power.count(0, s.power.cells) >= th::kMinSignalCells;
  s.has_mutil = s.mutil.count(0, s.mutil.cells) >= th::kMinSignalCells;
  const auto& p = g.metric(Metric::kPowerWatts);
  const Levels pl = levels(p.v);
  if (pl.n > 0) {
    s.power_floor_w = pl.p05;
    s.has_power_floor = pl.p05 > 1;
  }
  return s;
}

Features features(const Signals& s, std::size_t a, std::size_t b, bool with_wave) {
  Features f;
  f.t0 = s.util.time_at(a);
  f.t1 = s.util.time_at(b);
  f.util = levels(s.util, a, b);
  f.mutil = levels(s.mutil, a, b);
  f.sm = levels(s.sm, a, b);
  f.tensor = levels(s.tensor, a, b);
  f.dram = levels(s.dram, a, b);
  f.power = levels(s.power, a, b);
  const Levels nv = levels(s.nvlink_tx, a, b);
  f.has_nvlink = nv.n > 0;
  f.nvlink_tx_mean = nv.mean;
  f.use_util = f.util.n >= th::kMinSignalCells || f.sm.n < th::kMinSignalCells;
  const StepGrid& wave = f.use_util ? s.util : s.sm;
  const Levels& wl = f.use_util ? f.util : f.sm;
  // Only a signal that swings from near idle to high can be a sawtooth: skip the (costly)
  // autocorrelation otherwise.
  const bool swings = wl.p95 - wl.p05 >= th::kSawtoothAmplitudePercent && wl.p05 <= th::kSawtoothTroughMaxPercent;
  if (with_wave && swings && wl.n >= th::kMinSignalCells) {
    const auto max_lag = static_cast<std::size_t>(std::min(th::kMaxPeriodS, (f.t1 - f.t0) / 2) / th::kGridStepS);
    // The period is read from the first kAcfMaxCells of a long run: the cost stays linear in the
    // trace's length, and a run is one pattern by construction.
    const std::vector<double> acf = autocorrelation(wave.dense(a, std::min(b, a + th::kAcfMaxCells)), max_lag);
    f.acf = first_acf_peak(acf, th::kAcfPeakMin);
    const double mid = (wl.p95 + wl.p05) / 2;
    f.mid_crossings = crossings(wave, a, b, mid);
    const double valid_s = static_cast<double>(wl.n) * th::kGridStepS;
    const double cross_period = f.mid_crossings >= 2 ? valid_s / (static_cast<double>(f.mid_crossings) / 2) : 0;
    if (f.acf) {
      f.acf_period_s = static_cast<double>(f.acf->lag) * th::kGridStepS;
      // A period shorter than twice the sample period aliases: the sampled sequence repeats at a
      // multiple of the true period. More than one up-and-down per autocorrelation period says so.
      double k = cross_period > 0 ? std::round(f.acf_period_s / cross_period) : 1;
      k = std::max(1.0, k);
      f.period_s = f.acf_period_s / k;
    } else {
      f.period_s = cross_period;
    }
  }
  return f;
}

double busy_level(const Features& f) { return f.util.n >= th::kMinSignalCells ? f.util.mean : f.sm.mean; }

bool has_gpm(const Features& f) { return f.sm.n >= th::kMinSignalCells; }

double share_of(double part, double whole) { return whole > 0 ? part / whole : 0; }

Span analysed_span(const telemetry::Trace& trace, const Options& opt) {
  double first = INFINITY, last = -INFINITY;
  if (trace.first_sample_s && trace.last_sample_s) {
    // The reader's: it saw the metrics it did not keep too.
    first = *trace.first_sample_s;
    last = *trace.last_sample_s;
  } else {
    for (const auto& g : trace.gpus)
      for (const auto& s : g.metrics)
        for (double t : s.t)
          if (std::isfinite(t)) {
            first = std::min(first, t);
            last = std::max(last, t);
          }
  }
  Span sp;
  if (!std::isfinite(first)) return sp;
  sp.first = first;
  sp.t0 = first;
  sp.t1 = last;
  // Tail: stop before the recorded command's exit (teardown frees memory, drops util).
  for (const auto& e : trace.events)
    if (e.kind == "process_exit" && std::isfinite(e.t) && e.t - th::kTailS > sp.t0)
      sp.t1 = std::min(sp.t1, e.t - th::kTailS);

  if (opt.skip_start_s >= 0) {
    sp.t0 = first + opt.skip_start_s;
    sp.how = fmt::format("skipped the first {:.1f} s as asked", opt.skip_start_s);
    return sp;
  }
  double onset = INFINITY;
  for (const auto& g : trace.gpus) onset = std::min(onset, onset_of(g));
  if (!std::isfinite(onset) || onset - first <= th::kAttachedStartS) {
    sp.how =
        std::isfinite(onset) ? "work from the first sample: nothing skipped" : "no start of work seen: nothing skipped";
    return sp;
  }
  sp.t0 = std::min(onset + th::kWarmupS, sp.t1);
  sp.how = fmt::format("skipped {:.1f} s of start-up (idle until t = {:.1f} s, then {:.1f} s of warm-up)",
                       sp.t0 - first, onset, th::kWarmupS);
  return sp;
}

}  // namespace gpudoc::diagnose::detail
