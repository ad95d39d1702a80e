#include "profile/chrome_trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "profile/analysis.hpp"

namespace gpudoc::profile {
namespace {

constexpr int kGpuPid = 1;  // one "process" row for the GPU, one for the host
constexpr int kHostPid = 2;
constexpr int kSamplingPid = 3;  // gpudoc profile --sample: the traced windows

struct Writer {
  std::ostream& out;
  std::uint64_t origin;
  bool first = true;

  void event(const nlohmann::json& e) {
    out << (first ? "\n" : ",\n") << e.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    first = false;
  }
  void span(const std::string& name, const char* cat, int pid, std::uint64_t tid, std::uint64_t start,
            std::uint64_t end, nlohmann::json args = nlohmann::json::object()) {
    const double ts = static_cast<double>(start - std::min(start, origin)) / 1000.0;
    const double dur = static_cast<double>(end > start ? end - start : 0) / 1000.0;
    event({{"name", name},
           {"cat", cat},
           {"ph", "X"},
           {"pid", pid},
           {"tid", tid},
           {"ts", ts},
           {"dur", dur},
           {"args", std::move(args)}});
  }
};

std::uint64_t first_time(const RecordSet& s) {
  std::uint64_t t = std::numeric_limits<std::uint64_t>::max();
  if (!s.kernels.empty()) t = std::min(t, s.kernels.front().start_ns);
  if (!s.copies.empty()) t = std::min(t, s.copies.front().start_ns);
  if (!s.api_calls.empty()) t = std::min(t, s.api_calls.front().start_ns);
  if (!s.ranges.empty()) t = std::min(t, s.ranges.front().start_ns);
  return t == std::numeric_limits<std::uint64_t>::max() ? 0 : t;
}

}  // namespace

bool write_chrome_trace(const RecordSet& set, std::ostream& out) {
  Writer w{out, first_time(set)};
  out << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
  w.event({{"name", "process_name"}, {"ph", "M"}, {"pid", kGpuPid}, {"args", {{"name", "GPU"}}}});
  w.event({{"name", "process_name"},
           {"ph", "M"},
           {"pid", kHostPid},
           {"args", {{"name", fmt::format("host (pid {})", set.pid)}}}});
  for (const auto& k : set.kernels)
    w.span(short_kernel_name(k.name), "kernel", kGpuPid, k.stream, k.start_ns, k.end_ns,
           {{"grid", {k.grid[0], k.grid[1], k.grid[2]}},
            {"block", {k.block[0], k.block[1], k.block[2]}},
            {"device", k.device},
            {"correlation", k.correlation},
            {"graph", k.graph}});
  for (const auto& c : set.copies)
    w.span(c.memset       ? "memset"
           : c.pageable() ? "memcpy (pageable)"
                          : "memcpy",
           "copy", kGpuPid, c.stream, c.start_ns, c.end_ns,
           {{"bytes", c.bytes}, {"kind", c.kind}, {"device", c.device}, {"correlation", c.correlation}});
  for (const auto& a : set.api_calls)
    w.span(a.name, a.driver ? "driver" : "runtime", kHostPid, a.thread, a.start_ns, a.end_ns,
           {{"correlation", a.correlation}});
  for (const auto& r : set.ranges) w.span(r.name, "nvtx", kHostPid, r.thread, r.start_ns, r.end_ns);
  for (const auto& g : set.graph_launches)
    w.span(fmt::format("graph {}", g.graph), "graph", kGpuPid, g.stream, g.start_ns, g.end_ns);
  // --sample: the traced windows on a track of their own, so the gaps between them read as untraced
  if (!set.windows.empty()) {
    w.event({{"name", "process_name"}, {"ph", "M"}, {"pid", kSamplingPid}, {"args", {{"name", "gpudoc sampling"}}}});
    const std::uint64_t last = last_end_ns(set);
    for (const auto& win : set.windows) w.span("traced", "sampling", kSamplingPid, 0, win.start_ns, win.end_by(last));
  }
  out << "\n]}\n";
  out.flush();
  return static_cast<bool>(out);
}

core::Status save_chrome_trace(const RecordSet& set, const std::string& path) {
  std::ofstream out(path);
  if (!out || !write_chrome_trace(set, out))
    return core::Error(core::ErrorKind::kIo, fmt::format("writing the trace {}", path));
  return core::ok_status();
}

}  // namespace gpudoc::profile
