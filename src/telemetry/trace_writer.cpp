// The trace writer (docs/trace-format.md).
//
// Lines are built in one reused buffer and handed to the OS whole: a file we create is unbuffered
// in stdio, so what reaches the kernel is always a sequence of complete lines and a `kill -9`
// leaves a readable trace without an end line, not a cut-off record.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <bitset>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <exception>
#include <iterator>
#include <limits>
#include <utility>

#include "core/log.hpp"
#include "core/version.hpp"
#include "telemetry/trace.hpp"
#include "telemetry/trace_line.hpp"

namespace gpudoc::telemetry {
namespace {

using ojson = nlohmann::ordered_json;

// Buffered bytes before they are written; the sampler also flushes at least once a second.
constexpr std::size_t kBufferBytes = 64 * 1024;
// The reader's bounds on t, in microseconds (samples outside are never written).
constexpr std::int64_t kMinTMicros = -1'000'000;
constexpr std::int64_t kMaxTMicros = static_cast<std::int64_t>(kMaxTraceSeconds) * 1'000'000;

// A string as JSON. Process names and commands come from the system and need not be valid UTF-8:
// replace bad bytes instead of throwing.
std::string json_string(std::string_view s) {
  return nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

template <class J>
std::string dump(const J& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// t with at most 6 decimals, from integer microseconds, so no binary rounding shows: "12.345678".
void append_t(std::string& out, std::int64_t us) {
  if (us < 0) {
    out += '-';
    us = -us;
  }
  fmt::format_to(std::back_inserter(out), "{}", us / 1'000'000);
  auto frac = us % 1'000'000;
  if (frac == 0) return;
  char digits[7];
  fmt::format_to(digits, "{:06}", frac);
  std::size_t n = 6;
  while (digits[n - 1] == '0') --n;
  out += '.';
  out.append(digits, n);
}

template <class J>
void put_opt(J& j, const char* key, const std::optional<double>& v) {
  if (!v || !std::isfinite(*v)) return;  // never NaN or Inf in a trace
  // Whole values as integers ("sm_clock_max_mhz":1980), as in sample lines.
  if (std::fabs(*v) < 9.0e15 && std::trunc(*v) == *v)
    j[key] = static_cast<std::int64_t>(*v);
  else
    j[key] = *v;
}
template <class J, class T>
void put_opt(J& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}
template <class J>
void put_str(J& j, const char* key, const std::string& v) {
  if (!v.empty()) j[key] = v;  // empty = unknown = absent
}

bool is_known_header_key(const std::string& k) {
  static constexpr std::string_view kKeys[] = {
      "type",          "format",  "version",        "gpudoc_version",      "host",
      "start_unix_ns", "backend", "driver_version", "cuda_driver_version", "nvml_version",
      "command",       "gpus",    "metrics"};
  for (auto key : kKeys)
    if (key == k) return true;
  return false;
}

std::string make_header_line(const TraceHeader& h) {
  ojson j;
  j["type"] = "header";
  j["format"] = "gpudoc-trace";
  j["version"] = kTraceFormatVersion;
  j["gpudoc_version"] = h.gpudoc_version.empty() ? std::string(core::kVersion) : h.gpudoc_version;
  put_str(j, "host", h.host);
  j["start_unix_ns"] = h.start_unix_ns;
  put_str(j, "backend", h.system.backend);
  put_str(j, "driver_version", h.system.driver_version);
  put_str(j, "cuda_driver_version", h.system.cuda_driver_version);
  put_str(j, "nvml_version", h.system.nvml_version);
  j["command"] = h.command;
  ojson gpus = ojson::array();
  for (const auto& d : h.gpus) {
    ojson g;
    g["index"] = d.index;
    put_str(g, "name", d.name);
    put_str(g, "uuid", d.uuid);
    put_str(g, "pci_bus_id", d.pci_bus_id);
    put_opt(g, "memory_total_bytes", d.memory_total_bytes);
    put_opt(g, "sm_clock_max_mhz", d.sm_clock_max_mhz);
    put_opt(g, "memory_clock_max_mhz", d.memory_clock_max_mhz);
    put_opt(g, "pcie_link_generation_max", d.pcie_link_generation_max);
    put_opt(g, "pcie_link_width_max", d.pcie_link_width_max);
    put_opt(g, "power_limit_default_watts", d.power_limit_default_watts);
    put_opt(g, "temperature_slowdown_celsius", d.temperature_slowdown_celsius);
    put_opt(g, "temperature_shutdown_celsius", d.temperature_shutdown_celsius);
    put_opt(g, "temperature_gpu_max_celsius", d.temperature_gpu_max_celsius);
    put_opt(g, "temperature_memory_max_celsius", d.temperature_memory_max_celsius);
    put_opt(g, "compute_capability_major", d.compute_capability_major);
    put_opt(g, "compute_capability_minor", d.compute_capability_minor);
    put_opt(g, "mig_enabled", d.mig_enabled);
    ojson migs = ojson::array();
    for (const auto& m : d.mig_instances) {
      ojson mj;
      mj["gpu_instance_id"] = m.gpu_instance_id;
      mj["compute_instance_id"] = m.compute_instance_id;
      put_str(mj, "uuid", m.uuid);
      put_opt(mj, "memory_total_bytes", m.memory_total_bytes);
      put_opt(mj, "multiprocessor_count", m.multiprocessor_count);
      migs.push_back(std::move(mj));
    }
    g["mig_instances"] = std::move(migs);
    gpus.push_back(std::move(g));
  }
  j["gpus"] = std::move(gpus);
  ojson metrics = ojson::array();
  for (const auto& m : h.metrics) {
    ojson mj;
    mj["name"] = m.name;
    mj["unit"] = m.unit;
    mj["group"] = m.group;
    mj["period_ms"] = m.period_ms;
    metrics.push_back(std::move(mj));
  }
  j["metrics"] = std::move(metrics);
  if (h.extra.is_object())
    for (auto it = h.extra.begin(); it != h.extra.end(); ++it)
      if (!is_known_header_key(it.key())) j[it.key()] = ojson::parse(dump(it.value()));
  return dump(j);
}

core::Error bug(const std::string& message) { return core::Error(core::ErrorKind::kInternal, message); }

}  // namespace

std::string detail::header_line(const TraceHeader& header) { return make_header_line(header); }

std::optional<std::int64_t> detail::micros_since(std::int64_t time_unix_ns, std::int64_t start_unix_ns) {
  std::int64_t d = 0;
  if (__builtin_sub_overflow(time_unix_ns, start_unix_ns, &d)) return std::nullopt;
  if (d < kMinTMicros * 1000 - 500 || d > kMaxTMicros * 1000) return std::nullopt;
  std::int64_t us = d >= 0 ? (d + 500) / 1000 : -((-d + 500) / 1000);
  if (us < kMinTMicros || us > kMaxTMicros) return std::nullopt;
  return us;
}

std::optional<std::int64_t> detail::micros_of_seconds(double t) {
  if (!std::isfinite(t) || t < -1.0 || t > kMaxTraceSeconds) return std::nullopt;
  return std::llround(t * 1e6);
}

struct TraceWriter::Impl {
  std::FILE* file = nullptr;
  bool owns_file = false;
  std::string path;  // for messages; "<stream>" for wrap()
  std::int64_t start_unix_ns = 0;
  std::size_t gpu_count = 0;
  // Callers name GPUs by their backend index (DeviceInfo::index); the file by position in the
  // header's list. They differ when a subset is recorded (`record --gpus 2,3`).
  std::vector<std::pair<int, int>> slot_of_index;  // (index, position), sorted; empty = identity
  std::string buf;
  std::uint64_t sample_lines = 0;
  std::int64_t last_t_us = 0;  // the latest t written, for an end line written by the destructor
  bool closed = false;
  std::optional<core::Error> failed;  // the first I/O error; every later call returns it
  core::Status close_status;

  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // A writer dropped while open (an exception unwinding, a forgotten close) still ends its file.
  ~Impl() {
    if (closed || file == nullptr) return;
    TraceSummary s;
    s.t = static_cast<double>(last_t_us) / 1e6;
    s.reason = "destroyed";
    if (auto st = close(s); !st) core::log_warn("closing trace {}: {}", path, st.error().message());
  }

  core::Error io_error(const char* what, int err) const {
    return core::Error(core::ErrorKind::kIo, fmt::format("{} {}: {}", what, path, std::strerror(err)));
  }

  core::Status drain() {
    if (failed) return *failed;
    if (buf.empty()) return core::ok_status();
    errno = 0;
    std::size_t n = std::fwrite(buf.data(), 1, buf.size(), file);
    if (n != buf.size()) {
      failed = io_error("writing", errno != 0 ? errno : EIO);
      return *failed;
    }
    buf.clear();
    return core::ok_status();
  }

  core::Status maybe_drain() { return buf.size() >= kBufferBytes ? drain() : core::ok_status(); }

  core::Status flush() {
    if (auto st = drain(); !st) return st;
    errno = 0;
    if (std::fflush(file) != 0) {
      failed = io_error("writing", errno != 0 ? errno : EIO);
      return *failed;
    }
    return core::ok_status();
  }

  // The position in the header of the GPU the caller calls `gpu`.
  core::Result<int> slot(int gpu) const {
    if (slot_of_index.empty()) {
      if (gpu >= 0 && static_cast<std::size_t>(gpu) < gpu_count) return gpu;
    } else {
      auto it = std::lower_bound(slot_of_index.begin(), slot_of_index.end(), std::pair<int, int>(gpu, -1));
      if (it != slot_of_index.end() && it->first == gpu) return it->second;
    }
    std::vector<int> known;
    for (const auto& [index, position] : slot_of_index) known.push_back(index);
    if (slot_of_index.empty())
      for (std::size_t i = 0; i < gpu_count; ++i) known.push_back(static_cast<int>(i));
    if (known.size() > 16) known.resize(16);  // enough to see the numbering
    return bug(fmt::format("TraceWriter: GPU {} is not in the trace header (its GPUs: {}{})", gpu,
                           fmt::join(known, ", "), gpu_count > known.size() ? ", ..." : ""));
  }

  void note_t(std::int64_t us) { last_t_us = std::max(last_t_us, us); }

  // Writes the header line and hands it to the OS at once: a trace file that exists is readable.
  core::Status start(const TraceHeader& header) {
    if (header.gpus.size() > kMaxGpus) return bug(fmt::format("a trace holds at most {} GPUs", kMaxGpus));
    start_unix_ns = header.start_unix_ns;
    gpu_count = header.gpus.size();
    for (std::size_t i = 0; i < header.gpus.size(); ++i)
      slot_of_index.emplace_back(header.gpus[i].index, static_cast<int>(i));
    std::sort(slot_of_index.begin(), slot_of_index.end());
    bool identity = true;
    bool distinct = true;
    for (std::size_t i = 0; i < header.gpus.size(); ++i)
      identity = identity && header.gpus[i].index == static_cast<int>(i);
    for (std::size_t i = 1; i < slot_of_index.size(); ++i)
      distinct = distinct && slot_of_index[i - 1].first != slot_of_index[i].first;
    // Indices that do not identify a GPU (a hand-made header) leave the caller's numbers as positions.
    if (identity || !distinct) slot_of_index.clear();
    try {
      buf = make_header_line(header);
    } catch (const std::exception& e) {
      return bug(fmt::format("writing the trace header: {}", e.what()));
    }
    buf += '\n';
    return flush();
  }

  core::Status close(const TraceSummary& summary) {
    if (closed) return close_status;
    closed = true;
    if (!failed) {
      auto t_us = detail::micros_of_seconds(summary.t).value_or(last_t_us);
      buf += "{\"type\":\"end\",\"t\":";
      append_t(buf, t_us);
      fmt::format_to(std::back_inserter(buf), ",\"sample_lines\":{},\"dropped_records\":{},\"reason\":{}}}\n",
                     sample_lines, summary.dropped_records, json_string(summary.reason));
    }
    core::Status st = flush();
    // fsync: the end line is the proof of a clean recording; make it survive a power loss. Pipes
    // and terminals (wrap(stdout)) cannot be synced, which is fine.
    // Memory streams (open_memstream) have no descriptor at all.
    const int fd = ::fileno(file);
    if (st && fd >= 0 && ::fsync(fd) != 0 && errno != EINVAL && errno != EROFS && errno != ENOTSUP)
      st = io_error("syncing", errno);
    if (owns_file && std::fclose(file) != 0 && st) st = io_error("closing", errno);
    file = nullptr;
    close_status = st;
    return st;
  }
};

TraceWriter::TraceWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TraceWriter::TraceWriter(TraceWriter&&) noexcept = default;
TraceWriter& TraceWriter::operator=(TraceWriter&&) noexcept = default;
TraceWriter::~TraceWriter() = default;

core::Result<TraceWriter> TraceWriter::create(const std::string& path, const TraceHeader& header) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  // "e": O_CLOEXEC, so the command gpudoc records does not inherit the trace's descriptor.
  impl->file = std::fopen(path.c_str(), "wbe");
  if (impl->file == nullptr) return impl->io_error("creating", errno);
  impl->owns_file = true;
  // Unbuffered: our own buffer holds whole lines, so the kernel only ever sees whole lines.
  std::setvbuf(impl->file, nullptr, _IONBF, 0);
  if (auto st = impl->start(header); !st) {
    impl->closed = true;  // no end line after a header that was never written
    std::fclose(impl->file);
    return st.error();
  }
  return TraceWriter(std::move(impl));
}

core::Result<TraceWriter> TraceWriter::wrap(std::FILE* f, const TraceHeader& header) {
  if (f == nullptr) return bug("TraceWriter::wrap: no stream");
  auto impl = std::make_unique<Impl>();
  impl->path = "<stream>";
  impl->file = f;
  if (auto st = impl->start(header); !st) {
    impl->closed = true;
    return st.error();
  }
  return TraceWriter(std::move(impl));
}

core::Status TraceWriter::write_samples(int gpu, std::span<const gpu::MetricSample> samples) {
  Impl& w = *impl_;
  if (w.closed) return bug("TraceWriter: write after close");
  if (w.failed) return *w.failed;
  auto slot = w.slot(gpu);
  if (!slot) return slot.error();
  bool open = false;
  std::int64_t line_time = 0;
  std::bitset<gpu::kMetricCount> on_line;
  for (const auto& s : samples) {
    if (!std::isfinite(s.value) || gpu::index(s.metric) >= gpu::kMetricCount) continue;
    if (open && (s.time_unix_ns != line_time || on_line.test(gpu::index(s.metric)))) {
      w.buf += "}\n";
      open = false;
    }
    if (!open) {
      // Samples before start - 1 s (the utilization buffer reaches back ~14 s) are not written.
      auto us = detail::micros_since(s.time_unix_ns, w.start_unix_ns);
      if (!us) continue;
      w.buf += "{\"type\":\"sample\",\"t\":";
      append_t(w.buf, *us);
      fmt::format_to(std::back_inserter(w.buf), ",\"gpu\":{}", *slot);
      w.note_t(*us);
      ++w.sample_lines;
      open = true;
      line_time = s.time_unix_ns;
      on_line.reset();
    }
    on_line.set(gpu::index(s.metric));
    fmt::format_to(std::back_inserter(w.buf), ",\"{}\":{}", gpu::info(s.metric).name, s.value);
  }
  if (open) w.buf += "}\n";
  return w.maybe_drain();
}

core::Status TraceWriter::write_processes(int gpu, std::span<const gpu::ProcessSample> processes) {
  Impl& w = *impl_;
  if (w.closed) return bug("TraceWriter: write after close");
  if (w.failed) return *w.failed;
  auto slot = w.slot(gpu);
  if (!slot) return slot.error();
  auto out = std::back_inserter(w.buf);
  for (const auto& p : processes) {
    auto us = detail::micros_since(p.time_unix_ns, w.start_unix_ns);
    if (!us) continue;
    w.buf += "{\"type\":\"process\",\"t\":";
    append_t(w.buf, *us);
    w.note_t(*us);
    fmt::format_to(out, ",\"gpu\":{},\"pid\":{}", *slot, p.pid);
    if (!p.name.empty()) fmt::format_to(out, ",\"name\":{}", json_string(p.name));
    if (p.sm_utilization_percent && std::isfinite(*p.sm_utilization_percent))
      fmt::format_to(out, ",\"sm_utilization_percent\":{}", *p.sm_utilization_percent);
    if (p.memory_utilization_percent && std::isfinite(*p.memory_utilization_percent))
      fmt::format_to(out, ",\"memory_utilization_percent\":{}", *p.memory_utilization_percent);
    if (p.memory_used_bytes) fmt::format_to(out, ",\"memory_used_bytes\":{}", *p.memory_used_bytes);
    if (p.gpu_instance_id) fmt::format_to(out, ",\"gpu_instance_id\":{}", *p.gpu_instance_id);
    if (p.compute_instance_id) fmt::format_to(out, ",\"compute_instance_id\":{}", *p.compute_instance_id);
    w.buf += "}\n";
  }
  return w.maybe_drain();
}

core::Status TraceWriter::write_event(const Event& event) {
  Impl& w = *impl_;
  if (w.closed) return bug("TraceWriter: write after close");
  if (w.failed) return *w.failed;
  auto us = detail::micros_of_seconds(event.t);
  if (!us) return bug(fmt::format("TraceWriter: event t {} is outside -1..{:.0f} s", event.t, kMaxTraceSeconds));
  if (event.kind.empty()) return bug("TraceWriter: an event needs a kind");
  std::optional<int> slot;
  if (event.gpu) {
    auto s = w.slot(*event.gpu);
    if (!s) return s.error();
    slot = *s;
  }
  if (!event.fields.is_object() && !event.fields.is_null()) return bug("TraceWriter: event fields must be an object");
  std::string line;
  try {
    line = "{\"type\":\"event\",\"t\":";
    append_t(line, *us);
    line += ",\"kind\":";
    line += json_string(event.kind);
    if (slot) fmt::format_to(std::back_inserter(line), ",\"gpu\":{}", *slot);
    if (event.fields.is_object()) {
      for (auto it = event.fields.begin(); it != event.fields.end(); ++it) {
        const std::string& k = it.key();
        if (k == "type" || k == "t" || k == "kind" || k == "gpu") continue;  // the line's own keys win
        line += ',';
        line += json_string(k);
        line += ':';
        line += dump(it.value());
      }
    }
    line += "}\n";
  } catch (const std::exception& e) {
    return bug(fmt::format("TraceWriter: writing an event: {}", e.what()));
  }
  w.note_t(*us);
  w.buf += line;
  return w.maybe_drain();
}

core::Status TraceWriter::flush() {
  Impl& w = *impl_;
  if (w.closed) return w.close_status;
  return w.flush();
}

core::Status TraceWriter::close(const TraceSummary& summary) { return impl_->close(summary); }

std::int64_t TraceWriter::start_unix_ns() const { return impl_->start_unix_ns; }
std::uint64_t TraceWriter::sample_lines() const { return impl_->sample_lines; }

}  // namespace gpudoc::telemetry
