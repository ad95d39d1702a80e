#include "view/trace_info.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <string_view>
#include <vector>

#include "core/text.hpp"
#include "gpu/metrics.hpp"

namespace gpudoc::view {
namespace {

// 2026-05-28T09:12:03.123Z
std::string iso8601_utc(std::int64_t unix_ns) {
  std::time_t secs = static_cast<std::time_t>(unix_ns / 1'000'000'000);
  std::tm tm{};
  if (gmtime_r(&secs, &tm) == nullptr) return "?";
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03}Z", buf, (unix_ns % 1'000'000'000) / 1'000'000);
}

std::string format_value(double v, std::string_view unit) {
  if (unit == "By") return core::human_bytes(v);
  if (unit == "By/s") return core::human_bytes(v) + "/s";
  if (unit == "bitmask") return fmt::format("{:#x}", static_cast<std::uint64_t>(std::max(0.0, v)));
  return fmt::format("{:.1f}", v);
}

}  // namespace

nlohmann::ordered_json trace_info_json(const std::string& path, const telemetry::TraceStats& t) {
  const auto& h = t.header;
  nlohmann::ordered_json j;
  j["file"] = path;
  j["valid"] = true;
  j["format_version"] = h.version;
  j["gpudoc_version"] = h.gpudoc_version;
  j["host"] = h.host;
  j["start_unix_ns"] = h.start_unix_ns;
  j["start"] = iso8601_utc(h.start_unix_ns);
  j["duration_s"] = t.duration_s;
  j["command"] = h.command;
  j["system"] = {{"backend", h.system.backend},
                 {"driver_version", h.system.driver_version},
                 {"cuda_driver_version", h.system.cuda_driver_version},
                 {"nvml_version", h.system.nvml_version}};
  j["clean_end"] = t.end.has_value();
  if (t.end)
    j["end"] = {{"t", t.end->t},
                {"reason", t.end->reason},
                {"sample_lines", t.end->sample_lines},
                {"dropped_records", t.end->dropped_records}};
  nlohmann::ordered_json gpus = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < t.gpus.size(); ++i) {
    nlohmann::ordered_json g;
    g["index"] = h.gpus[i].index;
    g["name"] = h.gpus[i].name;
    g["uuid"] = h.gpus[i].uuid;
    nlohmann::ordered_json metrics = nlohmann::ordered_json::array();
    for (const auto& st : t.gpus[i].metrics) {
      nlohmann::ordered_json m;
      m["name"] = gpu::info(st.metric).name;
      m["unit"] = gpu::info(st.metric).unit;
      m["samples"] = st.samples;
      m["period_s"] = st.period_s;
      m["period_from_header"] = st.period_from_header;
      m["mean_interval_s"] = st.mean_interval_s ? nlohmann::ordered_json(*st.mean_interval_s) : nullptr;
      m["gaps"] = st.gaps;
      m["longest_gap_s"] = st.gaps ? nlohmann::ordered_json(st.longest_gap_s) : nullptr;
      m["min"] = st.min;
      m["mean"] = st.mean;
      m["max"] = st.max;
      metrics.push_back(std::move(m));
    }
    g["metrics"] = std::move(metrics);
    g["process_records"] = t.gpus[i].process_records;
    g["process_ids"] = t.gpus[i].process_ids;
    gpus.push_back(std::move(g));
  }
  j["gpus"] = std::move(gpus);
  nlohmann::ordered_json events = nlohmann::ordered_json::object();
  for (const auto& [kind, n] : t.events) events[kind] = n;
  j["events"] = std::move(events);
  // What the reader left out of the file (a last line cut off, CSV rows skipped), with where.
  j["warnings"] = t.warnings;
  return j;
}

namespace {

std::string or_unknown(const std::string& s) { return s.empty() ? "?" : s; }

// Text from the file, as the terminal may show it.
std::string safe(const std::string& s) { return core::terminal_safe(s); }

std::string facts_text(const std::string& path, const telemetry::TraceStats& t) {
  const auto& h = t.header;
  std::string out = fmt::format("{}: a valid gpudoc trace (format version {})\n", safe(path), h.version);
  std::vector<std::vector<std::string>> facts;
  facts.push_back({"  host", safe(or_unknown(h.host))});
  facts.push_back(
      {"  recorded by", safe(fmt::format("gpudoc {}, backend {}, driver {}, CUDA {}", or_unknown(h.gpudoc_version),
                                         or_unknown(h.system.backend), or_unknown(h.system.driver_version),
                                         or_unknown(h.system.cuda_driver_version)))});
  if (!h.command.empty()) {
    std::vector<std::string> words;
    for (const auto& a : h.command) words.push_back(safe(a));
    facts.push_back({"  command", fmt::format("{}", fmt::join(words, " "))});
  }
  facts.push_back({"  start", iso8601_utc(h.start_unix_ns)});
  facts.push_back({"  duration", t.duration_s >= 60
                                     ? fmt::format("{} ({:.1f} s)", core::human_duration(t.duration_s), t.duration_s)
                                     : core::human_duration(t.duration_s)});
  if (t.end)
    facts.push_back({"  end", fmt::format("clean ({}); {} sample lines, {} records dropped", safe(t.end->reason),
                                          t.end->sample_lines, t.end->dropped_records)});
  else
    facts.push_back({"  end", "none: the recording did not close cleanly (killed, crashed, or still running)"});
  for (const auto& w : t.warnings) facts.push_back({"  dropped", safe(w)});
  // render_table treats the first row as a header row; the facts have none, so print them plainly.
  std::size_t w = 0;
  for (const auto& f : facts) w = std::max(w, f[0].size());
  for (const auto& f : facts) out += fmt::format("{:<{}}  {}\n", f[0], w, f[1]);
  return out;
}

std::string gpu_text(std::size_t i, const gpu::DeviceInfo& d, const telemetry::GpuTraceStats& g) {
  std::string out = fmt::format("\nGPU {}: {}  {}{}\n", i, safe(or_unknown(d.name)), safe(or_unknown(d.uuid)),
                                d.pci_bus_id.empty() ? "" : fmt::format("  ({})", safe(d.pci_bus_id)));
  if (g.metrics.empty()) {
    out += "  no metric samples\n";
  } else {
    std::vector<std::vector<std::string>> rows = {
        {"metric", "samples", "interval", "period", "gaps", "longest gap", "min", "mean", "max"}};
    for (const auto& st : g.metrics) {
      const auto& mi = gpu::info(st.metric);
      rows.push_back({std::string(mi.name), std::to_string(st.samples),
                      st.mean_interval_s ? core::human_duration(*st.mean_interval_s) : "-",
                      core::human_duration(st.period_s) + (st.period_from_header ? "" : "*"), std::to_string(st.gaps),
                      st.gaps ? core::human_duration(st.longest_gap_s) : "-", format_value(st.min, mi.unit),
                      format_value(st.mean, mi.unit), format_value(st.max, mi.unit)});
    }
    std::string table = core::render_table(rows);
    // Indent the table under its GPU.
    std::size_t start = 0;
    while (start < table.size()) {
      std::size_t nl = table.find('\n', start);
      if (nl == std::string::npos) nl = table.size();
      out += "  " + table.substr(start, nl - start) + "\n";
      start = nl + 1;
    }
  }
  if (g.process_records > 0)
    out += fmt::format("  processes: {} records, {} distinct pids\n", g.process_records, g.process_ids);
  return out;
}

}  // namespace

std::string render_trace_info(const std::string& path, const telemetry::TraceStats& t) {
  std::string out = facts_text(path, t);
  for (std::size_t i = 0; i < t.gpus.size(); ++i) out += gpu_text(i, t.header.gpus[i], t.gpus[i]);
  bool any_default = false;
  for (const auto& g : t.gpus)
    for (const auto& st : g.metrics) any_default = any_default || !st.period_from_header;
  out += fmt::format("\ninterval: mean time between samples; gaps: intervals over {:.0f}x the period{}\n",
                     telemetry::kGapPeriods, any_default ? "; * period not in the header, catalog default used" : "");
  if (t.events.empty()) {
    out += "events: none\n";
  } else {
    std::vector<std::string> parts;
    for (const auto& [kind, n] : t.events) parts.push_back(fmt::format("{} {}", safe(kind), n));
    out += fmt::format("events: {}\n", fmt::join(parts, ", "));
  }
  return out;
}

}  // namespace gpudoc::view
