// The classifier: from per-GPU features of each window to labels, from runs of labels to findings.
// Method and thresholds: docs/methodology.md ("Diagnosis") and thresholds.hpp.
#include "diagnose/diagnose.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/numeric.hpp"
#include "diagnose/features.hpp"
#include "diagnose/thresholds.hpp"

namespace gpudoc::diagnose {
namespace {

using findings::Evidence;
using findings::Finding;
using findings::Severity;
using gpu::Metric;

constexpr double kGiB = 1024.0 * 1024 * 1024;

// ---- signals on the grid --------------------------------------------------------------------

struct Signals {
  Grid util, mutil, sm, tensor, dram, power, nvlink_tx;
  bool has_util = false, has_gpm = false, has_power = false, has_mutil = false;
  double util_period_s = th::kUtilSensorPeriodS;  // median spacing of util samples
  double power_floor_w = 0;                        // idle floor: p05 of the whole trace's power
  bool has_power_floor = false;
};

double median_spacing(const telemetry::Series& s, double fallback) {
  std::vector<double> d;
  for (std::size_t i = 1; i < s.t.size() && d.size() < 4096; ++i) {
    const double x = s.t[i] - s.t[i - 1];
    if (std::isfinite(x) && x > 1e-3) d.push_back(x);
  }
  if (d.empty()) return fallback;
  std::nth_element(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(d.size() / 2), d.end());
  return d[d.size() / 2];
}

Grid grid_of(const telemetry::Series& s, double t0, double t1, double* period_out = nullptr) {
  const double period = median_spacing(s, 1.0);
  if (period_out) *period_out = period;
  const double hold = std::max(th::kMinHoldS, th::kMaxHoldFactor * period);
  return resample(s, t0, t1, th::kGridStepS, hold);
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
  s.has_util = levels(s.util.v).n >= th::kMinSignalCells;
  s.has_gpm = levels(s.sm.v).n >= th::kMinSignalCells;
  s.has_power = levels(s.power.v).n >= th::kMinSignalCells;
  s.has_mutil = levels(s.mutil.v).n >= th::kMinSignalCells;
  const auto& p = g.metric(Metric::kPowerWatts);
  const Levels pl = levels(p.v);
  if (pl.n > 0) {
    s.power_floor_w = pl.p05;
    s.has_power_floor = pl.p05 > 1;
  }
  return s;
}

std::span<const double> cells(const Grid& g, std::size_t a, std::size_t b) {
  a = std::min(a, g.v.size());
  b = std::min(b, g.v.size());
  return std::span<const double>(g.v).subspan(a, b - a);
}

// ---- features of one GPU over one span ------------------------------------------------------

struct Features {
  double t0 = 0, t1 = 0;
  Levels util, mutil, sm, tensor, dram, power;
  bool use_util = true;             // the wave signal is util (else GPM SM activity)
  std::optional<AcfPeak> acf;
  double period_s = 0;              // sawtooth period estimate (0: none)
  double acf_period_s = 0;
  std::size_t mid_crossings = 0;
  double nvlink_tx_mean = 0;
  bool has_nvlink = false;
};

Features features(const Signals& s, std::size_t a, std::size_t b, bool with_wave = true) {
  Features f;
  f.t0 = s.util.time_at(a);
  f.t1 = s.util.time_at(b);
  f.util = levels(cells(s.util, a, b));
  f.mutil = levels(cells(s.mutil, a, b));
  f.sm = levels(cells(s.sm, a, b));
  f.tensor = levels(cells(s.tensor, a, b));
  f.dram = levels(cells(s.dram, a, b));
  f.power = levels(cells(s.power, a, b));
  const Levels nv = levels(cells(s.nvlink_tx, a, b));
  f.has_nvlink = nv.n > 0;
  f.nvlink_tx_mean = nv.mean;
  f.use_util = f.util.n >= th::kMinSignalCells || f.sm.n < th::kMinSignalCells;
  const auto wave = f.use_util ? cells(s.util, a, b) : cells(s.sm, a, b);
  const Levels& wl = f.use_util ? f.util : f.sm;
  // Only a signal that swings from near idle to high can be a sawtooth: skip the (costly)
  // autocorrelation otherwise.
  const bool swings = wl.p95 - wl.p05 >= th::kSawtoothAmplitudePercent && wl.p05 <= th::kSawtoothTroughMaxPercent;
  if (with_wave && swings && wl.n >= th::kMinSignalCells) {
    const auto max_lag = static_cast<std::size_t>(std::min(th::kMaxPeriodS, (f.t1 - f.t0) / 2) / th::kGridStepS);
    // The period is read from the first kAcfMaxCells of a long run: the cost stays linear in the
    // trace's length, and a run is one pattern by construction.
    const std::vector<double> acf = autocorrelation(wave.first(std::min(wave.size(), th::kAcfMaxCells)), max_lag);
    f.acf = first_acf_peak(acf, th::kAcfPeakMin);
    const double mid = (wl.p95 + wl.p05) / 2;
    f.mid_crossings = crossings(wave, mid);
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

double share_of(double part, double whole) { return whole > 0 ? part / whole : 0; }

// ---- per-window labels ----------------------------------------------------------------------

enum class Label { kInsufficient, kIdle, kHealthy, kSawtooth, kSawtoothFast, kPlateauLaunch, kPlateauBusyIdle, kMemoryBound };

const char* id_of(Label l) {
  switch (l) {
    case Label::kInsufficient: return "insufficient_data";
    case Label::kIdle: return "idle";
    case Label::kHealthy: return "healthy";
    case Label::kSawtooth:
    case Label::kSawtoothFast: return "sawtooth";
    case Label::kPlateauLaunch:
    case Label::kPlateauBusyIdle: return "plateau";
    case Label::kMemoryBound: return "memory_bound";
  }
  return "insufficient_data";
}

// Mean util, or GPM SM activity when there is no util (a GPM-only trace).
double busy_level(const Features& f) { return f.util.n >= th::kMinSignalCells ? f.util.mean : f.sm.mean; }

bool has_gpm(const Features& f) { return f.sm.n >= th::kMinSignalCells; }

Label classify(const Features& f, const Signals& s) {
  const bool util_ok = f.util.n >= th::kMinSignalCells;
  if (!util_ok && !has_gpm(f)) return Label::kInsufficient;
  const double u = busy_level(f);
  const bool gpm = has_gpm(f);
  if (u < th::kIdleUtilPercent && (!gpm || f.sm.mean < th::kIdleUtilPercent)) return Label::kIdle;

  const Levels& wl = f.use_util ? f.util : f.sm;
  if (f.acf && wl.p95 - wl.p05 >= th::kSawtoothAmplitudePercent && wl.p05 <= th::kSawtoothTroughMaxPercent)
    return Label::kSawtooth;

  if (u >= th::kBusyUtilPercent) {
    if (gpm && f.tensor.n > 0 && f.dram.n > 0) {
      if (f.dram.mean >= th::kMemoryBoundDramPercent && f.tensor.mean < th::kMemoryBoundTensorMaxPercent)
        return Label::kMemoryBound;
      if (f.sm.mean < th::kBusyIdleSmRatio * u && f.dram.mean < th::kBusyIdleDramPercent) return Label::kPlateauBusyIdle;
      return Label::kHealthy;
    }
    if (gpm && f.sm.mean < th::kBusyIdleSmRatio * u) return Label::kPlateauBusyIdle;
    if (f.mutil.n >= th::kMinSignalCells && f.mutil.mean >= th::kMemoryBoundMemUtilPercent) return Label::kMemoryBound;
    return Label::kHealthy;
  }
  // A steady middle level without a visible period.
  if (gpm) return f.sm.mean >= th::kBurstSmRatio * u ? Label::kSawtoothFast : Label::kPlateauLaunch;
  if (f.power.n > 0 && s.has_power_floor)
    return f.power.mean >= th::kWorkPowerFactor * s.power_floor_w ? Label::kSawtoothFast : Label::kPlateauLaunch;
  return Label::kSawtoothFast;  // undecidable without GPM or power: never call it steady (low confidence)
}

// ---- pulse: roles across GPUs ---------------------------------------------------------------

struct PulseRoles {
  std::vector<int> waiting;
  std::vector<int> stragglers;
  [[nodiscard]] bool found() const { return !waiting.empty() && !stragglers.empty(); }
};

PulseRoles pulse_roles(const std::vector<Features>& fs, const std::vector<Label>& labels) {
  PulseRoles r;
  const std::size_t n = fs.size();
  if (n < 2) return r;
  std::vector<bool> waits(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    const Features& f = fs[i];
    if (labels[i] == Label::kInsufficient || labels[i] == Label::kIdle) continue;
    if (has_gpm(f)) {
      waits[i] = labels[i] == Label::kPlateauBusyIdle;
    } else if (busy_level(f) >= th::kBusyUtilPercent && f.power.n > 0) {
      for (std::size_t j = 0; j < n; ++j)
        if (j != i && fs[j].power.n > 0 && busy_level(fs[j]) >= th::kBusyUtilPercent &&
            f.power.mean <= th::kWaitPowerRatio * fs[j].power.mean)
          waits[i] = true;
    }
  }
  std::set<int> strag;
  for (std::size_t i = 0; i < n; ++i) {
    if (!waits[i]) continue;
    for (std::size_t j = 0; j < n; ++j) {
      if (j == i || waits[j] || labels[j] == Label::kInsufficient || labels[j] == Label::kIdle) continue;
      const bool more_sm = has_gpm(fs[i]) && has_gpm(fs[j]) &&
                           fs[j].sm.mean >= fs[i].sm.mean + th::kStragglerSmMarginPercent;
      const bool less_util = busy_level(fs[j]) <= busy_level(fs[i]) - th::kStragglerUtilMarginPercent;
      const bool more_power = !has_gpm(fs[i]) && fs[j].power.n > 0 && fs[i].power.n > 0 &&
                              fs[i].power.mean <= th::kWaitPowerRatio * fs[j].power.mean;
      if (more_sm || less_util || more_power) strag.insert(static_cast<int>(j));
    }
  }
  if (strag.empty()) return r;
  for (std::size_t i = 0; i < n; ++i)
    if (waits[i]) r.waiting.push_back(static_cast<int>(i));
  r.stragglers.assign(strag.begin(), strag.end());
  return r;
}

// ---- helpers to build findings --------------------------------------------------------------

std::string pct(double x) { return fmt::format("{:.0f} %", x); }

void add(Finding& f, std::string name, double value, std::string unit, std::string how) {
  f.evidence.push_back(Evidence{std::move(name), value, std::move(unit), std::move(how)});
}

double span_confidence(double span_s) {
  return span_s < th::kShortSpanS ? th::kShortSpanFactor : 1.0;
}

std::string gpu_list(const std::vector<int>& g) {
  std::string s;
  for (std::size_t i = 0; i < g.size(); ++i) s += (i ? ", " : "") + std::to_string(g[i]);
  return s;
}

struct Context {
  const telemetry::Trace* trace = nullptr;
  std::vector<Signals> sig;
  double t0 = 0, t1 = 0;
};

// Wave-level evidence shared by sawtooth.
Finding sawtooth_finding(int g, const Features& f, bool fast, const Signals& s) {
  const Levels& wl = f.use_util ? f.util : f.sm;
  const char* sig = f.use_util ? "gpu_utilization_percent" : "gpm_sm_activity_percent";
  const double span = f.t1 - f.t0;
  const bool below_resolution = fast || (f.period_s > 0 && f.period_s < 2 * s.util_period_s);
  double duty = 0, peak = wl.p95, trough = wl.p05;
  if (fast) {
    // The sensor averages the alternation away: the mean level is the busy share.
    duty = std::clamp(busy_level(f) / 100.0, 0.0, 1.0);
    peak = 100;
    trough = 0;
  } else {
    duty = wl.p95 - wl.p05 > 0 ? std::clamp((wl.mean - wl.p05) / (wl.p95 - wl.p05), 0.0, 1.0) : 1.0;
  }
  const double lost_s = span * (1 - duty);
  const double lost_share = 1 - duty;
  Finding out = findings::make_finding("sawtooth", lost_share >= th::kCriticalLostShare ? Severity::kCritical : Severity::kWarning);
  out.gpus = {g};
  out.window = {f.t0, f.t1};
  double conf = th::kBaseConfidence * span_confidence(span);
  if (fast) {
    const bool gpm = has_gpm(f);
    if (!gpm) conf *= th::kGuessFactor;
    out.message = fmt::format(
        "GPU {} alternates between work and idle faster than the {:.0f} ms utilization sensor resolves: "
        "utilization holds a middle level ({}) while {}; busy about {} of the time, {:.1f} s of GPU time lost",
        g, std::max(s.util_period_s, th::kUtilSensorPeriodS) * 1000, pct(busy_level(f)),
        gpm ? fmt::format("GPM SM activity ({}) shows full-chip bursts", pct(f.sm.mean))
            : (f.power.n > 0 ? fmt::format("power ({:.0f} W, {:.1f}x the idle floor) shows real work", f.power.mean,
                                           share_of(f.power.mean, s.power_floor_w))
                             : std::string("no GPM or power reading can confirm it")),
        pct(duty * 100), lost_s);
    out.caveats.push_back("below sensor resolution: period and duty cycle cannot be read from the curve; a profiler shows each gap");
    out.next_steps.insert(out.next_steps.begin(),
                          "The gaps are shorter than the sensor sees: profile them with `nsys profile -t cuda,nvtx,osrt -o gaps python3 train.py`");
  } else {
    out.message = fmt::format(
        "GPU {} works in bursts: period {:.2f} s, duty cycle {}, peak {} and trough {} {}, {:.1f} s of GPU time lost",
        g, f.period_s, pct(duty * 100), pct(peak), pct(trough), f.use_util ? "utilization" : "SM activity", lost_s);
    if (below_resolution) out.caveats.push_back("period near the sensor's resolution: confirm with a profiler (nsys)");
  }
  out.confidence = conf;
  if (!fast) {
    add(out, "period_s", f.period_s, "s", fmt::format("autocorrelation peak ({:.2f} s) and mid-level crossings of {}", f.acf_period_s, sig));
  }
  add(out, "duty_cycle_percent", duty * 100, "percent",
      fast ? "mean utilization (busy share of each 200 ms sample)" : fmt::format("(mean - trough) / (peak - trough) of {}", sig));
  add(out, "peak_percent", peak, "percent", fast ? "assumed full-chip bursts" : fmt::format("95th percentile of {}", sig));
  add(out, "trough_percent", trough, "percent", fast ? "assumed idle gaps" : fmt::format("5th percentile of {}", sig));
  add(out, "gpu_time_lost_s", lost_s, "s", "analysed span x (1 - duty cycle)");
  add(out, "mean_utilization_percent", busy_level(f), "percent", "mean over the span");
  if (has_gpm(f)) add(out, "mean_sm_activity_percent", f.sm.mean, "percent", "GPM SM activity, mean over the span");
  out.details = {{"below_sensor_resolution", below_resolution},
                 {"period_s", fast ? nlohmann::json(nullptr) : nlohmann::json(f.period_s)},
                 {"duty_cycle", duty},
                 {"peak_percent", peak},
                 {"trough_percent", trough},
                 {"gpu_time_lost_s", lost_s},
                 {"sensor_period_s", s.util_period_s}};
  return out;
}

Finding plateau_finding(int g, const Features& f, Label l, const Signals& s) {
  const double span = f.t1 - f.t0;
  const bool launch = l == Label::kPlateauLaunch;
  const bool gpm = has_gpm(f);
  const double sm = gpm ? f.sm.mean : -1;
  const bool critical = gpm && sm < th::kCriticalPlateauSmPercent;
  Finding out = findings::make_finding("plateau", critical ? Severity::kCritical : Severity::kWarning);
  out.gpus = {g};
  out.window = {f.t0, f.t1};
  out.confidence = th::kBaseConfidence * span_confidence(span) * (gpm ? 1.0 : th::kGuessFactor);
  const std::string kind = launch ? "launch_bound" : "busy_but_idle";
  if (launch) {
    out.message = fmt::format(
        "GPU {} is launch-bound: utilization flat at {} while {}: tiny kernels issued one by one keep it "
        "'busy' without using the chip",
        g, pct(busy_level(f)),
        gpm ? fmt::format("SM activity is {}", pct(sm))
            : fmt::format("power stays near idle ({:.0f} W, floor {:.0f} W)", f.power.mean, s.power_floor_w));
    // Launch-bound: lead with the CUDA Graph step, drop the busy-but-idle one.
    if (out.next_steps.size() > 1) out.next_steps.erase(out.next_steps.begin() + 1);
  } else {
    out.message = fmt::format(
        "GPU {} is busy but idle: utilization {} while SM activity is {}, tensor {} and DRAM {}: "
        "kernels hold the GPU without using its SMs",
        g, pct(busy_level(f)), pct(sm), pct(f.tensor.mean), pct(f.dram.mean));
    if (!out.next_steps.empty()) out.next_steps.erase(out.next_steps.begin());
  }
  if (!gpm) out.caveats.push_back("no GPM in this input: decided from utilization and power only");
  add(out, "mean_utilization_percent", busy_level(f), "percent", "mean over the span");
  add(out, "utilization_spread_percent", f.util.p95 - f.util.p05, "percent", "p95 - p05 of utilization: flat");
  if (gpm) {
    add(out, "mean_sm_activity_percent", sm, "percent", "GPM SM activity");
    add(out, "mean_tensor_activity_percent", f.tensor.mean, "percent", "GPM tensor activity");
    add(out, "mean_dram_activity_percent", f.dram.mean, "percent", "GPM DRAM bandwidth utilization");
  }
  if (f.power.n > 0) add(out, "mean_power_watts", f.power.mean, "W", "board power");
  out.details = {{"kind", kind},
                 {"mean_utilization_percent", busy_level(f)},
                 {"mean_sm_activity_percent", gpm ? nlohmann::json(sm) : nlohmann::json(nullptr)}};
  return out;
}

Finding memory_bound_finding(int g, const Features& f) {
  const bool gpm = has_gpm(f) && f.dram.n > 0;
  Finding out = findings::make_finding("memory_bound", Severity::kWarning);
  out.gpus = {g};
  out.window = {f.t0, f.t1};
  out.confidence = th::kBaseConfidence * span_confidence(f.t1 - f.t0) * (gpm ? 1.0 : th::kNoGpmFactor);
  out.message = gpm ? fmt::format("GPU {} is at the memory-bandwidth roof: utilization {}, DRAM activity {}, tensor activity {}",
                                  g, pct(busy_level(f)), pct(f.dram.mean), pct(f.tensor.mean))
                    : fmt::format("GPU {} looks memory-bound: utilization {}, memory utilization {}", g,
                                  pct(busy_level(f)), pct(f.mutil.mean));
  if (!gpm) out.caveats.push_back("no GPM in this input: DRAM and tensor activity not seen");
  add(out, "mean_utilization_percent", busy_level(f), "percent", "mean over the span");
  if (gpm) {
    add(out, "mean_dram_activity_percent", f.dram.mean, "percent", "GPM DRAM bandwidth utilization");
    add(out, "mean_tensor_activity_percent", f.tensor.mean, "percent", "GPM tensor activity");
  }
  if (f.mutil.n > 0) add(out, "mean_memory_utilization_percent", f.mutil.mean, "percent", "NVML memory utilization");
  out.details = {{"dram_activity_percent", gpm ? nlohmann::json(f.dram.mean) : nlohmann::json(nullptr)}};
  return out;
}

Finding simple_finding(const char* id, int g, const Features& f) {
  Finding out = findings::make_finding(id, Severity::kInfo);
  out.gpus = {g};
  out.window = {f.t0, f.t1};
  out.confidence = th::kBaseConfidence * span_confidence(f.t1 - f.t0);
  const bool gpm = has_gpm(f);
  if (std::string_view(id) == "idle") {
    out.message = fmt::format("GPU {} is idle: utilization {}{}", g, pct(busy_level(f)),
                              gpm ? fmt::format(", SM activity {}", pct(f.sm.mean)) : std::string());
  } else {
    if (!gpm) {
      out.confidence *= th::kNoGpmFactor;
      out.caveats.push_back("no GPM in this input: busy time seen, but not how much of the chip works");
    }
    out.message = fmt::format("GPU {} is saturated: utilization {}{}", g, pct(busy_level(f)),
                              gpm ? fmt::format(", SM activity {}, tensor activity {}", pct(f.sm.mean), pct(f.tensor.mean))
                                  : std::string());
  }
  add(out, "mean_utilization_percent", busy_level(f), "percent", "mean over the span");
  if (gpm) {
    add(out, "mean_sm_activity_percent", f.sm.mean, "percent", "GPM SM activity");
    if (f.tensor.n > 0) add(out, "mean_tensor_activity_percent", f.tensor.mean, "percent", "GPM tensor activity");
  }
  return out;
}

Finding insufficient_finding(int g, double t0, double t1, const std::string& why) {
  Finding out = findings::make_finding("insufficient_data", Severity::kInfo);
  if (g >= 0) out.gpus = {g};
  out.window = {t0, t1};
  out.confidence = 1.0;
  out.message = g >= 0 ? fmt::format("GPU {}: {}", g, why) : why;
  return out;
}

Finding pulse_finding(const PulseRoles& r, const std::vector<Features>& fs) {
  // Per-busy-time SM activity of the stragglers: what a GPU doing this step's work reaches.
  double ref = 0;
  bool gpm = true;
  for (int j : r.stragglers) {
    const Features& f = fs[static_cast<std::size_t>(j)];
    if (!has_gpm(f)) gpm = false;
    else ref = std::max(ref, std::min(100.0, share_of(f.sm.mean, std::max(busy_level(f), 1.0)) * 100));
  }
  double worst = 0;
  nlohmann::json waiting = nlohmann::json::array();
  for (int i : r.waiting) {
    const Features& f = fs[static_cast<std::size_t>(i)];
    double share = 0;
    if (gpm && has_gpm(f) && ref > 0) {
      share = std::clamp(1 - f.sm.mean / ref, 0.0, 1.0);
    } else {
      // Power above the idle floor as a stand-in for work done (no GPM).
      double pref = 0;
      for (int j : r.stragglers) pref = std::max(pref, fs[static_cast<std::size_t>(j)].power.mean);
      share = pref > 0 ? std::clamp(1 - f.power.mean / pref, 0.0, 1.0) : 0;
    }
    worst = std::max(worst, share);
    waiting.push_back({{"gpu", i}, {"waiting_share", share}, {"utilization_percent", busy_level(f)},
                       {"sm_activity_percent", has_gpm(f) ? nlohmann::json(f.sm.mean) : nlohmann::json(nullptr)},
                       {"power_watts", f.power.n > 0 ? nlohmann::json(f.power.mean) : nlohmann::json(nullptr)}});
  }
  nlohmann::json strag = nlohmann::json::array();
  std::string strag_kind = "compute";
  for (int j : r.stragglers) {
    const Features& f = fs[static_cast<std::size_t>(j)];
    const bool host = busy_level(f) < th::kBusyUtilPercent;
    if (host) strag_kind = "host";
    strag.push_back({{"gpu", j}, {"utilization_percent", busy_level(f)},
                     {"sm_activity_percent", has_gpm(f) ? nlohmann::json(f.sm.mean) : nlohmann::json(nullptr)},
                     {"kind", host ? "host" : "compute"}});
  }
  Finding out = findings::make_finding("pulse", worst >= th::kCriticalWaitShare ? Severity::kCritical : Severity::kWarning);
  std::vector<int> all = r.waiting;
  all.insert(all.end(), r.stragglers.begin(), r.stragglers.end());
  std::sort(all.begin(), all.end());
  out.gpus = all;
  const Features& w0 = fs[static_cast<std::size_t>(r.waiting.front())];
  out.window = {w0.t0, w0.t1};
  out.confidence = th::kBaseConfidence * span_confidence(w0.t1 - w0.t0) * (gpm ? 1.0 : th::kGuessFactor);
  out.message = fmt::format(
      "GPU {} wait{} for straggler GPU {} ({}): busy {} but {}; about {} of the time is spent waiting",
      gpu_list(r.waiting), r.waiting.size() == 1 ? "s" : "", gpu_list(r.stragglers),
      strag_kind == "host" ? "its own GPU idles: the delay is on the host" : "it computes longer",
      pct(busy_level(w0)),
      has_gpm(w0) ? fmt::format("SM activity only {}", pct(w0.sm.mean)) : fmt::format("power only {:.0f} W", w0.power.mean),
      pct(worst * 100));
  if (!gpm) out.caveats.push_back("no GPM in this input: waiting inferred from power, not SM activity");
  for (int i : r.waiting) {
    const Features& f = fs[static_cast<std::size_t>(i)];
    add(out, fmt::format("gpu{}_utilization_percent", i), busy_level(f), "percent", "waiting GPU, mean utilization");
    if (has_gpm(f)) add(out, fmt::format("gpu{}_sm_activity_percent", i), f.sm.mean, "percent", "waiting GPU, GPM SM activity");
    if (f.has_nvlink) add(out, fmt::format("gpu{}_nvlink_tx_bytes_per_second", i), f.nvlink_tx_mean, "By/s", "GPM NVLink tx, mean");
  }
  for (int j : r.stragglers) {
    const Features& f = fs[static_cast<std::size_t>(j)];
    add(out, fmt::format("gpu{}_utilization_percent", j), busy_level(f), "percent", "straggler, mean utilization");
    if (has_gpm(f)) add(out, fmt::format("gpu{}_sm_activity_percent", j), f.sm.mean, "percent", "straggler, GPM SM activity");
  }
  add(out, "waiting_share", worst, "1",
      gpm ? "1 - waiting GPU's SM activity / straggler's SM activity per busy time" : "1 - waiting GPU's power / straggler's power");
  out.details = {{"straggler", strag}, {"waiting", waiting}, {"straggler_kind", strag_kind}, {"waiting_share", worst}};
  return out;
}

// ---- whole-span findings: staircase, memory growth, throttling -----------------------------

std::optional<Finding> staircase(int g, const telemetry::GpuTrace& gt, double t0, double t1) {
  struct Proc { std::string name; telemetry::Series s; };
  std::map<std::uint32_t, Proc> procs;
  for (const telemetry::ProcessPoint& p : gt.processes) {
    if (p.t < t0 || p.t > t1 || !p.sample.sm_utilization_percent) continue;
    const double v = *p.sample.sm_utilization_percent;
    if (!std::isfinite(v)) continue;
    Proc& pr = procs[p.sample.pid];
    pr.name = p.sample.name;
    pr.s.t.push_back(p.t);
    pr.s.v.push_back(v);
  }
  struct Contender { std::uint32_t pid; std::string name; double mean; std::size_t n; Grid grid; };
  std::vector<Contender> cs;
  for (auto& [pid, pr] : procs) {
    const Levels l = levels(pr.s.v);
    if (l.n < th::kMinProcessPoints || l.mean < th::kMinProcessUtilPercent) continue;
    const double period = median_spacing(pr.s, 1.0);
    const Grid gr = resample(pr.s, t0, t1, std::max(period, th::kGridStepS), 2 * period);
    cs.push_back({pid, pr.name, l.mean, l.n, gr});
  }
  if (cs.size() < 2) return std::nullopt;
  double total = 0;
  for (const auto& c : cs) total += c.mean;
  std::optional<double> corr;
  if (cs.size() == 2 && cs[0].grid.dt == cs[1].grid.dt)
    corr = core::correlation(cs[0].grid.v, cs[1].grid.v, th::kMinCorrelationPairs);
  double worst = 0;
  nlohmann::json jp = nlohmann::json::array();
  Finding out = findings::make_finding("staircase", Severity::kWarning);
  std::string names;
  for (const auto& c : cs) {
    const double share = share_of(c.mean, total);
    const double loses = 1 - share;
    worst = std::max(worst, loses);
    jp.push_back({{"pid", c.pid}, {"name", c.name}, {"mean_utilization_percent", c.mean}, {"gpu_share", share}, {"loses_share", loses}});
    names += fmt::format("{}pid {} ({}, {} of the GPU's busy time)", names.empty() ? "" : ", ", c.pid,
                         c.name.empty() ? "?" : c.name, pct(share * 100));
    add(out, fmt::format("pid{}_mean_utilization_percent", c.pid), c.mean, "percent", "per-process SM utilization, mean");
  }
  if (worst >= th::kCriticalLossShare) out.severity = Severity::kCritical;
  out.gpus = {g};
  out.window = {t0, t1};
  const bool turns = corr && *corr <= th::kTurnsCorrelation;
  out.confidence = th::kBaseConfidence * (corr ? 1.0 : 0.7);
  out.message = fmt::format("{} processes share GPU {} and {}: {}; each loses up to {} of the GPU to the others",
                            cs.size(), g, turns ? "take turns (anti-correlated utilization)" : "contend for it", names,
                            pct(worst * 100));
  if (corr) add(out, "utilization_correlation", *corr, "1", "Pearson correlation of the two processes' utilization");
  else out.caveats.push_back("per-process samples too sparse to measure whether they take turns or run at once");
  add(out, "max_loses_share", worst, "1", "1 - process's share of the summed per-process utilization");
  out.details = {{"processes", jp}, {"mode", corr ? (turns ? "turns" : "concurrent") : "unknown"},
                 {"correlation", corr ? nlohmann::json(*corr) : nlohmann::json(nullptr)}};
  return out;
}

std::optional<Finding> memory_growth(int g, const telemetry::GpuTrace& gt, const gpu::DeviceInfo* dev, double t0, double t1) {
  const telemetry::Series& m = gt.metric(Metric::kMemoryUsedBytes);
  std::vector<double> t, v;
  for (std::size_t i = 0; i < m.t.size(); ++i)
    if (m.t[i] >= t0 && m.t[i] <= t1 && std::isfinite(m.v[i])) {
      t.push_back(m.t[i]);
      v.push_back(m.v[i]);
    }
  if (t.size() < 3) return std::nullopt;
  // Sorted copy for rises and falls (the reader sorts; synthetic input may not).
  std::vector<std::size_t> idx(t.size());
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return t[a] < t[b]; });
  double up = 0, down = 0;
  for (std::size_t k = 1; k < idx.size(); ++k) {
    const double d = v[idx[k]] - v[idx[k - 1]];
    (d > 0 ? up : down) += std::abs(d);
  }
  const Fit fit = linear_fit(t, v);
  const double net = v[idx.back()] - v[idx.front()];
  if (net < th::kGrowthMinBytes || fit.slope < th::kGrowthMinRateBytesPerS || down > th::kGrowthMaxReleaseRatio * up ||
      fit.r2 < th::kGrowthMinR2)
    return std::nullopt;
  const double current = v[idx.back()];
  std::optional<double> eta;
  if (dev && dev->memory_total_bytes) eta = std::max(0.0, (static_cast<double>(*dev->memory_total_bytes) - current) / fit.slope);
  Finding out = findings::make_finding("memory_growth", eta && *eta < th::kCriticalExhaustionS ? Severity::kCritical : Severity::kWarning);
  out.gpus = {g};
  out.window = {t[idx.front()], t[idx.back()]};
  out.confidence = th::kBaseConfidence * span_confidence(t1 - t0) * std::min(1.0, fit.r2 + 0.05);
  out.message = fmt::format("GPU {} memory climbs {:.1f} MiB/s without release ({:.2f} GiB -> {:.2f} GiB){}", g,
                            fit.slope / (1024 * 1024), v[idx.front()] / kGiB, current / kGiB,
                            eta ? fmt::format("; at this rate it is full in {:.0f} s", *eta) : std::string(": memory total unknown"));
  add(out, "growth_rate_bytes_per_second", fit.slope, "By/s", "least-squares slope of memory_used_bytes");
  add(out, "net_growth_bytes", net, "By", "last - first memory_used_bytes in the span");
  add(out, "released_bytes", down, "By", "sum of the falls");
  add(out, "fit_r2", fit.r2, "1", "how well a straight line fits the climb");
  if (eta) add(out, "time_to_exhaustion_s", *eta, "s", "(memory total from the header - current) / rate");
  else out.caveats.push_back("memory total unknown: no time to exhaustion");
  out.details = {{"rate_bytes_per_second", fit.slope}, {"time_to_exhaustion_s", eta ? nlohmann::json(*eta) : nlohmann::json(nullptr)},
                 {"memory_used_bytes", current},
                 {"memory_total_bytes", dev && dev->memory_total_bytes ? nlohmann::json(*dev->memory_total_bytes) : nlohmann::json(nullptr)}};
  return out;
}

std::optional<Finding> throttled(int g, const telemetry::GpuTrace& gt, const gpu::DeviceInfo* dev, double t0, double t1) {
  const telemetry::Series& m = gt.metric(Metric::kClockEventReasonsMask);
  std::size_t n = 0, slow = 0, serious = 0;
  std::uint64_t seen = 0;
  constexpr std::uint64_t kSwPowerCap = 0x4;
  for (std::size_t i = 0; i < m.t.size(); ++i) {
    if (m.t[i] < t0 || m.t[i] > t1 || !std::isfinite(m.v[i]) || m.v[i] < 0) continue;
    const auto mask = static_cast<std::uint64_t>(m.v[i]);
    ++n;
    if (gpu::is_slowdown(mask)) {
      ++slow;
      seen |= mask;
      if (gpu::is_slowdown(mask & ~kSwPowerCap)) ++serious;
    }
  }
  if (n < th::kMinSignalCells / 2) return std::nullopt;
  const double share = share_of(static_cast<double>(slow), static_cast<double>(n));
  if (share < th::kThrottleMinShare) return std::nullopt;
  const double serious_share = share_of(static_cast<double>(serious), static_cast<double>(n));
  // A lowered power limit makes the power cap a fault, not the expected ceiling.
  const Levels lim = levels(gt.metric(Metric::kPowerLimitWatts).v);
  bool lowered = false;
  if (dev && dev->power_limit_default_watts && lim.n > 0)
    lowered = lim.p50 < th::kLoweredPowerLimitRatio * *dev->power_limit_default_watts;
  Severity sev = Severity::kInfo;
  if (serious_share >= th::kThrottleMinShare || lowered) sev = Severity::kWarning;
  if (serious_share >= th::kCriticalThrottleShare) sev = Severity::kCritical;
  Finding out = findings::make_finding("throttled", sev);
  out.gpus = {g};
  out.window = {t0, t1};
  out.confidence = th::kBaseConfidence;
  const std::uint64_t reasons = seen & ~std::uint64_t{0x1};
  const Levels clk = levels(gt.metric(Metric::kSmClockMhz).v);
  const double clk_max = dev && dev->sm_clock_max_mhz ? *dev->sm_clock_max_mhz : 0.0;
  std::string why = serious_share >= th::kThrottleMinShare ? "thermal or hardware slowdown: check cooling and power delivery"
                    : lowered ? "the power limit was lowered below its default"
                              : "the board is at its power limit: expected under heavy load";
  out.message = fmt::format("GPU {} clocks held down {} of the time by {}{}; {}", g, pct(share * 100),
                            gpu::clock_event_reason_names(reasons),
                            clk.n > 0 && clk_max > 0 ? fmt::format(" (SM clock median {:.0f} of {:.0f} MHz)", clk.p50, clk_max) : std::string(),
                            why);
  add(out, "throttled_share", share, "1", "share of clock_event_reasons_mask samples with a slowdown reason");
  add(out, "thermal_or_hw_share", serious_share, "1", "share with a reason other than the software power cap");
  if (clk.n > 0) add(out, "sm_clock_median_mhz", clk.p50, "MHz", "median SM clock over the span");
  if (clk_max > 0) add(out, "sm_clock_max_mhz", clk_max, "MHz", "from the header");
  nlohmann::json names = nlohmann::json::array();
  for (const auto& r : gpu::clock_event_reasons())
    if ((reasons & r.bit) && r.is_slowdown) names.push_back(std::string(r.name));
  out.details = {{"reasons", names}, {"share", share}, {"thermal_or_hw_share", serious_share}, {"power_limit_lowered", lowered}};
  return out;
}

// ---- span of analysis ----------------------------------------------------------------------

struct Span {
  double t0 = 0, t1 = 0, first = 0;
  std::string how;
};

Span analysed_span(const telemetry::Trace& trace, const Options& opt) {
  double first = INFINITY, last = -INFINITY;
  for (const auto& g : trace.gpus)
    for (const auto& s : g.metrics)
      for (double t : s.t)
        if (std::isfinite(t)) {
          first = std::min(first, t);
          last = std::max(last, t);
        }
  Span sp;
  if (!std::isfinite(first)) return sp;
  sp.first = first;
  sp.t0 = first;
  sp.t1 = last;
  // Tail: stop before the recorded command's exit (teardown frees memory, drops util).
  for (const auto& e : trace.events)
    if (e.kind == "process_exit" && std::isfinite(e.t) && e.t - th::kTailS > sp.t0) sp.t1 = std::min(sp.t1, e.t - th::kTailS);

  if (opt.skip_start_s >= 0) {
    sp.t0 = first + opt.skip_start_s;
    sp.how = fmt::format("skipped the first {:.1f} s as asked", opt.skip_start_s);
    return sp;
  }
  // Start-up: the first sign of work on any GPU (util/SM up, or memory allocated).
  double onset = INFINITY;
  for (const auto& g : trace.gpus) {
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
      if (std::isnan(base)) base = mem.v[i];
      else if (mem.v[i] - base >= th::kStartupMemoryRiseBytes) {
        onset = std::min(onset, mem.t[i]);
        break;
      }
    }
  }
  if (!std::isfinite(onset) || onset - first <= th::kAttachedStartS) {
    sp.how = std::isfinite(onset) ? "work from the first sample: nothing skipped" : "no start of work seen: nothing skipped";
    return sp;
  }
  sp.t0 = std::min(onset + th::kWarmupS, sp.t1);
  sp.how = fmt::format("skipped {:.1f} s of start-up (idle until t = {:.1f} s, then {:.1f} s of warm-up)", sp.t0 - first,
                       onset, th::kWarmupS);
  return sp;
}

std::string input_format_of(const telemetry::Trace& t) {
  if (t.header.system.backend == "nvidia-smi-csv") return "nvidia-smi-csv";
  return "gpudoc-trace";
}

}  // namespace

Diagnosis diagnose(const telemetry::Trace& trace, const Options& options) {
  Diagnosis d;
  d.input_format = input_format_of(trace);
  d.duration_s = trace.duration_s;
  const Span sp = analysed_span(trace, options);
  const std::size_t ngpu = trace.gpus.size();

  // What the input lacks, once for the whole trace.
  auto any_gpu_has = [&](Metric m) {
    for (const auto& g : trace.gpus)
      if (!g.metric(m).empty()) return true;
    return false;
  };
  bool any_proc = false;
  for (const auto& g : trace.gpus) any_proc = any_proc || !g.processes.empty();
  if (!any_gpu_has(Metric::kGpuUtilizationPercent)) d.unseen.emplace_back("GPU utilization");
  if (!any_gpu_has(Metric::kGpmSmActivityPercent)) d.unseen.emplace_back("GPM SM activity");
  if (!any_gpu_has(Metric::kGpmTensorActivityPercent)) d.unseen.emplace_back("GPM tensor activity");
  if (!any_gpu_has(Metric::kGpmDramActivityPercent)) d.unseen.emplace_back("GPM DRAM activity");
  if (!any_gpu_has(Metric::kGpmNvlinkTxBytesPerSecond)) d.unseen.emplace_back("GPM NVLink traffic");
  if (!any_gpu_has(Metric::kPowerWatts)) d.unseen.emplace_back("power");
  if (!any_gpu_has(Metric::kMemoryUsedBytes)) d.unseen.emplace_back("memory used");
  if (!any_gpu_has(Metric::kClockEventReasonsMask)) d.unseen.emplace_back("clock-event (throttle) reasons");
  if (!any_proc) d.unseen.emplace_back("per-process utilization");

  if (ngpu == 0) {
    d.findings.push_back(insufficient_finding(-1, 0, trace.duration_s, "the input holds no GPU"));
    return d;
  }
  const double span = sp.t1 - sp.t0;
  if (!(span >= th::kMinSpanS)) {
    for (std::size_t g = 0; g < ngpu; ++g) {
      GpuSummary s;
      s.gpu = static_cast<int>(g);
      s.name = g < trace.header.gpus.size() ? trace.header.gpus[g].name : "";
      s.primary = "insufficient_data";
      d.gpus.push_back(s);
    }
    d.findings.push_back(insufficient_finding(
        -1, sp.t0, sp.t1, fmt::format("{:.1f} s of usable telemetry after start-up; at least {:.0f} s are needed", std::max(0.0, span), th::kMinSpanS)));
    return d;
  }

  std::vector<Signals> sig;
  sig.reserve(ngpu);
  for (const auto& g : trace.gpus) sig.push_back(make_signals(g, sp.t0, sp.t1));
  const std::size_t ncells = sig[0].util.v.size();

  // Windows: equal parts of about window_s each.
  const double wlen = options.window_s > 0 ? options.window_s : span;
  const auto nwin = static_cast<std::size_t>(std::max(1.0, std::round(span / wlen)));
  std::vector<std::size_t> bounds(nwin + 1);
  for (std::size_t w = 0; w <= nwin; ++w) bounds[w] = ncells * w / nwin;

  std::vector<std::vector<Label>> labels(ngpu, std::vector<Label>(nwin));
  std::vector<std::vector<bool>> in_pulse(ngpu, std::vector<bool>(nwin, false));
  for (std::size_t w = 0; w < nwin; ++w) {
    std::vector<Features> fs;
    std::vector<Label> ls;
    for (std::size_t g = 0; g < ngpu; ++g) {
      fs.push_back(features(sig[g], bounds[w], bounds[w + 1]));
      ls.push_back(classify(fs.back(), sig[g]));
      labels[g][w] = ls.back();
    }
    const PulseRoles r = pulse_roles(fs, ls);
    if (r.found()) {
      for (int i : r.waiting) in_pulse[static_cast<std::size_t>(i)][w] = true;
      for (int j : r.stragglers) in_pulse[static_cast<std::size_t>(j)][w] = true;
    }
  }

  auto id_at = [&](std::size_t g, std::size_t w) -> std::string {
    return in_pulse[g][w] ? "pulse" : id_of(labels[g][w]);
  };

  // Pulse: runs of windows in which any GPU is part of a pulse; roles recomputed on the run.
  {
    std::size_t w = 0;
    while (w < nwin) {
      bool any = false;
      for (std::size_t g = 0; g < ngpu; ++g) any = any || in_pulse[g][w];
      if (!any) { ++w; continue; }
      std::size_t e = w;
      while (e < nwin) {
        bool a2 = false;
        for (std::size_t g = 0; g < ngpu; ++g) a2 = a2 || in_pulse[g][e];
        if (!a2) break;
        ++e;
      }
      std::vector<Features> fs;
      std::vector<Label> ls;
      for (std::size_t g = 0; g < ngpu; ++g) {
        fs.push_back(features(sig[g], bounds[w], bounds[e]));
        ls.push_back(classify(fs.back(), sig[g]));
      }
      PulseRoles r = pulse_roles(fs, ls);
      if (!r.found()) {  // the run as a whole blurs the roles: take them from its first window
        std::vector<Features> f1;
        std::vector<Label> l1;
        for (std::size_t g = 0; g < ngpu; ++g) {
          f1.push_back(features(sig[g], bounds[w], bounds[w + 1]));
          l1.push_back(classify(f1.back(), sig[g]));
        }
        r = pulse_roles(f1, l1);
      }
      if (r.found()) d.findings.push_back(pulse_finding(r, fs));
      w = e;
    }
  }

  // Per-GPU runs of the same id: one finding per run, numbers from the whole run.
  for (std::size_t g = 0; g < ngpu; ++g) {
    const telemetry::GpuTrace& gt = trace.gpus[g];
    const gpu::DeviceInfo* dev = g < trace.header.gpus.size() ? &trace.header.gpus[g] : nullptr;
    GpuSummary sum;
    sum.gpu = static_cast<int>(g);
    sum.name = dev ? dev->name : "";
    sum.analysed_from_s = sp.t0;
    sum.analysed_to_s = sp.t1;
    const Features whole = features(sig[g], 0, ncells, false);
    if (whole.util.n > 0) sum.mean_utilization_percent = whole.util.mean;
    if (whole.sm.n > 0) sum.mean_sm_activity_percent = whole.sm.mean;
    if (whole.tensor.n > 0) sum.mean_tensor_activity_percent = whole.tensor.mean;
    if (whole.dram.n > 0) sum.mean_dram_activity_percent = whole.dram.mean;
    if (whole.mutil.n > 0) sum.mean_memory_utilization_percent = whole.mutil.mean;
    if (whole.power.n > 0) sum.mean_power_watts = whole.power.mean;
    const Levels mem = levels(gt.metric(Metric::kMemoryUsedBytes).v);
    if (mem.n > 0) sum.peak_memory_used_bytes = mem.max;

    const std::optional<Finding> stair = staircase(static_cast<int>(g), gt, sp.t0, sp.t1);
    std::map<std::string, double> time_in;
    std::size_t w = 0;
    while (w < nwin) {
      const std::string id = id_at(g, w);
      std::size_t e = w + 1;
      while (e < nwin && id_at(g, e) == id) ++e;
      time_in[id] += sig[g].util.time_at(bounds[e]) - sig[g].util.time_at(bounds[w]);
      if (w > 0) d.changes.push_back({static_cast<int>(g), sig[g].util.time_at(bounds[w]), id_at(g, w - 1), id});
      if (id != "pulse") {
        const Features f = features(sig[g], bounds[w], bounds[e]);
        Label l = classify(f, sig[g]);
        if (std::string(id_of(l)) != id) l = labels[g][w];  // keep the run's label
        switch (l) {
          case Label::kInsufficient:
            d.findings.push_back(insufficient_finding(static_cast<int>(g), f.t0, f.t1,
                                                      "too few utilization or GPM samples in this span"));
            break;
          case Label::kIdle: d.findings.push_back(simple_finding("idle", static_cast<int>(g), f)); break;
          case Label::kHealthy:
            // Two processes filling the GPU between them is contention, not health.
            if (!stair) d.findings.push_back(simple_finding("healthy", static_cast<int>(g), f));
            break;
          case Label::kSawtooth:
          case Label::kSawtoothFast:
            d.findings.push_back(sawtooth_finding(static_cast<int>(g), f, l == Label::kSawtoothFast, sig[g]));
            break;
          case Label::kPlateauLaunch:
          case Label::kPlateauBusyIdle: d.findings.push_back(plateau_finding(static_cast<int>(g), f, l, sig[g])); break;
          case Label::kMemoryBound: d.findings.push_back(memory_bound_finding(static_cast<int>(g), f)); break;
        }
      }
      w = e;
    }
    if (stair) {
      d.findings.push_back(*stair);
      time_in["staircase"] = sp.t1 - sp.t0 + 1e-9;  // contention explains the GPU's whole span
    }
    if (auto mg = memory_growth(static_cast<int>(g), gt, dev, sp.t0, sp.t1)) d.findings.push_back(*mg);
    if (auto th = throttled(static_cast<int>(g), gt, dev, sp.t0, sp.t1)) d.findings.push_back(*th);

    // Primary: the id that covers most of the span; a problem beats idle/healthy on a tie.
    std::string best;
    double best_t = -1;
    for (const auto& [id, t] : time_in)
      if (t > best_t) {
        best = id;
        best_t = t;
      }
    sum.primary = best;
    d.gpus.push_back(sum);
  }

  // Caveats shared by every finding of this input.
  for (Finding& f : d.findings) {
    if (d.input_format == "nvidia-smi-csv")
      f.caveats.push_back("nvidia-smi CSV: no GPM, no per-process data; utilization is the driver's value at each row");
  }
  std::stable_sort(d.findings.begin(), d.findings.end(),
                   [](const Finding& a, const Finding& b) { return a.severity > b.severity; });
  if (!sp.how.empty()) d.notes.push_back(sp.how);
  if (nwin > 1) d.notes.push_back(fmt::format("analysed in {} windows of {:.0f} s", nwin, span / static_cast<double>(nwin)));
  return d;
}

nlohmann::json to_json(const Diagnosis& d) {
  nlohmann::json j;
  j["source"] = d.source;
  j["input_format"] = d.input_format;
  j["duration_s"] = d.duration_s;
  nlohmann::json gs = nlohmann::json::array();
  auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  for (const GpuSummary& g : d.gpus)
    gs.push_back({{"gpu", g.gpu},
                  {"name", g.name},
                  {"analysed_from_s", g.analysed_from_s},
                  {"analysed_to_s", g.analysed_to_s},
                  {"mean_utilization_percent", opt(g.mean_utilization_percent)},
                  {"mean_sm_activity_percent", opt(g.mean_sm_activity_percent)},
                  {"mean_tensor_activity_percent", opt(g.mean_tensor_activity_percent)},
                  {"mean_dram_activity_percent", opt(g.mean_dram_activity_percent)},
                  {"mean_memory_utilization_percent", opt(g.mean_memory_utilization_percent)},
                  {"mean_power_watts", opt(g.mean_power_watts)},
                  {"peak_memory_used_bytes", opt(g.peak_memory_used_bytes)},
                  {"primary", g.primary}});
  j["gpus"] = std::move(gs);
  nlohmann::json fs = nlohmann::json::array();
  for (const Finding& f : d.findings) fs.push_back(findings::to_json(f));
  j["findings"] = std::move(fs);
  nlohmann::json cs = nlohmann::json::array();
  for (const PatternChange& c : d.changes) cs.push_back({{"gpu", c.gpu}, {"t_s", c.t_s}, {"from", c.from}, {"to", c.to}});
  j["changes"] = std::move(cs);
  j["unseen"] = d.unseen;
  j["notes"] = d.notes;
  return j;
}

std::optional<findings::Severity> max_severity(const Diagnosis& d) {
  std::optional<Severity> m;
  for (const Finding& f : d.findings)
    if (!m || f.severity > *m) m = f.severity;
  return m;
}

}  // namespace gpudoc::diagnose
