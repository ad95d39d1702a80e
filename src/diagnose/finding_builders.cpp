// Building findings: each pattern's Finding from the catalog entry (findings::make_finding), with
// its message, evidence (the numbers behind it and how each was computed), confidence, caveats
// and details. The numbers come from features (signals.hpp); the decision from classify.hpp.
#include "diagnose/finding_builders.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>

#include <fmt/format.h>

#include "core/numeric.hpp"

namespace gpudoc::diagnose::detail {
namespace {

using findings::Evidence;
using findings::Finding;
using findings::Severity;
using gpu::Metric;

constexpr double kGiB = 1024.0 * 1024 * 1024;

std::string pct(double x) { return fmt::format("{:.0f} %", x); }

void add(Finding& f, std::string name, double value, std::string unit, std::string how) {
  f.evidence.push_back(Evidence{std::move(name), value, std::move(unit), std::move(how)});
}

double span_confidence(double span_s) { return span_s < th::kShortSpanS ? th::kShortSpanFactor : 1.0; }

std::string gpu_list(const std::vector<int>& g) {
  std::string s;
  for (std::size_t i = 0; i < g.size(); ++i) s += (i ? ", " : "") + std::to_string(g[i]);
  return s;
}

// The cells where both grids (same t0, dt and length) have data, in cell order: what a
// correlation over their dense cells would pair.
void paired_cells(const StepGrid& x, const StepGrid& y, std::vector<double>& a, std::vector<double>& b) {
  std::size_t i = 0, j = 0;
  while (i < x.steps.size() && j < y.steps.size()) {
    const auto& p = x.steps[i];
    const auto& q = y.steps[j];
    const std::size_t p1 = std::size_t{p.first} + p.count, q1 = std::size_t{q.first} + q.count;
    const std::size_t from = std::max<std::size_t>(p.first, q.first), to = std::min(p1, q1);
    for (std::size_t c = from; c < to; ++c) {
      a.push_back(p.v);
      b.push_back(q.v);
    }
    (p1 <= q1 ? i : j) += 1;
  }
}

}  // namespace

Severity severity_for_lost(double lost_share) {
  if (lost_share >= th::kCriticalLostShare) return Severity::kCritical;
  if (lost_share >= th::kWarningLostShare) return Severity::kWarning;
  return Severity::kInfo;
}

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
    // The share of time the curve stands in its upper half: the bursts' share of the period.
    duty = std::clamp(f.above_mid_share, 0.0, 1.0);
  }
  // Bursts that do not fill the GPU lose time inside them too: the mean level is what was used.
  const bool unfilled = !fast && peak < th::kSaturatedPercent;
  const double used = unfilled ? std::clamp(busy_level(f) / 100.0, 0.0, duty) : duty;
  const double lost_s = span * (1 - used);
  const double lost_share = 1 - used;
  Finding out = findings::make_finding("sawtooth", severity_for_lost(lost_share));
  out.gpus = {g};
  out.window = {f.t0, f.t1};
  double conf = th::kBaseConfidence * span_confidence(span);
  if (fast) {
    const bool gpm = has_gpm(f);
    if (!gpm) conf *= th::kGuessFactor;
    out.message = fmt::format(
        "GPU {} alternates between work and idle faster than the {:.0f} ms utilization sensor resolves: "
        "utilization holds a middle level ({}) while {}; busy about {} of the time: {:.1f} s of GPU time lost "
        "({} of {:.1f} s)",
        g, std::max(s.util_period_s, th::kUtilSensorPeriodS) * 1000, pct(busy_level(f)),
        gpm ? fmt::format("GPM SM activity ({}) shows the bursts use the chip", pct(f.sm.mean))
            : (f.power.n > 0 ? fmt::format("power ({:.0f} W, {:.1f}x the idle floor) shows real work", f.power.mean,
                                           share_of(f.power.mean, s.power_floor_w))
                             : std::string("no GPM or power reading can confirm it")),
        pct(duty * 100), lost_s, pct(lost_share * 100), span);
    out.caveats.push_back(
        "below sensor resolution: period and duty cycle cannot be read from the curve; a profiler shows each gap");
    out.next_steps.insert(out.next_steps.begin(),
                          "The gaps are shorter than the sensor sees: profile each gap and its cause (data "
                          "loading, a sync, launches, pageable copies) with `gpudoc profile -- python3 train.py` "
                          "(or `nsys profile -t cuda,nvtx,osrt -o gaps python3 train.py`)");
  } else {
    out.message = fmt::format(
        "GPU {} works in bursts: period {:.2f} s, duty cycle {}, peak {} and trough {} {}: {:.1f} s of GPU time "
        "lost ({} of {:.1f} s)",
        g, f.period_s, pct(duty * 100), pct(peak), pct(trough), f.use_util ? "utilization" : "SM activity", lost_s,
        pct(lost_share * 100), span);
    if (below_resolution)
      out.caveats.push_back("period near the sensor's resolution: confirm with a profiler (gpudoc profile)");
    if (unfilled) {
      out.message += fmt::format(
          "; the bursts themselves reach only {} {}: inside a burst the GPU is not filled either (small "
          "batches, or launches and syncs between kernels)",
          pct(peak), f.use_util ? "utilization" : "SM activity");
      out.next_steps.insert(
          out.next_steps.begin(),
          "The bursts do not fill the GPU: batch more work per burst (larger or dynamic batches for a "
          "service), then see inside one burst with `gpudoc profile -- CMD`");
    }
  }
  out.confidence = conf;
  if (!fast) {
    add(out, "period_s", f.period_s, "s",
        fmt::format("autocorrelation peak ({:.2f} s) and mid-level crossings of {}", f.acf_period_s, sig));
  }
  add(out, "duty_cycle_percent", duty * 100, "percent",
      fast ? "mean utilization (busy share of each 200 ms sample)"
           : fmt::format("share of the span with {} at or above (peak + trough) / 2", sig));
  add(out, "peak_percent", peak, "percent",
      fast ? "assumed full-chip bursts" : fmt::format("95th percentile of {}", sig));
  add(out, "trough_percent", trough, "percent", fast ? "assumed idle gaps" : fmt::format("5th percentile of {}", sig));
  add(out, "gpu_time_lost_s", lost_s, "s",
      unfilled ? "analysed span x (1 - mean utilization): the bursts do not fill the GPU"
               : "analysed span x (1 - duty cycle)");
  add(out, "gpu_time_lost_share", lost_share, "1", unfilled ? "1 - mean utilization" : "1 - duty cycle");
  add(out, "mean_utilization_percent", busy_level(f), "percent", "mean over the span");
  if (has_gpm(f)) add(out, "mean_sm_activity_percent", f.sm.mean, "percent", "GPM SM activity, mean over the span");
  out.details = {{"below_sensor_resolution", below_resolution},
                 {"bursts_saturate", !fast && !unfilled},
                 {"period_s", fast ? nlohmann::json(nullptr) : nlohmann::json(f.period_s)},
                 {"duty_cycle", duty},
                 {"peak_percent", peak},
                 {"trough_percent", trough},
                 {"gpu_time_lost_s", lost_s},
                 {"gpu_time_lost_share", lost_share},
                 {"sensor_period_s", s.util_period_s}};
  return out;
}

Finding copies_finding(int g, const Features& f, const Signals& s) {
  Finding out = sawtooth_finding(g, f, true, s);
  const double busy = busy_level(f);
  out.message = fmt::format(
      "GPU {} waits on copies between host and GPU: PCIe carries {:.1f} GB/s while the GPU is busy {} of the time "
      "and its SMs {}: {:.0f} GB/s per unit of busy time, where a loop that only computes moves under 8; {:.1f} s of "
      "GPU time lost ({} of {:.1f} s)",
      g, f.pcie_bytes_per_s / 1e9, pct(busy), pct(f.sm.mean), f.pcie_bytes_per_s / 1e9 / std::max(busy / 100, 1e-9),
      out.details["gpu_time_lost_s"].get<double>(), pct(out.details["gpu_time_lost_share"].get<double>() * 100),
      f.t1 - f.t0);
  out.caveats.clear();
  out.caveats.push_back(
      "what waits on the copies (pageable memory, an optimizer on the CPU, .cpu() each step) is not in the telemetry: "
      "gpudoc profile shows each copy and the host work between them");
  out.next_steps.insert(out.next_steps.begin(),
                        "Copy less and asynchronously: pinned memory (pin_memory=True, tensor.pin_memory()) with "
                        ".to('cuda', non_blocking=True) moves several times faster than pageable memory and frees "
                        "the host; keep weights, optimizer state and metrics on the GPU (a fused GPU optimizer "
                        "instead of one on the CPU; no .cpu() or .item() each step); see each copy with "
                        "`gpudoc profile -- python3 train.py`");
  add(out, "pcie_bytes_per_second", f.pcie_bytes_per_s, "By/s", "GPM PCIe rx + tx, mean over the span");
  out.details["cause"] = "copies";
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
    const bool tiny = gpm && sm < th::kTinyKernelSmRatio * busy_level(f);
    out.message = tiny ? fmt::format(
                             "GPU {} is launch-bound: utilization flat at {} while SM activity is {}: tiny kernels "
                             "issued one by one keep it 'busy' without using the chip",
                             g, pct(busy_level(f)), pct(sm))
                  : gpm
                      ? fmt::format(
                            "GPU {} waits on its host, launching small kernels one by one or working between them: "
                            "utilization flat at {}, SM activity {}, PCIe {:.2f} GB/s (no copies to speak of); the "
                            "telemetry cannot tell launch gaps from host work: `gpudoc profile -- CMD` tells them "
                            "apart and whether a CUDA Graph pays",
                            g, pct(busy_level(f)), pct(sm), f.pcie_bytes_per_s / 1e9)
                      : fmt::format(
                            "GPU {} waits on its host, launching tiny kernels one by one or working between them: "
                            "utilization flat at {} while power stays near idle ({:.0f} W, floor {:.0f} W); without "
                            "GPM (SM activity, PCIe traffic) this input cannot tell launches from host work or copies: "
                            "`gpudoc profile -- CMD` tells them apart",
                            g, pct(busy_level(f)), f.power.mean, s.power_floor_w);
    // Launch-bound: lead with the CUDA Graph step, drop the busy-but-idle one.
    if (out.next_steps.size() > 1) out.next_steps.erase(out.next_steps.begin() + 1);
  } else if (gpm) {
    out.message = fmt::format(
        "GPU {} is busy but idle: utilization {} while SM activity is {}, tensor {} and DRAM {}: "
        "kernels hold the GPU without using its SMs",
        g, pct(busy_level(f)), pct(sm), pct(f.tensor.mean), pct(f.dram.mean));
    if (!out.next_steps.empty()) out.next_steps.erase(out.next_steps.begin());
  } else {
    out.message = fmt::format(
        "GPU {} is busy but idle: utilization {} while the board draws {:.0f} W, {}: kernels hold the GPU "
        "without working (a wait spinning on the GPU: a collective waiting for a peer, a busy-wait kernel)",
        g, pct(busy_level(f)), f.power.mean,
        s.power_limit_w > 0
            ? fmt::format("{} of its {:.0f} W limit", pct(100 * f.power.mean / s.power_limit_w), s.power_limit_w)
            : fmt::format("{:.1f}x its idle floor of {:.0f} W (real work draws 4x or more)",
                          share_of(f.power.mean, s.power_floor_w), s.power_floor_w));
    if (!out.next_steps.empty()) out.next_steps.erase(out.next_steps.begin());
  }
  if (!gpm) out.caveats.push_back("no GPM in this input: decided from utilization and power only");
  if (!gpm && s.power_limit_w <= 0)
    out.caveats.push_back(
        "no power limit in this input (log power.limit,name with nvidia-smi): power compared with "
        "the idle floor instead");
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
  // Without GPM a flat low level near idle power may be launches or host work: both named.
  if (launch && !(gpm && sm < th::kTinyKernelSmRatio * busy_level(f)))
    out.details["undecided_between"] = {"plateau", "sawtooth"};
  return out;
}

Finding memory_bound_finding(int g, const Features& f) {
  const bool gpm = has_gpm(f) && f.dram.n > 0;
  Finding out = findings::make_finding("memory_bound", Severity::kWarning);
  out.gpus = {g};
  out.window = {f.t0, f.t1};
  out.confidence = th::kBaseConfidence * span_confidence(f.t1 - f.t0) * (gpm ? 1.0 : th::kNoGpmFactor);
  out.message =
      gpm ? fmt::format("GPU {} is at the memory-bandwidth roof: utilization {}, DRAM activity {}, tensor activity {}",
                        g, pct(busy_level(f)), pct(f.dram.mean), pct(f.tensor.mean))
          : fmt::format("GPU {} looks memory-bound: utilization {}, memory utilization {}", g, pct(busy_level(f)),
                        pct(f.mutil.mean));
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
    out.message = fmt::format(
        "GPU {} is saturated: utilization {}{}", g, pct(busy_level(f)),
        gpm ? fmt::format(", SM activity {}, tensor activity {}", pct(f.sm.mean), pct(f.tensor.mean)) : std::string());
  }
  add(out, "mean_utilization_percent", busy_level(f), "percent", "mean over the span");
  if (gpm) {
    add(out, "mean_sm_activity_percent", f.sm.mean, "percent", "GPM SM activity");
    if (f.tensor.n > 0) add(out, "mean_tensor_activity_percent", f.tensor.mean, "percent", "GPM tensor activity");
  }
  return out;
}

Finding busy_unproven_finding(int g, const Features& f) {
  Finding out = insufficient_finding(
      g, f.t0, f.t1,
      fmt::format("busy (utilization {}), but this input cannot show whether the chip works or waits: utilization "
                  "counts a kernel that spins in a wait as busy, and there is no GPM, no power limit and no idle "
                  "power reading to compare the board's power with",
                  pct(busy_level(f))));
  out.caveats.push_back("not called healthy: saturation is not shown");
  out.next_steps.insert(out.next_steps.begin(),
                        "Log the board's limit and model with the rest: nvidia-smi --query-gpu=timestamp,index,name,"
                        "utilization.gpu,power.draw,power.limit,... (docs/trace-format.md), or record with "
                        "`gpudoc record` (GPM SM activity shows the chip's work directly)");
  add(out, "mean_utilization_percent", busy_level(f), "percent", "mean over the span");
  if (f.power.n > 0) add(out, "mean_power_watts", f.power.mean, "W", "board power");
  return out;
}

Finding mostly_busy_finding(int g, const Features& f, const Signals& s) {
  const double u = busy_level(f), span = f.t1 - f.t0;
  const double lost_share = std::clamp(1 - u / 100, 0.0, 1.0);
  Finding out = findings::make_finding("sawtooth", severity_for_lost(lost_share));
  out.gpus = {g};
  out.window = {f.t0, f.t1};
  out.confidence = th::kBaseConfidence * span_confidence(span) * th::kGuessFactor;
  const bool gpm = has_gpm(f);
  out.message = fmt::format(
      "GPU {} is busy {} of the time with the chip at work ({}): the other {} ({:.1f} s of {:.1f} s) may be gaps "
      "shorter than the {:.0f} ms sensor (launches, a sync each step, host work) or work the utilization counts "
      "short; the telemetry cannot tell which",
      g, pct(u),
      gpm ? fmt::format("GPM SM activity {}", pct(f.sm.mean))
          : fmt::format("{:.0f} W, {:.1f}x the idle floor", f.power.mean, share_of(f.power.mean, s.power_floor_w)),
      pct(lost_share * 100), span * lost_share, span, std::max(s.util_period_s, th::kUtilSensorPeriodS) * 1000);
  out.caveats.push_back("not called healthy: a GPU busy this share of the time may still lose the rest in gaps");
  out.next_steps.insert(out.next_steps.begin(),
                        "Measure the gaps: `gpudoc profile -- CMD` says whether the GPU waits between kernels "
                        "(launches, syncs, host work) and what each step would gain");
  add(out, "mean_utilization_percent", u, "percent", "mean over the span");
  if (gpm) add(out, "mean_sm_activity_percent", f.sm.mean, "percent", "GPM SM activity, mean over the span");
  add(out, "gpu_time_lost_s", span * lost_share, "s", "at most: analysed span x (1 - mean utilization)");
  add(out, "gpu_time_lost_share", lost_share, "1", "at most: 1 - mean utilization");
  out.details = {{"below_sensor_resolution", true},
                 {"period_s", nullptr},
                 {"duty_cycle", 1 - lost_share},
                 {"gpu_time_lost_s", span * lost_share},
                 {"gpu_time_lost_share", lost_share},
                 {"sensor_period_s", s.util_period_s},
                 {"undecided_between", {"healthy", "sawtooth"}}};
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

Finding pulse_finding(const PulseRoles& r, const std::vector<Activity>& fs) {
  bool gpm = true;
  for (int j : r.stragglers)
    if (!has_gpm(fs[static_cast<std::size_t>(j)])) gpm = false;
  double worst = 0;
  nlohmann::json waiting = nlohmann::json::array();
  for (std::size_t k = 0; k < r.waiting.size(); ++k) {
    const int i = r.waiting[k];
    const Activity& f = fs[static_cast<std::size_t>(i)];
    if (!has_gpm(f)) gpm = false;
    const double share = k < r.waiting_share.size() ? r.waiting_share[k] : 0.0;
    worst = std::max(worst, share);
    waiting.push_back({{"gpu", i},
                       {"waiting_share", share},
                       {"waiting_s", share * (f.t1 - f.t0)},
                       {"utilization_percent", busy_level(f)},
                       {"sm_activity_percent", has_gpm(f) ? nlohmann::json(f.sm_mean) : nlohmann::json(nullptr)},
                       {"power_watts", f.power_n > 0 ? nlohmann::json(f.power_mean) : nlohmann::json(nullptr)}});
  }
  nlohmann::json strag = nlohmann::json::array();
  std::string strag_kind = "compute";
  for (int j : r.stragglers) {
    const Activity& f = fs[static_cast<std::size_t>(j)];
    const bool host = busy_level(f) < th::kBusyUtilPercent;
    if (host) strag_kind = "host";
    strag.push_back({{"gpu", j},
                     {"utilization_percent", busy_level(f)},
                     {"sm_activity_percent", has_gpm(f) ? nlohmann::json(f.sm_mean) : nlohmann::json(nullptr)},
                     {"kind", host ? "host" : "compute"}});
  }
  Finding out = findings::make_finding("pulse", severity_for_lost(worst));
  std::vector<int> all = r.waiting;
  all.insert(all.end(), r.stragglers.begin(), r.stragglers.end());
  std::sort(all.begin(), all.end());
  out.gpus = all;
  const Activity& w0 = fs[static_cast<std::size_t>(r.waiting.front())];
  out.window = {w0.t0, w0.t1};
  out.confidence = th::kBaseConfidence * span_confidence(w0.t1 - w0.t0) * (gpm ? 1.0 : th::kGuessFactor);
  out.message = fmt::format(
      "GPU {} wait{} for straggler GPU {} ({}): busy {} but {}; {} of the time ({:.1f} s) is spent waiting",
      gpu_list(r.waiting), r.waiting.size() == 1 ? "s" : "", gpu_list(r.stragglers),
      strag_kind == "host" ? "its own GPU idles: the delay is on the host" : "it computes longer", pct(busy_level(w0)),
      has_gpm(w0) ? fmt::format("SM activity only {}", pct(w0.sm_mean))
                  : fmt::format("power only {:.0f} W", w0.power_mean),
      pct(worst * 100), worst * (w0.t1 - w0.t0));
  if (!gpm) out.caveats.push_back("no GPM in this input: waiting inferred from power, not SM activity");
  for (int i : r.waiting) {
    const Activity& f = fs[static_cast<std::size_t>(i)];
    add(out, fmt::format("gpu{}_utilization_percent", i), busy_level(f), "percent", "waiting GPU, mean utilization");
    if (has_gpm(f))
      add(out, fmt::format("gpu{}_sm_activity_percent", i), f.sm_mean, "percent", "waiting GPU, GPM SM activity");
    if (f.has_nvlink)
      add(out, fmt::format("gpu{}_nvlink_tx_bytes_per_second", i), f.nvlink_tx_mean, "By/s", "GPM NVLink tx, mean");
  }
  for (int j : r.stragglers) {
    const Activity& f = fs[static_cast<std::size_t>(j)];
    add(out, fmt::format("gpu{}_utilization_percent", j), busy_level(f), "percent", "straggler, mean utilization");
    if (has_gpm(f))
      add(out, fmt::format("gpu{}_sm_activity_percent", j), f.sm_mean, "percent", "straggler, GPM SM activity");
  }
  add(out, "waiting_share", worst, "1",
      gpm ? fmt::format("share of {:.0f} s bins in which the GPU is busy with SM activity < {:.1f}x util while the "
                        "straggler is not",
                        th::kPulseBinS, th::kBusyIdleSmRatio)
          : fmt::format("share of {:.0f} s bins in which the GPU is busy at <= {} of its power limit (or {:.1f}x a "
                        "busy peer's power) while the straggler is not",
                        th::kPulseBinS, pct(th::kWaitPowerLimitRatio * 100), th::kWaitPowerRatio));
  add(out, "gpu_time_lost_s", worst * (w0.t1 - w0.t0), "s", "waiting share x the pulse's span");
  out.details = {{"straggler", strag}, {"waiting", waiting}, {"straggler_kind", strag_kind}, {"waiting_share", worst}};
  return out;
}

// ---- whole-span findings: staircase, memory growth, throttling -----------------------------

std::optional<Finding> staircase(int g, const telemetry::GpuTrace& gt, double t0, double t1) {
  struct Proc {
    std::string name;
    telemetry::Series s;
  };
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
  struct Contender {
    std::uint32_t pid;
    std::string name;
    double mean;
    std::size_t n;
    StepGrid grid;
    double period;
  };
  std::vector<Contender> cs;
  for (auto& [pid, pr] : procs) {
    const Levels l = levels(pr.s.v);
    if (l.n < th::kMinProcessPoints || l.mean < th::kMinProcessUtilPercent) continue;
    cs.push_back({pid, pr.name, l.mean, l.n, StepGrid{}, upper_median_spacing(pr.s, 1.0)});
  }
  if (cs.size() < 2) return std::nullopt;
  // One grid for all: the coarsest process's spacing (spacings that differ by 0.1 ms must not
  // keep two series from being paired).
  double period = th::kGridStepS;
  for (const auto& c : cs) period = std::max(period, c.period);
  for (auto& c : cs) c.grid = resample_steps(procs[c.pid].s, t0, t1, period, 2 * period);
  double total = 0;
  for (const auto& c : cs) total += c.mean;
  std::optional<double> corr;
  // Turns of a second or two cannot be seen through per-process values averaged over a second or
  // more (traces of older gpudoc versions): then the mode stays unknown.
  if (cs.size() == 2 && period <= th::kMaxTurnsSamplePeriodS) {
    std::vector<double> a, b;
    paired_cells(cs[0].grid, cs[1].grid, a, b);
    corr = core::correlation(a, b, th::kMinCorrelationPairs);
  }
  double worst = 0;
  nlohmann::json jp = nlohmann::json::array();
  Finding out = findings::make_finding("staircase", Severity::kWarning);
  std::string names;
  for (const auto& c : cs) {
    const double share = share_of(c.mean, total);
    const double loses = 1 - share;
    worst = std::max(worst, loses);
    jp.push_back({{"pid", c.pid},
                  {"name", c.name},
                  {"mean_utilization_percent", c.mean},
                  {"gpu_share", share},
                  {"loses_share", loses}});
    names += fmt::format("{}pid {} ({}, {} of the GPU's busy time)", names.empty() ? "" : ", ", c.pid,
                         c.name.empty() ? "?" : c.name, pct(share * 100));
    add(out, fmt::format("pid{}_mean_utilization_percent", c.pid), c.mean, "percent",
        "per-process SM utilization, mean");
  }
  // Contention is the finding whatever its size: at least a warning; critical by the share lost.
  out.severity = std::max(Severity::kWarning, severity_for_lost(worst));
  out.gpus = {g};
  out.window = {t0, t1};
  const bool turns = corr && *corr <= th::kTurnsCorrelation;
  out.confidence = th::kBaseConfidence * (corr ? 1.0 : 0.7);
  out.message =
      fmt::format("{} processes share GPU {} and {}: {}; each loses up to {} of the GPU to the others", cs.size(), g,
                  turns ? "take turns (anti-correlated utilization)" : "contend for it", names, pct(worst * 100));
  if (corr)
    add(out, "utilization_correlation", *corr, "1", "Pearson correlation of the two processes' utilization");
  else
    out.caveats.push_back("per-process samples too sparse to measure whether they take turns or run at once");
  add(out, "max_loses_share", worst, "1", "1 - process's share of the summed per-process utilization");
  out.details = {{"processes", jp},
                 {"mode", corr ? (turns ? "turns" : "concurrent") : "unknown"},
                 {"correlation", corr ? nlohmann::json(*corr) : nlohmann::json(nullptr)}};
  return out;
}

std::optional<Finding> memory_growth(int g, const telemetry::GpuTrace& gt, const gpu::DeviceInfo* dev, double t0,
                                     double t1) {
  const telemetry::Series& m = gt.metric(Metric::kMemoryUsedBytes);
  // (t, bytes) in time order (the reader sorts; synthetic input may not).
  std::vector<std::pair<double, double>> pts;
  for (std::size_t i = 0; i < m.t.size(); ++i)
    if (m.t[i] >= t0 && m.t[i] <= t1 && std::isfinite(m.v[i])) pts.emplace_back(m.t[i], m.v[i]);
  if (pts.size() < 3) return std::nullopt;
  std::stable_sort(pts.begin(), pts.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  // Memory released at the end (the process exits, an nvidia-smi log goes on): the growth during
  // the run is judged up to the highest point.
  double released_at_end = 0;
  std::size_t top = 0;
  for (std::size_t k = 1; k < pts.size(); ++k)
    if (pts[k].second >= pts[top].second) top = k;
  const double whole = pts.back().first - pts.front().first;
  const double tail = pts.back().first - pts[top].first;
  if (top + 1 < pts.size() && top >= 2 && tail <= std::max(th::kReleaseTailShare * whole, th::kReleaseTailS) &&
      tail < 0.5 * whole) {
    released_at_end = pts[top].second - pts.back().second;
    pts.resize(top + 1);
  }
  std::vector<double> t, v;
  for (const auto& [x, y] : pts) {
    t.push_back(x);
    v.push_back(y);
  }
  double up = 0, down = 0;
  for (std::size_t k = 1; k < v.size(); ++k) {
    const double d = v[k] - v[k - 1];
    (d > 0 ? up : down) += std::abs(d);
  }
  const Fit fit = linear_fit(t, v);
  const double net = v.back() - v.front();
  if (net < th::kGrowthMinBytes || fit.slope < th::kGrowthMinRateBytesPerS || down > th::kGrowthMaxReleaseRatio * up ||
      fit.r2 < th::kGrowthMinR2)
    return std::nullopt;
  const double current = v.back();
  std::optional<double> eta;
  if (dev && dev->memory_total_bytes)
    eta = std::max(0.0, (static_cast<double>(*dev->memory_total_bytes) - current) / fit.slope);
  Finding out = findings::make_finding(
      "memory_growth", eta && *eta < th::kCriticalExhaustionS ? Severity::kCritical : Severity::kWarning);
  out.gpus = {g};
  out.window = {t.front(), t.back()};
  out.confidence = th::kBaseConfidence * span_confidence(t1 - t0) * std::min(1.0, fit.r2 + 0.05);
  out.message = fmt::format(
      "GPU {} memory climbs {:.1f} MiB/s without release ({:.2f} GiB -> {:.2f} GiB){}", g, fit.slope / (1024 * 1024),
      v.front() / kGiB, current / kGiB,
      eta ? fmt::format("; at this rate it is full in {:.0f} s", *eta) : std::string(": memory total unknown"));
  add(out, "growth_rate_bytes_per_second", fit.slope, "By/s", "least-squares slope of memory_used_bytes");
  add(out, "net_growth_bytes", net, "By", "last - first memory_used_bytes in the span");
  add(out, "released_bytes", down, "By", "sum of the falls");
  if (released_at_end > 0) {
    add(out, "released_at_end_bytes", released_at_end, "By", "freed after the highest point, at the end (exit)");
    out.message += fmt::format("; {:.2f} GiB were freed only at the end", released_at_end / kGiB);
  }
  add(out, "fit_r2", fit.r2, "1", "how well a straight line fits the climb");
  if (eta)
    add(out, "time_to_exhaustion_s", *eta, "s", "(memory total from the header - current) / rate");
  else
    out.caveats.push_back("memory total unknown: no time to exhaustion");
  out.details = {{"rate_bytes_per_second", fit.slope},
                 {"time_to_exhaustion_s", eta ? nlohmann::json(*eta) : nlohmann::json(nullptr)},
                 {"memory_used_bytes", current},
                 {"memory_total_bytes",
                  dev && dev->memory_total_bytes ? nlohmann::json(*dev->memory_total_bytes) : nlohmann::json(nullptr)}};
  return out;
}

std::optional<Finding> throttled(int g, const telemetry::GpuTrace& gt, const gpu::DeviceInfo* dev, double t0,
                                 double t1) {
  const telemetry::Series& m = gt.metric(Metric::kClockEventReasonsMask);
  const telemetry::Series& clock = gt.metric(Metric::kSmClockMhz);
  const telemetry::Series& power = gt.metric(Metric::kPowerWatts);
  std::size_t n = 0, slow = 0, serious = 0, clk_n = 0, pw_n = 0;
  double clk_sum = 0, pw_sum = 0;
  std::uint64_t seen = 0;
  std::size_t ci = 0, pi = 0;  // walk the clock and power series (sorted by time; read together, same timestamps)
  for (std::size_t i = 0; i < m.t.size(); ++i) {
    if (m.t[i] < t0 || m.t[i] > t1 || !std::isfinite(m.v[i]) || m.v[i] < 0) continue;
    const auto mask = static_cast<std::uint64_t>(m.v[i]);
    ++n;
    if (gpu::is_slowdown(mask)) {
      ++slow;
      seen |= mask;
      if (gpu::is_slowdown(mask & ~gpu::kClockEventSwPowerCap)) ++serious;
      while (ci < clock.t.size() && clock.t[ci] < m.t[i] - 1e-3) ++ci;
      if (ci < clock.t.size() && std::abs(clock.t[ci] - m.t[i]) <= 1e-3 && std::isfinite(clock.v[ci])) {
        clk_sum += clock.v[ci];
        ++clk_n;
      }
      while (pi < power.t.size() && power.t[pi] < m.t[i] - 1e-3) ++pi;
      if (pi < power.t.size() && std::abs(power.t[pi] - m.t[i]) <= 1e-3 && std::isfinite(power.v[pi])) {
        pw_sum += power.v[pi];
        ++pw_n;
      }
    }
  }
  if (n < th::kMinSignalCells / 2) return std::nullopt;
  const double share = share_of(static_cast<double>(slow), static_cast<double>(n));
  if (share < th::kThrottleMinShare) return std::nullopt;
  // Clocks really held down: the SM clock while a reason is set, against the maximum. Unknown
  // (no clock or maximum): the reasons alone decide.
  const double clk_max = dev && dev->sm_clock_max_mhz ? *dev->sm_clock_max_mhz : 0.0;
  const double clk_slow = clk_n > 0 ? clk_sum / static_cast<double>(clk_n) : -1;
  const bool has_clock = clk_slow > 0 && clk_max > 0;
  const double clock_loss = has_clock ? std::max(0.0, 1 - clk_slow / clk_max) : -1;
  if (has_clock && clock_loss < th::kThrottleMinClockLoss) return std::nullopt;
  const double serious_share = share_of(static_cast<double>(serious), static_cast<double>(n));
  // A lowered power limit makes the power cap a fault, not the expected ceiling.
  const Levels lim = levels(gt.metric(Metric::kPowerLimitWatts).v);
  bool lowered = false;
  if (dev && dev->power_limit_default_watts && lim.n > 0)
    lowered = lim.p50 < th::kLoweredPowerLimitRatio * *dev->power_limit_default_watts;
  // The power the board drew while held down, against its limit: the software power cap set while
  // the mean power stays well below the limit means peaks shorter than the power reading reach it.
  const double limit_w = lim.n > 0 && lim.p50 > 1                ? lim.p50
                         : dev && dev->power_limit_default_watts ? *dev->power_limit_default_watts
                                                                 : 0.0;
  const double pw_slow = pw_n > 0 ? pw_sum / static_cast<double>(pw_n) : -1;
  const bool below_limit = pw_slow > 0 && limit_w > 0 && pw_slow < th::kPowerBoundRatio * limit_w;
  Severity sev = Severity::kInfo;
  if (serious_share >= th::kThrottleMinShare || lowered) sev = Severity::kWarning;
  if (serious_share >= th::kCriticalThrottleShare) sev = Severity::kCritical;
  Finding out = findings::make_finding("throttled", sev);
  out.gpus = {g};
  out.window = {t0, t1};
  out.confidence = th::kBaseConfidence;
  const std::uint64_t reasons = seen & ~std::uint64_t{0x1};
  std::string why = serious_share >= th::kThrottleMinShare
                        ? "thermal or hardware slowdown: check cooling and power delivery"
                    : lowered     ? "the power limit was lowered below its default"
                    : below_limit ? fmt::format(
                                        "the software power cap, while the board drew {:.0f} W of its {:.0f} W limit "
                                        "on average: power peaks shorter than the power reading reach the limit "
                                        "(bursts of work), the board is not held at its limit",
                                        pw_slow, limit_w)
                                  : "the board is at its power limit: expected under heavy load";
  out.message = fmt::format(
      "GPU {} clocks held down {} of the time by {}{}; {}", g, pct(share * 100), gpu::clock_event_reason_names(reasons),
      has_clock ? fmt::format(" (SM clock {:.0f} of {:.0f} MHz while held down: {} of the clock lost)", clk_slow,
                              clk_max, pct(clock_loss * 100))
                : std::string(),
      why);
  add(out, "throttled_share", share, "1", "share of clock_event_reasons_mask samples with a slowdown reason");
  add(out, "thermal_or_hw_share", serious_share, "1", "share with a reason other than the software power cap");
  if (clk_n > 0) add(out, "sm_clock_throttled_mhz", clk_slow, "MHz", "mean SM clock in the samples with a reason set");
  if (clk_max > 0) add(out, "sm_clock_max_mhz", clk_max, "MHz", "from the header");
  if (has_clock) add(out, "clock_lost_share", clock_loss, "1", "1 - throttled clock / maximum clock");
  if (pw_n > 0)
    add(out, "power_while_throttled_watts", pw_slow, "W", "mean board power in the samples with a reason set");
  nlohmann::json names = nlohmann::json::array();
  for (const auto& r : gpu::clock_event_reasons())
    if ((reasons & r.bit) && r.is_slowdown) names.push_back(std::string(r.name));
  out.details = {{"reasons", names},
                 {"share", share},
                 {"thermal_or_hw_share", serious_share},
                 {"power_limit_lowered", lowered},
                 {"clock_lost_share", has_clock ? nlohmann::json(clock_loss) : nlohmann::json(nullptr)}};
  return out;
}

}  // namespace gpudoc::diagnose::detail
