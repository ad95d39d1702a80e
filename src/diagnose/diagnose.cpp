// The diagnosis: the analysed span, per-window labels of every GPU, pulses across GPUs, then runs
// of the same label per GPU turned into findings. The numbers come from signals.cpp, the rules
// from classify.cpp, the findings from finding_builders.cpp. Method: docs/methodology.md
// ("Diagnosis").
#include "diagnose/diagnose.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "diagnose/classify.hpp"
#include "diagnose/finding_builders.hpp"
#include "diagnose/signals.hpp"

namespace gpudoc::diagnose {
namespace {

using detail::Features;
using detail::Label;
using detail::Signals;
using findings::Finding;
using findings::Severity;
using gpu::Metric;

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

// Every GPU's features (and labels) over grid cells [a, b).
struct Across {
  std::vector<Features> features;
  std::vector<Label> labels;
};
Across across_gpus(const std::vector<Signals>& sig, std::size_t a, std::size_t b) {
  Across out;
  for (const Signals& s : sig) {
    out.features.push_back(detail::features(s, a, b));
    out.labels.push_back(detail::classify(out.features.back(), s));
  }
  return out;
}

// The analysed span cut into windows of about window_s, each GPU labelled in each window, and
// the GPUs that take part in a pulse there.
struct Windows {
  std::size_t count = 0;
  std::vector<std::size_t> bounds;                // count + 1 grid cell indices
  std::vector<std::vector<Label>> labels;         // [gpu][window]
  std::vector<std::vector<bool>> in_pulse;        // [gpu][window]
  [[nodiscard]] bool any_in_pulse(std::size_t w) const {
    for (const auto& g : in_pulse)
      if (g[w]) return true;
    return false;
  }
  [[nodiscard]] std::string id_at(std::size_t g, std::size_t w) const {
    return in_pulse[g][w] ? "pulse" : detail::id_of(labels[g][w]);
  }
};

Windows label_windows(const std::vector<Signals>& sig, std::size_t ncells, double span, const Options& options) {
  Windows win;
  const std::size_t ngpu = sig.size();
  // Windows: equal parts of about window_s each.
  const double wlen = options.window_s > 0 ? options.window_s : span;
  win.count = static_cast<std::size_t>(std::max(1.0, std::round(span / wlen)));
  win.bounds.resize(win.count + 1);
  for (std::size_t w = 0; w <= win.count; ++w) win.bounds[w] = ncells * w / win.count;
  win.labels.assign(ngpu, std::vector<Label>(win.count));
  win.in_pulse.assign(ngpu, std::vector<bool>(win.count, false));
  for (std::size_t w = 0; w < win.count; ++w) {
    const Across a = across_gpus(sig, win.bounds[w], win.bounds[w + 1]);
    for (std::size_t g = 0; g < ngpu; ++g) win.labels[g][w] = a.labels[g];
    const detail::PulseRoles r = detail::pulse_roles(a.features, a.labels);
    if (r.found()) {
      for (int i : r.waiting) win.in_pulse[static_cast<std::size_t>(i)][w] = true;
      for (int j : r.stragglers) win.in_pulse[static_cast<std::size_t>(j)][w] = true;
    }
  }
  return win;
}

// Pulse: runs of windows in which any GPU is part of a pulse; roles recomputed on the run.
void add_pulse_findings(const std::vector<Signals>& sig, const Windows& win, Diagnosis& d) {
  std::size_t w = 0;
  while (w < win.count) {
    if (!win.any_in_pulse(w)) {
      ++w;
      continue;
    }
    std::size_t e = w;
    while (e < win.count && win.any_in_pulse(e)) ++e;
    const Across run = across_gpus(sig, win.bounds[w], win.bounds[e]);
    detail::PulseRoles r = detail::pulse_roles(run.features, run.labels);
    if (!r.found()) {  // the run as a whole blurs the roles: take them from its first window
      const Across first = across_gpus(sig, win.bounds[w], win.bounds[w + 1]);
      r = detail::pulse_roles(first.features, first.labels);
    }
    if (r.found()) d.findings.push_back(detail::pulse_finding(r, run.features));
    w = e;
  }
}

GpuSummary summarize_gpu(const telemetry::Trace& trace, std::size_t g, const Signals& s, std::size_t ncells,
                         const detail::Span& sp) {
  const gpu::DeviceInfo* dev = g < trace.header.gpus.size() ? &trace.header.gpus[g] : nullptr;
  GpuSummary sum;
  sum.gpu = static_cast<int>(g);
  sum.name = dev ? dev->name : "";
  sum.analysed_from_s = sp.t0;
  sum.analysed_to_s = sp.t1;
  const Features whole = detail::features(s, 0, ncells, false);
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

// The finding of one run of windows [w, e) of one GPU with the same id (not a pulse).
void add_run_finding(int g, const Signals& s, const Windows& win, std::size_t w, std::size_t e, bool staircase,
                     Diagnosis& d) {
  const Features f = detail::features(s, win.bounds[w], win.bounds[e]);
  Label l = detail::classify(f, s);
  if (std::string(detail::id_of(l)) != win.id_at(static_cast<std::size_t>(g), w))
    l = win.labels[static_cast<std::size_t>(g)][w];  // keep the run's label
  switch (l) {
    case Label::kInsufficient:
      d.findings.push_back(detail::insufficient_finding(g, f.t0, f.t1, "too few utilization or GPM samples in this span"));
      break;
    case Label::kIdle: d.findings.push_back(detail::simple_finding("idle", g, f)); break;
    case Label::kHealthy:
      // Two processes filling the GPU between them is contention, not health.
      if (!staircase) d.findings.push_back(detail::simple_finding("healthy", g, f));
      break;
    case Label::kSawtooth:
    case Label::kSawtoothFast:
      d.findings.push_back(detail::sawtooth_finding(g, f, l == Label::kSawtoothFast, s));
      break;
    case Label::kPlateauLaunch:
    case Label::kPlateauBusyIdle: d.findings.push_back(detail::plateau_finding(g, f, l, s)); break;
    case Label::kMemoryBound: d.findings.push_back(detail::memory_bound_finding(g, f)); break;
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

// Per-GPU runs of the same id: one finding per run, numbers from the whole run; then the
// whole-span findings (staircase, memory growth, throttling) and the GPU's summary.
void add_gpu_findings(const telemetry::Trace& trace, std::size_t g, const Signals& s, const Windows& win,
                      std::size_t ncells, const detail::Span& sp, Diagnosis& d) {
  const int gi = static_cast<int>(g);
  const telemetry::GpuTrace& gt = trace.gpus[g];
  const gpu::DeviceInfo* dev = g < trace.header.gpus.size() ? &trace.header.gpus[g] : nullptr;
  GpuSummary sum = summarize_gpu(trace, g, s, ncells, sp);
  const std::optional<Finding> stair = detail::staircase(gi, gt, sp.t0, sp.t1);
  std::map<std::string, double> time_in;
  std::size_t w = 0;
  while (w < win.count) {
    const std::string id = win.id_at(g, w);
    std::size_t e = w + 1;
    while (e < win.count && win.id_at(g, e) == id) ++e;
    time_in[id] += s.util.time_at(win.bounds[e]) - s.util.time_at(win.bounds[w]);
    if (w > 0) d.changes.push_back({gi, s.util.time_at(win.bounds[w]), win.id_at(g, w - 1), id});
    if (id != "pulse") add_run_finding(gi, s, win, w, e, stair.has_value(), d);
    w = e;
  }
  if (stair) {
    d.findings.push_back(*stair);
    time_in["staircase"] = sp.t1 - sp.t0 + 1e-9;  // contention explains the GPU's whole span
  }
  if (auto mg = detail::memory_growth(gi, gt, dev, sp.t0, sp.t1)) d.findings.push_back(*mg);
  if (auto thr = detail::throttled(gi, gt, dev, sp.t0, sp.t1)) d.findings.push_back(*thr);
  // Primary: the id that covers most of the span.
  sum.primary = primary_of(time_in);
  d.gpus.push_back(sum);
}

}  // namespace

Diagnosis diagnose(const telemetry::Trace& trace, const Options& options) {
  Diagnosis d;
  d.input_format = input_format_of(trace);
  d.duration_s = trace.duration_s;
  const detail::Span sp = detail::analysed_span(trace, options);
  const std::size_t ngpu = trace.gpus.size();
  d.unseen = unseen_signals(trace);
  if (ngpu == 0) {
    d.findings.push_back(detail::insufficient_finding(-1, 0, trace.duration_s, "the input holds no GPU"));
    return d;
  }
  const double span = sp.t1 - sp.t0;
  if (!(span >= th::kMinSpanS)) {
    insufficient_span(trace, sp, d);
    return d;
  }

  std::vector<Signals> sig;
  sig.reserve(ngpu);
  for (const auto& g : trace.gpus) sig.push_back(detail::make_signals(g, sp.t0, sp.t1));
  const std::size_t ncells = sig[0].util.v.size();
  const Windows win = label_windows(sig, ncells, span, options);
  add_pulse_findings(sig, win, d);
  for (std::size_t g = 0; g < ngpu; ++g) add_gpu_findings(trace, g, sig[g], win, ncells, sp, d);

  // Caveats shared by every finding of this input.
  for (Finding& f : d.findings) {
    if (d.input_format == "nvidia-smi-csv")
      f.caveats.push_back("nvidia-smi CSV: no GPM, no per-process data; utilization is the driver's value at each row");
  }
  std::stable_sort(d.findings.begin(), d.findings.end(),
                   [](const Finding& a, const Finding& b) { return a.severity > b.severity; });
  if (!sp.how.empty()) d.notes.push_back(sp.how);
  if (win.count > 1)
    d.notes.push_back(fmt::format("analysed in {} windows of {:.0f} s", win.count, span / static_cast<double>(win.count)));
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
