#include "view/watch_render.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>

#include "core/text.hpp"
#include "telemetry/replay_backend.hpp"

namespace gpudoc::view {
namespace {

using gpu::Metric;
constexpr std::size_t kLabel = 8;
constexpr std::size_t kSpark = 32;

std::string num(std::optional<double> v, const char* fmtstr, const char* unit) {
  if (!v) return "—";
  return fmt::format(fmt::runtime(fmtstr), *v) + unit;
}

// "label  ▁▂▅███  value" (the caller cuts it to the width).
std::string spark_line(const char* label, std::vector<std::optional<double>> hist, double lo, double hi,
                       const std::string& value) {
  if (hist.size() > kSpark) hist.erase(hist.begin(), hist.end() - static_cast<long>(kSpark));
  return " " + core::fit(label, kLabel - 1) + core::sparkline(hist, lo, hi) + "  " + value;
}

void trim_right(std::string& line) {
  while (!line.empty() && line.back() == ' ') line.pop_back();
}

}  // namespace

std::string render_watch(const telemetry::LiveState& s, const WatchRenderOptions& o) {
  std::string out;
  // Every line may carry text from a trace or a process (host, GPU and process names, event
  // kinds): made terminal-safe before it is cut to the width. The frame has no escapes of its own.
  auto add = [&](std::string line) {
    line = core::fit(core::terminal_safe(line), o.width);
    trim_right(line);
    out += line + "\n";
  };
  std::string head = o.title;
  if (!o.clock.empty()) {
    std::size_t w = core::display_width(head), cw = core::display_width(o.clock);
    head = (w + cw + 1 < o.width) ? head + std::string(o.width - w - cw, ' ') + o.clock : head + "  " + o.clock;
  }
  add(head);
  if (!o.banner.empty()) add(o.banner);

  for (std::size_t i = 0; i < s.gpu_count(); ++i) {
    const auto& d = s.device(i);
    std::string status =
        s.status(i).empty() ? "" : fmt::format("  [{}]", s.status(i) == "lost" ? "LOST" : "NOT RESPONDING");
    add(fmt::format("GPU {} {} · {}{}", d.index, d.name, d.pci_bus_id, status));

    auto util = s.latest(i, Metric::kGpuUtilizationPercent);
    auto memu = s.latest(i, Metric::kMemoryUtilizationPercent);
    add(spark_line("util", s.history(i, Metric::kGpuUtilizationPercent), 0, 100,
                   fmt::format("{:>6}  mem-bw util {}", num(util, "{:.0f}", " %"), num(memu, "{:.0f}", " %"))));

    auto sm = s.latest(i, Metric::kGpmSmActivityPercent);
    auto tensor = s.latest(i, Metric::kGpmTensorActivityPercent);
    auto dram = s.latest(i, Metric::kGpmDramActivityPercent);
    if (sm || tensor || dram)
      add(spark_line("SM act", s.history(i, Metric::kGpmSmActivityPercent), 0, 100,
                     fmt::format("{:>6}  tensor {} DRAM {}", num(sm, "{:.0f}", " %"), num(tensor, "{:.0f}", "%"),
                                 num(dram, "{:.0f}", "%"))));

    auto power = s.latest(i, Metric::kPowerWatts);
    auto limit = s.latest(i, Metric::kPowerLimitWatts);
    if (!limit && d.power_limit_default_watts) limit = d.power_limit_default_watts;
    add(spark_line("power", s.history(i, Metric::kPowerWatts), 0, limit.value_or(700.0),
                   fmt::format("{:>6} / {}", num(power, "{:.0f}", " W"), num(limit, "{:.0f}", " W"))));

    auto temp = s.latest(i, Metric::kGpuTemperatureCelsius);
    auto mtemp = s.latest(i, Metric::kMemoryTemperatureCelsius);
    std::string slowdown =
        d.temperature_slowdown_celsius ? fmt::format(" slowdown {:.0f}", *d.temperature_slowdown_celsius) : "";
    add(spark_line("temp", s.history(i, Metric::kGpuTemperatureCelsius), 20,
                   d.temperature_slowdown_celsius.value_or(90.0),
                   fmt::format("{:>6}  HBM {}{}", num(temp, "{:.0f}", " °C"), num(mtemp, "{:.0f}", " °C"), slowdown)));

    auto used = s.latest(i, Metric::kMemoryUsedBytes);
    double total = d.memory_total_bytes ? static_cast<double>(*d.memory_total_bytes) : 0.0;
    add(spark_line(
        "memory", s.history(i, Metric::kMemoryUsedBytes), 0, total > 0 ? total : 1.0,
        fmt::format("{} / {}", used ? core::human_bytes(*used) : "—", total > 0 ? core::human_bytes(total) : "?")));

    auto smclk = s.latest(i, Metric::kSmClockMhz);
    auto memclk = s.latest(i, Metric::kMemoryClockMhz);
    add(spark_line("clocks", s.history(i, Metric::kSmClockMhz), 0, d.sm_clock_max_mhz.value_or(2000.0),
                   fmt::format("SM {} / {}  mem {}", num(smclk, "{:.0f}", ""),
                               d.sm_clock_max_mhz ? fmt::format("{:.0f} MHz", *d.sm_clock_max_mhz) : "? MHz",
                               num(memclk, "{:.0f}", " MHz"))));

    auto reasons = s.latest(i, Metric::kClockEventReasonsMask);
    if (reasons) {
      auto mask = static_cast<std::uint64_t>(*reasons);
      // The sparkline is the share of time a slowdown reason held the clocks down.
      add(spark_line("reasons", s.slowdown_history(i), 0, 1,
                     gpu::clock_event_reason_names(mask) + (gpu::is_slowdown(mask) ? " ← held down" : "")));
    }
    auto gen = s.latest(i, Metric::kPcieLinkGeneration);
    auto width = s.latest(i, Metric::kPcieLinkWidth);
    if (gen && width) {
      std::string pcie = fmt::format("PCIe Gen{:.0f} x{:.0f}", *gen, *width);
      if (d.pcie_link_generation_max && d.pcie_link_width_max) {
        pcie += fmt::format(" (max Gen{} x{})", *d.pcie_link_generation_max, *d.pcie_link_width_max);
        // A link below its maximum under load is a classic silent slowdown; at idle it is power saving.
        if (*gen < *d.pcie_link_generation_max || *width < *d.pcie_link_width_max) pcie += " ← below max";
      }
      add(fmt::format(" {}{}", core::fit("link", kLabel - 1), pcie));
    }
    const auto& procs = s.processes(i);
    std::vector<gpu::ProcessSample> sorted(procs.begin(), procs.end());
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
      return a.memory_used_bytes.value_or(0) > b.memory_used_bytes.value_or(0);
    });
    for (std::size_t p = 0; p < sorted.size() && p < o.max_processes; ++p) {
      const auto& ps = sorted[p];
      add(fmt::format(" {}{:>7} {:<16} SM {:>5}  {}", core::fit(p == 0 ? "procs" : "", kLabel - 1), ps.pid,
                      core::fit(ps.name.empty() ? "?" : ps.name, 16), num(ps.sm_utilization_percent, "{:.0f}", " %"),
                      ps.memory_used_bytes ? core::human_bytes(static_cast<double>(*ps.memory_used_bytes)) : "—"));
    }
    if (sorted.size() > o.max_processes)
      add(fmt::format(" {}… {} more", core::fit("", kLabel - 1), sorted.size() - o.max_processes));
  }
  for (const auto& e : s.recent_events()) add("! " + e);
  return out;
}

nlohmann::json watch_json(const telemetry::LiveState& s) {
  nlohmann::json gpus = nlohmann::json::array();
  for (std::size_t i = 0; i < s.gpu_count(); ++i) {
    const auto& d = s.device(i);
    nlohmann::json g = {{"index", d.index}, {"name", d.name}, {"uuid", d.uuid}};
    if (!s.status(i).empty()) g["status"] = s.status(i);
    for (gpu::Metric m : gpu::all_metrics())
      if (auto v = s.latest(i, m)) g[std::string(gpu::info(m).name)] = *v;
    nlohmann::json procs = nlohmann::json::array();
    for (const auto& p : s.processes(i)) {
      nlohmann::json pj = {{"pid", p.pid}, {"name", p.name}};
      if (p.sm_utilization_percent) pj["sm_utilization_percent"] = *p.sm_utilization_percent;
      if (p.memory_used_bytes) pj["memory_used_bytes"] = *p.memory_used_bytes;
      procs.push_back(pj);
    }
    g["processes"] = procs;
    gpus.push_back(g);
  }
  return {{"time_unix_ns", s.now_unix_ns()}, {"gpus", gpus}};
}

namespace {

std::string local_clock(std::int64_t unix_ns) {
  std::time_t t = static_cast<std::time_t>(unix_ns / 1'000'000'000);
  std::tm tm{};
  localtime_r(&t, &tm);
  return fmt::format("{:%H:%M:%S}", tm);
}

std::string title_of(const telemetry::TraceHeader& header) {
  const auto& sys = header.system;
  return fmt::format("gpudoc watch — {} — {} GPU{} — driver {}, CUDA {}", header.host, header.gpus.size(),
                     header.gpus.size() == 1 ? "" : "s", sys.driver_version.empty() ? "?" : sys.driver_version,
                     sys.cuda_driver_version.empty() ? "?" : sys.cuda_driver_version);
}

}  // namespace

std::string watch_frame(const telemetry::LiveState& state, const telemetry::Live& live,
                        const telemetry::TraceHeader& header, bool json) {
  if (json) {
    auto j = watch_json(state);
    if (live.replay != nullptr) j["replay"] = live.spec->file;
    if (!live.real()) j["backend"] = telemetry::describe(*live.spec);
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  std::string clock_text = local_clock(live.clock->unix_now_ns());
  if (live.replay != nullptr)
    clock_text =
        fmt::format("t={:.1f} / {:.1f} s", std::min(live.replay->position_s(), live.replay->trace().duration_s),
                    live.replay->trace().duration_s);
  return render_watch(state, {.title = title_of(header), .banner = live.banner, .clock = clock_text});
}

std::string watch_start_warnings(const telemetry::Live& live) {
  std::string out;
  if (live.replay != nullptr)
    for (const auto& w : live.replay->trace().warnings) out += "gpudoc: warning: " + core::terminal_safe(w) + "\n";
  return out;
}

std::string watch_end_note(const telemetry::Live& live, bool json) {
  if (json) return "";
  if (live.replay != nullptr) return fmt::format("gpudoc: that was a replay of {}, not a live GPU.\n", live.spec->file);
  if (!live.real()) return fmt::format("gpudoc: those were {}, not this machine's GPUs.\n", live.spec->text);
  return "";
}

}  // namespace gpudoc::view
