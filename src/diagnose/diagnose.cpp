// The diagnosis: the analysed span, per-window labels of every GPU, pulses across GPUs, then runs
// of the same label per GPU turned into findings. The numbers come from signals.cpp, the rules
// from classify.cpp, the findings from finding_builders.cpp. Method: docs/methodology.md
// ("Diagnosis").
#include "diagnose/diagnose.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <span>

#include <fmt/format.h>

#include "diagnose/classify.hpp"
#include "diagnose/finding_builders.hpp"
#include "diagnose/signals.hpp"

namespace gpudoc::diagnose {

static_assert(kMinWindowS == th::kMinSpanS, "the shortest window is the shortest span that can conclude anything");

namespace {

using detail::Features;
using detail::Label;
using detail::Signals;
using findings::Finding;
using findings::Severity;
using gpu::Metric;

const gpu::DeviceInfo* device_of(const telemetry::Trace& t, std::size_t g) {
  return g < t.header.gpus.size() ? &t.header.gpus[g] : nullptr;
}

std::string input_format_of(const telemetry::Trace& t) {
  if (t.header.system.backend == "nvidia-smi-csv") return "nvidia-smi-csv";
  return "gpudoc-trace";
}

// What the input lacks, once for the whole trace.
std::vector<std::string> unseen_signals(const telemetry::Trace& trace) {
  auto any_gpu_has = [&](Metric m) {
    for (const auto& g : trace.gpus)
      if (!g.metric(m).empty()) return true;
    return false;
  };
  bool any_proc = false;
  for (const auto& g : trace.gpus) any_proc = any_proc || !g.processes.empty();
  std::vector<std::string> unseen;
  if (!any_gpu_has(Metric::kGpuUtilizationPercent)) unseen.emplace_back("GPU utilization");
  if (!any_gpu_has(Metric::kGpmSmActivityPercent)) unseen.emplace_back("GPM SM activity");
  if (!any_gpu_has(Metric::kGpmTensorActivityPercent)) unseen.emplace_back("GPM tensor activity");
  if (!any_gpu_has(Metric::kGpmDramActivityPercent)) unseen.emplace_back("GPM DRAM activity");
  if (!any_gpu_has(Metric::kGpmNvlinkTxBytesPerSecond)) unseen.emplace_back("GPM NVLink traffic");
  if (!any_gpu_has(Metric::kPowerWatts)) unseen.emplace_back("power");
  if (!any_gpu_has(Metric::kMemoryUsedBytes)) unseen.emplace_back("memory used");
  if (!any_gpu_has(Metric::kClockEventReasonsMask)) unseen.emplace_back("clock-event (throttle) reasons");
  if (!any_proc) unseen.emplace_back("per-process utilization");
  return unseen;
}

// Too short a span after start-up: one insufficient-data finding, every GPU's primary says so.
void insufficient_span(const telemetry::Trace& trace, const detail::Span& sp, Diagnosis& d) {
  for (std::size_t g = 0; g < trace.gpus.size(); ++g) {
    GpuSummary s;
    s.gpu = static_cast<int>(g);
    s.name = g < trace.header.gpus.size() ? trace.header.gpus[g].name : "";
    s.primary = "insufficient_data";
    d.gpus.push_back(s);
  }
  const double span = sp.t1 - sp.t0;
  d.findings.push_back(detail::insufficient_finding(
      -1, sp.t0, sp.t1,
      fmt::format("{:.1f} s of usable telemetry after start-up; at least {:.0f} s are needed", std::max(0.0, span),
                  th::kMinSpanS)));
}

// The analysed span cut into `count` equal windows of about window_s, in grid cells. A trace spans
// at most 10^8 s (docs/trace-format.md), so cells and count stay near 10^9 and their products
// within 64 bits.
struct WindowGrid {
  std::uint64_t cells = 0;
  std::uint64_t count = 1;
  // First cell of window w (w <= count).
  [[nodiscard]] std::size_t bound(std::size_t w) const { return cells * w / count; }
  // The window that holds cell c (c < cells).
  [[nodiscard]] std::size_t window_of(std::size_t c) const {
    std::size_t w = c * count / std::max<std::uint64_t>(cells, 1);
    while (w + 1 < count && bound(w + 1) <= c) ++w;
    while (w > 0 && bound(w) > c) --w;
    return w;
  }
};

WindowGrid make_windows(std::size_t cells, double span, const Options& options) {
  WindowGrid wg;
  wg.cells = cells;
  // Windows: equal parts of about window_s each (never shorter than a grid cell).
  const double wlen = options.window_s > 0 ? std::max(options.window_s, th::kGridStepS) : span;
  wg.count = static_cast<std::size_t>(std::max(1.0, std::round(span / wlen)));
  return wg;
}

// One window of one GPU with utilization or SM activity in it, with what a pulse needs of it.
struct WindowLabel {
  std::size_t w = 0;
  detail::Activity a;
};

// The windows [first, last] in which a signal has data, merged.
void add_windows(const StepGrid& g, const WindowGrid& wg, std::vector<std::pair<std::size_t, std::size_t>>& out) {
  for (const auto& st : g.steps) {
    const std::size_t a = wg.window_of(st.first), b = wg.window_of(std::size_t{st.first} + st.count - 1);
    if (!out.empty() && a <= out.back().second + 1)
      out.back().second = std::max(out.back().second, b);
    else
      out.emplace_back(a, b);
  }
}

// Pass 1, one GPU: its label in every window where it has utilization or SM activity. Elsewhere
// it is insufficient by definition, and a pulse could not count it busy (no busy level).
std::vector<WindowLabel> label_windows(const Signals& s, const WindowGrid& wg) {
  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  add_windows(s.util, wg, ranges);
  add_windows(s.sm, wg, ranges);
  std::sort(ranges.begin(), ranges.end());
  std::vector<WindowLabel> out;
  std::size_t next = 0;  // windows below this are done
  for (const auto& [a, b] : ranges) {
    for (std::size_t w = std::max(a, next); w <= b; ++w) {
      const Features f = detail::features(s, wg.bound(w), wg.bound(w + 1));
      out.push_back({w, detail::activity_of(f, detail::classify(f, s))});
    }
    next = std::max(next, b + 1);
  }
  return out;
}

// The windows in which two or more GPUs are labelled, in order.
std::vector<std::size_t> shared_windows(const std::vector<std::vector<WindowLabel>>& labelled) {
  std::vector<std::size_t> all;
  for (const auto& l : labelled)
    for (const auto& e : l) all.push_back(e.w);
  std::sort(all.begin(), all.end());
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i + 1 < all.size(); ++i)
    if (all[i] == all[i + 1] && (out.empty() || out.back() != all[i])) out.push_back(all[i]);
  return out;
}

// What pulses are found from: every GPU's bins and board power limit.
struct PulseInput {
  std::vector<std::vector<detail::Bin>> bins;
  std::vector<double> power_limit_w;
};

// The roles of a pulse over windows [w, e): from the bins those windows cover.
detail::PulseRoles roles_in(const PulseInput& in, const WindowGrid& wg, std::size_t w, std::size_t e) {
  const std::size_t per = detail::cells_per_bin();
  const std::size_t b0 = wg.bound(w) / per, b1 = (wg.bound(e) + per - 1) / per;
  std::vector<std::span<const detail::Bin>> spans;
  auto before = [](const detail::Bin& b, std::size_t k) { return b.k < k; };
  for (const auto& g : in.bins) {
    const auto a = std::lower_bound(g.begin(), g.end(), b0, before);
    const auto b = std::lower_bound(a, g.end(), b1, before);
    spans.emplace_back(g.data() + (a - g.begin()), static_cast<std::size_t>(b - a));
  }
  return detail::pulse_roles(spans, in.power_limit_w);
}

// Per GPU, the windows in which it waits for a straggler or is one.
std::vector<std::vector<std::size_t>> pulse_windows(const std::vector<std::vector<WindowLabel>>& labelled,
                                                    const PulseInput& in, const WindowGrid& wg) {
  std::vector<std::vector<std::size_t>> in_pulse(labelled.size());
  for (std::size_t w : shared_windows(labelled)) {
    const detail::PulseRoles r = roles_in(in, wg, w, w + 1);
    if (!r.found()) continue;
    std::vector<int> gpus = r.waiting;
    gpus.insert(gpus.end(), r.stragglers.begin(), r.stragglers.end());
    for (int g : gpus) in_pulse[static_cast<std::size_t>(g)].push_back(w);
  }
  for (auto& p : in_pulse) std::sort(p.begin(), p.end());
  return in_pulse;
}

// Runs of windows [w, e) in which any GPU takes part in a pulse.
std::vector<std::pair<std::size_t, std::size_t>> pulse_runs(const std::vector<std::vector<std::size_t>>& in_pulse) {
  std::vector<std::size_t> all;
  for (const auto& p : in_pulse) all.insert(all.end(), p.begin(), p.end());
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  std::vector<std::pair<std::size_t, std::size_t>> runs;
  for (std::size_t w : all) {
    if (!runs.empty() && runs.back().second == w)
      ++runs.back().second;
    else
      runs.emplace_back(w, w + 1);
  }
  return runs;
}

// A run of windows [w, e) of one GPU with the same id; `label` is its first window's.
struct Run {
  std::size_t w = 0, e = 0;
  std::string id;
  Label label = Label::kInsufficient;
};

std::vector<Run> runs_of(const std::vector<WindowLabel>& labelled, const std::vector<std::size_t>& pulse,
                         std::size_t count) {
  std::vector<Run> runs;
  auto extend = [&](std::size_t w, std::size_t e, const std::string& id, Label l) {
    if (!runs.empty() && runs.back().e == w && runs.back().id == id)
      runs.back().e = e;
    else
      runs.push_back({w, e, id, l});
  };
  constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
  std::size_t i = 0, j = 0, next = 0;
  while (i < labelled.size() || j < pulse.size()) {
    const std::size_t w = std::min(i < labelled.size() ? labelled[i].w : kNone, j < pulse.size() ? pulse[j] : kNone);
    if (w > next) extend(next, w, detail::id_of(Label::kInsufficient), Label::kInsufficient);
    Label l = Label::kInsufficient;
    if (i < labelled.size() && labelled[i].w == w) l = labelled[i++].a.label;
    const bool in_pulse = j < pulse.size() && pulse[j] == w;
    if (in_pulse) ++j;
    extend(w, w + 1, in_pulse ? "pulse" : detail::id_of(l), l);
    next = w + 1;
  }
  if (next < count) extend(next, count, detail::id_of(Label::kInsufficient), Label::kInsufficient);
  return runs;
}
GpuSummary summarize_gpu(const telemetry::Trace& trace, std::size_t g, const Signals& s, const detail::Span& sp) {
  const gpu::DeviceInfo* dev = g < trace.header.gpus.size() ? &trace.header.gpus[g] : nullptr;
  GpuSummary sum;
  sum.gpu = static_cast<int>(g);
  sum.name = dev ? dev->name : "";
  sum.analysed_from_s = sp.t0;
  sum.analysed_to_s = sp.t1;
  const Features whole = detail::features(s, 0, s.util.cells, false);
  if (whole.util.n > 0) sum.mean_utilization_percent = whole.util.mean;
  if (whole.sm.n > 0) sum.mean_sm_activity_percent = whole.sm.mean;
  if (whole.tensor.n > 0) sum.mean_tensor_activity_percent = whole.tensor.mean;
  if (whole.dram.n > 0) sum.mean_dram_activity_percent = whole.dram.mean;
  if (whole.mutil.n > 0) sum.mean_memory_utilization_percent = whole.mutil.mean;
  if (whole.power.n > 0) sum.mean_power_watts = whole.power.mean;
  const Levels mem = levels(trace.gpus[g].metric(Metric::kMemoryUsedBytes).v);
  if (mem.n > 0) sum.peak_memory_used_bytes = mem.max;
  return sum;
}

// The finding of one run of one GPU (not a pulse): numbers from the whole run; its label, unless
// the run as a whole reads as another pattern, in which case the first window's label stands.
void add_run_finding(int g, const Signals& s, const WindowGrid& wg, const Run& run, bool staircase,
                     std::vector<Finding>& out) {
  const Features f = detail::features(s, wg.bound(run.w), wg.bound(run.e));
  Label l = detail::classify(f, s);
  if (std::string(detail::id_of(l)) != run.id) l = run.label;  // keep the run's label
  switch (l) {
    case Label::kInsufficient:
      out.push_back(detail::insufficient_finding(g, f.t0, f.t1, "too few utilization or GPM samples in this span"));
      break;
    case Label::kIdle: out.push_back(detail::simple_finding("idle", g, f)); break;
    case Label::kHealthy:
      // Two processes filling the GPU between them is contention, not health.
      if (!staircase) out.push_back(detail::simple_finding("healthy", g, f));
      break;
    case Label::kSawtooth:
    case Label::kSawtoothFast: out.push_back(detail::sawtooth_finding(g, f, l == Label::kSawtoothFast, s)); break;
    case Label::kSawtoothCopies: out.push_back(detail::copies_finding(g, f, s)); break;
    case Label::kPlateauLaunch:
    case Label::kPlateauBusyIdle: out.push_back(detail::plateau_finding(g, f, l, s)); break;
    case Label::kMemoryBound: out.push_back(detail::memory_bound_finding(g, f)); break;
    case Label::kBusyUnproven: out.push_back(detail::busy_unproven_finding(g, f)); break;
    case Label::kMostlyBusy: out.push_back(detail::mostly_busy_finding(g, f, s)); break;
  }
}

// The id that covers most of the span; on a tie the first in id order.
std::string primary_of(const std::map<std::string, double>& time_in) {
  std::string best;
  double best_t = -1;
  for (const auto& [id, t] : time_in)
    if (t > best_t) {
      best = id;
      best_t = t;
    }
  return best;
}

// What pass 2 finds on one GPU.
struct GpuResult {
  GpuSummary summary;
  std::vector<Finding> findings;
  std::vector<PatternChange> changes;
  std::vector<detail::Activity> in_pulse_runs;  // one per pulse run, in order
};

// Pass 2, one GPU: runs of the same id, one finding per run (numbers from the whole run); the
// whole-span findings (staircase, memory growth, throttling); its share of each pulse run.
GpuResult diagnose_gpu(const telemetry::Trace& trace, std::size_t g, const Signals& s, const WindowGrid& wg,
                       const std::vector<Run>& runs, const std::vector<std::pair<std::size_t, std::size_t>>& pulses,
                       const detail::Span& sp) {
  const int gi = static_cast<int>(g);
  const telemetry::GpuTrace& gt = trace.gpus[g];
  const gpu::DeviceInfo* dev = g < trace.header.gpus.size() ? &trace.header.gpus[g] : nullptr;
  GpuResult out;
  out.summary = summarize_gpu(trace, g, s, sp);
  const std::optional<Finding> stair = detail::staircase(gi, gt, sp.t0, sp.t1);
  std::map<std::string, double> time_in;
  for (std::size_t r = 0; r < runs.size(); ++r) {
    const Run& run = runs[r];
    time_in[run.id] += s.util.time_at(wg.bound(run.e)) - s.util.time_at(wg.bound(run.w));
    if (r > 0) out.changes.push_back({gi, s.util.time_at(wg.bound(run.w)), runs[r - 1].id, run.id});
    if (run.id != "pulse") add_run_finding(gi, s, wg, run, stair.has_value(), out.findings);
  }
  if (stair) {
    out.findings.push_back(*stair);
    time_in["staircase"] = sp.t1 - sp.t0 + 1e-9;  // contention explains the GPU's whole span
  }
  if (auto mg = detail::memory_growth(gi, gt, dev, sp.t0, sp.t1)) out.findings.push_back(*mg);
  if (auto thr = detail::throttled(gi, gt, dev, sp.t0, sp.t1)) out.findings.push_back(*thr);
  // Primary: the id that covers most of the span.
  out.summary.primary = primary_of(time_in);
  for (const auto& [w, e] : pulses) {
    const Features f = detail::features(s, wg.bound(w), wg.bound(e));
    out.in_pulse_runs.push_back(detail::activity_of(f, detail::classify(f, s)));
  }
  return out;
}

// Pulse findings: roles recomputed on each run of pulse windows; when the run as a whole blurs
// them, taken from its first window.
std::vector<Finding> pulse_findings(const std::vector<std::pair<std::size_t, std::size_t>>& pulses,
                                    const std::vector<GpuResult>& gpus, const PulseInput& in, const WindowGrid& wg) {
  std::vector<Finding> out;
  for (std::size_t k = 0; k < pulses.size(); ++k) {
    std::vector<detail::Activity> run;
    for (const GpuResult& g : gpus) run.push_back(g.in_pulse_runs[k]);
    detail::PulseRoles r = roles_in(in, wg, pulses[k].first, pulses[k].second);
    if (!r.found()) r = roles_in(in, wg, pulses[k].first, pulses[k].first + 1);
    if (r.found()) out.push_back(detail::pulse_finding(r, run));
  }
  return out;
}

// Both passes over every GPU, one GPU's grids in memory at a time: pass 1 labels the windows,
// the pulses are found across GPUs, pass 2 (the grids rebuilt) turns runs into findings.
void diagnose_windows(const telemetry::Trace& trace, const detail::Span& sp, const Options& options, Diagnosis& d) {
  const std::size_t ngpu = trace.gpus.size();
  WindowGrid wg;
  std::vector<std::vector<WindowLabel>> labelled(ngpu);
  PulseInput pin;
  for (std::size_t g = 0; g < ngpu; ++g) {
    const Signals s = detail::make_signals(trace.gpus[g], device_of(trace, g), sp.t0, sp.t1);
    if (g == 0) wg = make_windows(s.util.cells, sp.t1 - sp.t0, options);
    labelled[g] = label_windows(s, wg);
    if (ngpu > 1) {
      pin.bins.push_back(detail::bins_of(s));
      pin.power_limit_w.push_back(s.power_limit_w);
    }
  }
  const auto in_pulse = pulse_windows(labelled, pin, wg);
  const auto pulses = pulse_runs(in_pulse);
  std::vector<GpuResult> gpus;
  for (std::size_t g = 0; g < ngpu; ++g) {
    const Signals s = detail::make_signals(trace.gpus[g], device_of(trace, g), sp.t0, sp.t1);
    gpus.push_back(diagnose_gpu(trace, g, s, wg, runs_of(labelled[g], in_pulse[g], wg.count), pulses, sp));
  }
  d.findings = pulse_findings(pulses, gpus, pin, wg);
  for (GpuResult& g : gpus) {
    std::move(g.findings.begin(), g.findings.end(), std::back_inserter(d.findings));
    std::move(g.changes.begin(), g.changes.end(), std::back_inserter(d.changes));
    d.gpus.push_back(std::move(g.summary));
  }
  if (wg.count > 1)
    d.notes.push_back(
        fmt::format("analysed in {} windows of {:.0f} s", wg.count, (sp.t1 - sp.t0) / static_cast<double>(wg.count)));
}

// The stretches of [first, last] sample times each series covers, split where it is silent for
// longer than kMaxSilenceS.
std::vector<std::pair<double, double>> covered(const telemetry::Trace& trace) {
  std::vector<std::pair<double, double>> out;
  for (const auto& g : trace.gpus)
    for (const auto& s : g.metrics) {
      std::size_t i = 0;
      while (i < s.t.size() && !std::isfinite(s.t[i])) ++i;
      if (i == s.t.size()) continue;
      double a = s.t[i], b = s.t[i];
      for (++i; i < s.t.size(); ++i) {
        if (!std::isfinite(s.t[i])) continue;
        if (s.t[i] - b > kMaxSilenceS) {
          out.emplace_back(a, b);
          a = s.t[i];
        }
        b = std::max(b, s.t[i]);
      }
      out.emplace_back(a, b);
    }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

telemetry::ReadOptions read_options() {
  telemetry::ReadOptions o;
  o.metrics.reset();
  for (Metric m :
       {Metric::kGpuUtilizationPercent, Metric::kMemoryUtilizationPercent, Metric::kGpmSmActivityPercent,
        Metric::kGpmTensorActivityPercent, Metric::kGpmDramActivityPercent, Metric::kGpmNvlinkTxBytesPerSecond,
        Metric::kGpmPcieRxBytesPerSecond, Metric::kGpmPcieTxBytesPerSecond, Metric::kPowerWatts, Metric::kSmClockMhz,
        Metric::kClockEventReasonsMask, Metric::kMemoryUsedBytes, Metric::kPowerLimitWatts,
        // the Cost block (src/cost): the energy counter beside the power readings
        Metric::kEnergyJoules})
    o.metrics.set(gpu::index(m));
  o.processes = true;
  return o;
}

core::Status check_diagnosable(const telemetry::Trace& trace, std::string_view name) {
  const auto spans = covered(trace);
  if (spans.empty()) return core::ok_status();
  double end = spans.front().second;
  for (const auto& [a, b] : spans) {
    if (a - end > kMaxSilenceS)
      return core::Error(core::ErrorKind::kBadInput,
                         fmt::format("{}: no sample from t = {:.1f} s to t = {:.1f} s ({:.1f} days): one trace is not "
                                     "silent for more than {:.0f} days; this is two recordings joined, or a clock "
                                     "that jumped (split the file at the gap and diagnose each part)",
                                     name, end, a, (a - end) / 86400, kMaxSilenceS / 86400));
    end = std::max(end, b);
  }
  return core::ok_status();
}

Diagnosis diagnose(const telemetry::Trace& trace, const Options& options) {
  Diagnosis d;
  d.input_format = input_format_of(trace);
  d.duration_s = trace.duration_s;
  d.warnings = trace.warnings;
  const detail::Span sp = detail::analysed_span(trace, options);
  d.unseen = unseen_signals(trace);
  if (trace.gpus.empty()) {
    d.findings.push_back(detail::insufficient_finding(-1, 0, trace.duration_s, "the input holds no GPU"));
    return d;
  }
  if (!(sp.t1 - sp.t0 >= th::kMinSpanS)) {
    insufficient_span(trace, sp, d);
    return d;
  }
  diagnose_windows(trace, sp, options, d);
  // Caveats shared by every finding of this input.
  for (Finding& f : d.findings) {
    if (d.input_format == "nvidia-smi-csv")
      f.caveats.push_back("nvidia-smi CSV: no GPM, no per-process data; utilization is the driver's value at each row");
  }
  std::stable_sort(d.findings.begin(), d.findings.end(),
                   [](const Finding& a, const Finding& b) { return a.severity > b.severity; });
  if (!sp.how.empty()) d.notes.insert(d.notes.begin(), sp.how);
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
  for (const PatternChange& c : d.changes)
    cs.push_back({{"gpu", c.gpu}, {"t_s", c.t_s}, {"from", c.from}, {"to", c.to}});
  j["changes"] = std::move(cs);
  j["unseen"] = d.unseen;
  j["notes"] = d.notes;
  j["warnings"] = d.warnings;
  return j;
}

std::optional<findings::Severity> max_severity(const Diagnosis& d) {
  std::optional<Severity> m;
  for (const Finding& f : d.findings)
    if (!m || f.severity > *m) m = f.severity;
  return m;
}

}  // namespace gpudoc::diagnose
