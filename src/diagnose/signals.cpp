// Signals: the analysed span of a trace, each GPU's series on the grid, features of a span of it.
// Method: docs/methodology.md ("Diagnosis"); thresholds: thresholds.hpp.
#include "diagnose/signals.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
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

// Recurring work on one GPU: the first util/SM reading that saw a kernel and has at least
// kRecurringSamples - 1 more within kRecurringWindowS after it, and the last one with as many
// before it. A context or allocated memory alone is not work. Infinite when none.
struct WorkSpan {
  double first = INFINITY, last = -INFINITY;
  double sustained = INFINITY;  // the first run of util/SM >= kActiveUtilPercent lasting kOnsetMinS
};

// The start of the first run of samples at or above kActiveUtilPercent that lasts kOnsetMinS.
double sustained_start(const telemetry::Series& s) {
  double run_start = NAN;
  for (std::size_t i = 0; i < s.t.size(); ++i) {
    if (!std::isfinite(s.v[i]) || !std::isfinite(s.t[i])) continue;
    if (s.v[i] < th::kActiveUtilPercent) {
      run_start = NAN;
      continue;
    }
    if (std::isnan(run_start)) run_start = s.t[i];
    if (s.t[i] - run_start >= th::kOnsetMinS) return run_start;
  }
  return INFINITY;
}
WorkSpan work_span_of(const telemetry::GpuTrace& g) {
  WorkSpan w;
  const std::size_t k = th::kRecurringSamples - 1;
  std::vector<double> active;
  for (Metric m : {Metric::kGpuUtilizationPercent, Metric::kGpmSmActivityPercent}) {
    const auto& s = g.metric(m);
    w.sustained = std::min(w.sustained, sustained_start(s));
    active.clear();
    for (std::size_t i = 0; i < s.t.size(); ++i)
      if (std::isfinite(s.t[i]) && std::isfinite(s.v[i]) && s.v[i] >= th::kWorkLevelPercent) active.push_back(s.t[i]);
    if (!std::is_sorted(active.begin(), active.end())) std::sort(active.begin(), active.end());
    // Distinct readings only: rows closer than kDistinctReadingS repeat one reading.
    std::size_t kept = 0;
    for (double t : active)
      if (kept == 0 || t - active[kept - 1] >= th::kDistinctReadingS) active[kept++] = t;
    active.resize(kept);
    if (active.size() <= k) continue;
    for (std::size_t i = 0; i + k < active.size(); ++i)
      if (active[i + k] - active[i] <= th::kRecurringWindowS) {
        w.first = std::min(w.first, active[i]);
        break;
      }
    for (std::size_t i = active.size() - 1; i >= k; --i)
      if (active[i] - active[i - k] <= th::kRecurringWindowS) {
        w.last = std::max(w.last, active[i]);
        break;
      }
  }
  return w;
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

Signals make_signals(const telemetry::GpuTrace& g, const gpu::DeviceInfo* dev, double t0, double t1) {
  Signals s;
  s.util = grid_of(g.metric(Metric::kGpuUtilizationPercent), t0, t1, &s.util_period_s);
  s.mutil = grid_of(g.metric(Metric::kMemoryUtilizationPercent), t0, t1);
  s.sm = grid_of(g.metric(Metric::kGpmSmActivityPercent), t0, t1);
  s.tensor = grid_of(g.metric(Metric::kGpmTensorActivityPercent), t0, t1);
  s.dram = grid_of(g.metric(Metric::kGpmDramActivityPercent), t0, t1);
  s.power = grid_of(g.metric(Metric::kPowerWatts), t0, t1);
  s.nvlink_tx = grid_of(g.metric(Metric::kGpmNvlinkTxBytesPerSecond), t0, t1);
  s.pcie_rx = grid_of(g.metric(Metric::kGpmPcieRxBytesPerSecond), t0, t1);
  s.pcie_tx = grid_of(g.metric(Metric::kGpmPcieTxBytesPerSecond), t0, t1);
  s.has_util = s.util.count(0, s.util.cells) >= th::kMinSignalCells;
  s.has_gpm = s.sm.count(0, s.sm.cells) >= th::kMinSignalCells;
  s.has_power = s.power.count(0, s.power.cells) >= th::kMinSignalCells;
  s.has_mutil = s.mutil.count(0, s.mutil.cells) >= th::kMinSignalCells;
  {
    const telemetry::Series& m = g.metric(Metric::kClockEventReasonsMask);
    telemetry::Series cap;
    for (std::size_t i = 0; i < m.t.size(); ++i)
      if (std::isfinite(m.v[i]) && m.v[i] >= 0) {
        cap.t.push_back(m.t[i]);
        cap.v.push_back((static_cast<std::uint64_t>(m.v[i]) & gpu::kClockEventSwPowerCap) ? 1.0 : 0.0);
      }
    s.power_cap = grid_of(cap, t0, t1);
  }
  const auto& p = g.metric(Metric::kPowerWatts);
  const Levels pl = levels(p.v);
  if (pl.n > 0) {
    s.power_floor_w = pl.p05;
    s.has_power_floor = pl.p05 > 1;
    s.power_floor_idle =
        s.has_power_floor && levels(g.metric(Metric::kGpuUtilizationPercent).v).p05 < th::kIdleUtilPercent;
  }
  // The board's limit: the enforced limit the trace recorded (nvidia-smi's power.limit), else the
  // default from the header, else the default of the board's model (an nvidia-smi log with `name`).
  const Levels lim = levels(g.metric(Metric::kPowerLimitWatts).v);
  if (lim.n > 0 && lim.p50 > 1) {
    s.power_limit_w = lim.p50;
    s.power_limit_from = "recorded";
  } else if (dev && dev->power_limit_default_watts && *dev->power_limit_default_watts > 1) {
    s.power_limit_w = *dev->power_limit_default_watts;
    s.power_limit_from = "default";
  } else if (dev && model_power_limit_w(dev->name) > 0) {
    s.power_limit_w = model_power_limit_w(dev->name);
    s.power_limit_from = "model";
  }
  return s;
}

double model_power_limit_w(std::string_view name) {
  // Exact names only: "NVIDIA H200 NVL" is a 600 W board.
  if (name == "NVIDIA H200") return 700;
  return 0;
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
  f.power_cap = levels(s.power_cap, a, b);
  const Levels nv = levels(s.nvlink_tx, a, b);
  f.has_nvlink = nv.n > 0;
  f.nvlink_tx_mean = nv.mean;
  const Levels rx = levels(s.pcie_rx, a, b), tx = levels(s.pcie_tx, a, b);
  f.has_pcie = rx.n >= th::kMinSignalCells && tx.n >= th::kMinSignalCells;
  f.pcie_bytes_per_s = f.has_pcie ? rx.mean + tx.mean : 0;
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
    std::size_t above = 0, seen = 0;
    for (const auto& st : wave.steps) {
      const std::size_t from = std::max<std::size_t>(st.first, a);
      const std::size_t to = std::min<std::size_t>(std::size_t{st.first} + st.count, b);
      if (from >= to) continue;
      seen += to - from;
      if (st.v >= mid) above += to - from;
    }
    f.above_mid_share = share_of(static_cast<double>(above), static_cast<double>(seen));
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
  WorkSpan work;
  for (const auto& g : trace.gpus) {
    const WorkSpan w = work_span_of(g);
    work.first = std::min(work.first, w.first);
    work.last = std::max(work.last, w.last);
    work.sustained = std::min(work.sustained, w.sustained);
  }
  // ...and before a short idle end after the last work: teardown (an nvidia-smi log has no exit
  // event; a job's exit takes seconds). A longer idle end is a phase of its own and stays.
  std::string tail;
  if (std::isfinite(work.last) && sp.t1 > work.last && sp.t1 - work.last <= th::kTeardownMaxS &&
      work.last - std::max(sp.t0, work.first) >= th::kMinSpanS) {
    tail =
        fmt::format("; left out {:.1f} s of teardown after the last work (t = {:.1f} s)", sp.t1 - work.last, work.last);
    sp.t1 = work.last;
  }

  if (opt.skip_start_s >= 0) {
    sp.t0 = first + opt.skip_start_s;
    sp.how = fmt::format("skipped the first {:.1f} s as asked", opt.skip_start_s) + tail;
    return sp;
  }
  // The start of work: set-up kernels (weights, cuDNN autotuning) often run a little before the
  // job's steady work; where a sustained level follows within a few seconds, work starts there.
  double onset = work.first;
  if (std::isfinite(work.sustained) && work.sustained >= onset && work.sustained - onset <= th::kOnsetSearchS)
    onset = work.sustained;
  if (!std::isfinite(onset) || onset - first <= th::kAttachedStartS) {
    sp.how = (std::isfinite(onset) ? "work from the first sample: nothing skipped"
                                   : "no work seen (no kernel ran): nothing skipped") +
             tail;
    return sp;
  }
  sp.t0 = std::min(onset + th::kWarmupS, sp.t1);
  sp.how = fmt::format("skipped {:.1f} s of start-up (no work until t = {:.1f} s, then {:.1f} s of warm-up)",
                       sp.t0 - first, onset, th::kWarmupS) +
           tail;
  return sp;
}

}  // namespace gpudoc::diagnose::detail
