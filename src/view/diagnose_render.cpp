#include "view/diagnose_render.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/text.hpp"

namespace gpudoc::view {
namespace {

using findings::Severity;
using gpu::Metric;
constexpr std::size_t kLabel = 10;  // " util    " column before a chart
constexpr std::size_t kValue = 22;  // value text after a chart: "mean 1572 max 1980 MHz"

struct Style {
  bool on = false;
  [[nodiscard]] std::string paint(const std::string& s, const char* code) const {
    return on ? fmt::format("\x1b[{}m{}\x1b[0m", code, s) : s;
  }
  [[nodiscard]] std::string bold(const std::string& s) const { return paint(s, "1"); }
  [[nodiscard]] std::string dim(const std::string& s) const { return paint(s, "2"); }
  [[nodiscard]] std::string severity(Severity sev, const std::string& s) const {
    switch (sev) {
      case Severity::kCritical: return paint(s, "1;31");
      case Severity::kWarning: return paint(s, "1;33");
      case Severity::kInfo: return paint(s, "36");
    }
    return s;
  }
};

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string span_text(double from, double to) { return fmt::format("{:.1f}–{:.1f} s", from, to); }

// Text from the input (host, names, commands, and findings whose messages quote process names) as
// the terminal may show it.
std::string safe(const std::string& s) { return core::terminal_safe(s); }

// A chart row: label, sparkline of bucket means, value text.
std::string chart_row(const char* label, const std::vector<std::optional<double>>& cells, double lo, double hi,
                      const std::string& value) {
  return " " + core::fit(label, kLabel - 1) + core::sparkline(cells, lo, hi) + "  " + value;
}

std::optional<double> series_mean(const telemetry::Series& s) {
  if (s.empty()) return std::nullopt;
  double sum = 0;
  for (double v : s.v) sum += v;
  return sum / static_cast<double>(s.size());
}

std::optional<double> series_max(const telemetry::Series& s) {
  if (s.empty()) return std::nullopt;
  return *std::max_element(s.v.begin(), s.v.end());
}

}  // namespace

std::string gpu_label(const telemetry::Trace& t, int pos) {
  if (pos >= 0 && static_cast<std::size_t>(pos) < t.header.gpus.size())
    return fmt::format("GPU {}", t.header.gpus[static_cast<std::size_t>(pos)].index);
  return fmt::format("GPU {}", pos);
}

std::string gpus_label(const telemetry::Trace& t, const std::vector<int>& gpus) {
  if (gpus.empty()) return "all GPUs";
  std::string out;
  for (int g : gpus) out += (out.empty() ? "" : ", ") + gpu_label(t, g);
  return out;
}

std::string format_evidence_value(double value, const std::string& unit) {
  if (!std::isfinite(value)) return "—";
  if (unit == "By") return core::human_bytes(value);
  if (unit == "By/s") return core::human_bytes(value) + "/s";
  double a = std::fabs(value);
  std::string num = a >= 100  ? fmt::format("{:.0f}", value)
                    : a >= 10 ? fmt::format("{:.1f}", value)
                              : fmt::format("{:.2f}", value);
  if (unit.empty() || unit == "1" || unit == "count") return num;
  if (unit == "percent") return num + " %";
  if (unit == "Cel") return num + " °C";
  return num + " " + unit;
}

std::vector<std::optional<double>> bucket_means(const telemetry::Series& s, double from_s, double to_s,
                                                std::size_t columns) {
  std::vector<std::optional<double>> out(columns);
  if (columns == 0 || !(to_s > from_s)) return out;
  std::vector<double> sum(columns, 0.0);
  std::vector<std::size_t> n(columns, 0);
  const double width = (to_s - from_s) / static_cast<double>(columns);
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s.t[i] < from_s || s.t[i] > to_s || !std::isfinite(s.v[i])) continue;
    auto b = std::min(columns - 1, static_cast<std::size_t>((s.t[i] - from_s) / width));
    sum[b] += s.v[i];
    ++n[b];
  }
  for (std::size_t b = 0; b < columns; ++b)
    if (n[b] > 0) out[b] = sum[b] / static_cast<double>(n[b]);
  return out;
}

namespace {

// The title, the banner, the recorded command, and what the reader dropped.
std::string title_text(const telemetry::Trace& trace, const diagnose::Diagnosis& d, const DiagnoseRenderOptions& o,
                       const Style& st) {
  std::string source = d.source.empty() ? "trace" : std::filesystem::path(d.source).filename().string();
  std::string out = st.bold(fmt::format("gpudoc diagnose — {}", safe(source))) +
                    fmt::format(" — {}{} GPU{}, {}", trace.header.host.empty() ? "" : safe(trace.header.host) + ", ",
                                d.gpus.size(), d.gpus.size() == 1 ? "" : "s", core::human_duration(d.duration_s));
  if (!d.input_format.empty() && d.input_format != "gpudoc-trace") out += fmt::format(" ({})", d.input_format);
  out += "\n";
  if (!o.banner.empty()) out += st.paint(safe(o.banner), "1;35") + "\n";
  if (!trace.header.command.empty())
    out += st.dim(safe(fmt::format("command: {}", fmt::join(trace.header.command, " ")))) + "\n";
  // What the reader dropped from the input: the report covers the rest.
  for (const auto& w : d.warnings) out += st.paint("dropped: " + safe(w), "33") + "\n";
  return out;
}

// One GPU's header line and means.
std::string gpu_head(const telemetry::Trace& trace, const diagnose::GpuSummary& g, const Style& st) {
  std::string head = fmt::format("{} {} · analysed {}", gpu_label(trace, g.gpu), g.name.empty() ? "GPU" : safe(g.name),
                                 span_text(g.analysed_from_s, g.analysed_to_s));
  if (!g.primary.empty()) head += " · " + g.primary;
  std::string out = "\n" + st.bold(head) + "\n";
  std::string means;
  auto add_mean = [&](const char* name, const std::optional<double>& v, const char* unit) {
    if (v) means += fmt::format("{}{} {:.0f}{}", means.empty() ? "" : " · ", name, *v, unit);
  };
  add_mean("util", g.mean_utilization_percent, " %");
  add_mean("SM", g.mean_sm_activity_percent, " %");
  add_mean("tensor", g.mean_tensor_activity_percent, " %");
  add_mean("DRAM", g.mean_dram_activity_percent, " %");
  if (!g.mean_dram_activity_percent) add_mean("mem-bw", g.mean_memory_utilization_percent, " %");
  add_mean("power", g.mean_power_watts, " W");
  if (!means.empty()) out += " " + core::fit("means", kLabel - 1) + means + "\n";
  return out;
}

// Where one GPU's findings hold, under its chart: ━ for warning and above, ─ for info.
std::string finding_marks(const diagnose::Diagnosis& d, int gpu, std::size_t chart, double t_end, const Style& st) {
  std::string marks;
  bool any = false;
  for (std::size_t c = 0; c < chart; ++c) {
    double t0 = t_end * static_cast<double>(c) / static_cast<double>(chart);
    double t1 = t_end * static_cast<double>(c + 1) / static_cast<double>(chart);
    std::optional<Severity> worst;
    for (const auto& f : d.findings) {
      bool here = f.gpus.empty() || std::find(f.gpus.begin(), f.gpus.end(), gpu) != f.gpus.end();
      if (here && f.window.start_s < t1 && f.window.end_s > t0 && (!worst || f.severity > *worst)) worst = f.severity;
    }
    if (worst) any = true;
    marks += !worst ? " " : *worst >= Severity::kWarning ? "━" : "─";
  }
  while (!marks.empty() && marks.back() == ' ') marks.pop_back();
  return any ? " " + core::fit("findings", kLabel - 1) + st.paint(marks, "33") + "\n" : std::string();
}

// One GPU's chart over the whole trace: a row per curve, the findings' marks, the time axis.
std::string gpu_chart(const telemetry::Trace& trace, const diagnose::Diagnosis& d, int gpu, std::size_t chart,
                      double t_end, const Style& st) {
  const auto& gt = trace.gpus[static_cast<std::size_t>(gpu)];
  const auto& dev = trace.header.gpus[static_cast<std::size_t>(gpu)];
  std::string out;
  auto row = [&](const char* label, Metric m, double lo, double hi, const std::string& value) {
    const auto& s = gt.metric(m);
    if (s.empty()) return;
    out += chart_row(label, bucket_means(s, 0, t_end, chart), lo, hi, value) + "\n";
  };
  auto mean_max = [&](Metric m, const char* unit) {
    auto mean = series_mean(gt.metric(m));
    auto mx = series_max(gt.metric(m));
    return mean ? fmt::format("mean {:.0f} max {:.0f}{}", *mean, mx.value_or(0), unit) : std::string("—");
  };
  row("util", Metric::kGpuUtilizationPercent, 0, 100, mean_max(Metric::kGpuUtilizationPercent, " %"));
  row("SM act", Metric::kGpmSmActivityPercent, 0, 100, mean_max(Metric::kGpmSmActivityPercent, " %"));
  row("tensor", Metric::kGpmTensorActivityPercent, 0, 100, mean_max(Metric::kGpmTensorActivityPercent, " %"));
  row("DRAM", Metric::kGpmDramActivityPercent, 0, 100, mean_max(Metric::kGpmDramActivityPercent, " %"));
  if (gt.metric(Metric::kGpmDramActivityPercent).empty())
    row("mem-bw", Metric::kMemoryUtilizationPercent, 0, 100, mean_max(Metric::kMemoryUtilizationPercent, " %"));
  double power_hi = dev.power_limit_default_watts.value_or(series_max(gt.metric(Metric::kPowerWatts)).value_or(700.0));
  row("power", Metric::kPowerWatts, 0, power_hi, mean_max(Metric::kPowerWatts, " W"));
  double clk_hi = dev.sm_clock_max_mhz.value_or(series_max(gt.metric(Metric::kSmClockMhz)).value_or(2000.0));
  row("SM clk", Metric::kSmClockMhz, 0, clk_hi, mean_max(Metric::kSmClockMhz, " MHz"));
  const auto& mem = gt.metric(Metric::kMemoryUsedBytes);
  if (!mem.empty()) {
    double total =
        dev.memory_total_bytes ? static_cast<double>(*dev.memory_total_bytes) : series_max(mem).value_or(1.0);
    out += chart_row("memory", bucket_means(mem, 0, t_end, chart), 0, total > 0 ? total : 1.0,
                     fmt::format("max {}", core::human_bytes(series_max(mem).value_or(0)))) +
           "\n";
  }
  out += finding_marks(d, gpu, chart, t_end, st);
  std::string left = "0 s", right = fmt::format("{:.1f} s", t_end);
  out += st.dim(" " + std::string(kLabel - 1, ' ') + left +
                std::string(chart > left.size() + right.size() ? chart - left.size() - right.size() : 1, ' ') + right) +
         "\n";
  return out;
}

std::string finding_text(const telemetry::Trace& trace, const findings::Finding& f, const Style& st) {
  std::string out = "\n";
  const auto* entry = findings::find_entry(f.id);
  std::string title = entry != nullptr ? std::string(entry->title) : "";
  out += st.severity(f.severity, fmt::format("{:<8}", upper(findings::to_string(f.severity)))) + " " +
         st.bold(safe(f.id)) + (title.empty() ? "" : " — " + title) + "\n";
  out += fmt::format("  {} · {} · confidence {:.0f} %\n", gpus_label(trace, f.gpus),
                     span_text(f.window.start_s, f.window.end_s), f.confidence * 100);
  if (!f.message.empty()) out += "  " + safe(f.message) + "\n";
  if (!f.evidence.empty()) {
    std::vector<std::vector<std::string>> rows{{"evidence", "value", "how"}};
    for (const auto& e : f.evidence)
      rows.push_back({safe(e.name), format_evidence_value(e.value, e.unit), safe(e.how)});
    std::string table = core::render_table(rows);
    std::size_t pos = 0;
    while (pos < table.size()) {
      auto nl = table.find('\n', pos);
      if (nl == std::string::npos) nl = table.size();
      std::string line = table.substr(pos, nl - pos);
      out += "    " + (pos == 0 ? st.dim(line) : line) + "\n";
      pos = nl + 1;
    }
  }
  for (const auto& c : f.caveats) out += "  " + st.dim("caveat: " + safe(c)) + "\n";
  if (!f.next_steps.empty()) {
    out += "  next steps:\n";
    for (const auto& s : f.next_steps) out += "    - " + safe(s) + "\n";
  }
  return out;
}

}  // namespace

std::string render_diagnosis(const telemetry::Trace& trace, const diagnose::Diagnosis& d,
                             const DiagnoseRenderOptions& o) {
  Style st{o.color};
  const std::size_t width = std::max<std::size_t>(o.width, 60);
  const std::size_t chart = width - kLabel - kValue - 2;
  std::string out = title_text(trace, d, o, st);

  // Per GPU: header line and chart over the whole trace (the analysed span is named in the header).
  const double t_end = std::max(d.duration_s, trace.duration_s);
  for (const auto& g : d.gpus) {
    out += gpu_head(trace, g, st);
    if (g.gpu < 0 || static_cast<std::size_t>(g.gpu) >= trace.gpus.size() || !(t_end > 0)) continue;
    out += gpu_chart(trace, d, g.gpu, chart, t_end, st);
  }

  out += "\n";
  if (d.findings.empty()) {
    out += "No findings: nothing in this trace matched a known pattern.\n";
  } else {
    out += st.bold(fmt::format("Findings ({}), most severe first", d.findings.size())) + "\n";
  }
  for (const auto& f : d.findings) out += finding_text(trace, f, st);
  if (!d.changes.empty()) {
    out += "\n" + st.bold("Pattern changes") + "\n";
    for (const auto& c : d.changes)
      out += fmt::format("  {} at {:.1f} s: {} → {}\n", gpu_label(trace, c.gpu), c.t_s, safe(c.from), safe(c.to));
  }
  if (!d.unseen.empty())
    out += "\n" + fmt::format("Could not see: {} (not in this input; confidence is lowered where they matter).\n",
                              safe(fmt::format("{}", fmt::join(d.unseen, ", "))));
  return out;
}

}  // namespace gpudoc::view
