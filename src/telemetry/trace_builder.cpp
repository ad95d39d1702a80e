#include "telemetry/trace_builder.hpp"

#include <algorithm>
#include <bitset>
#include <cmath>
#include <exception>
#include <numeric>
#include <utility>

#include "telemetry/trace_line.hpp"

namespace gpudoc::telemetry {
namespace {

using json = nlohmann::json;

// Seconds as a file's "t" reads back: the decimal of whole microseconds, parsed to the nearest
// double, which is the correctly rounded quotient.
double seconds_of(std::int64_t us) { return static_cast<double>(us) / 1e6; }

// A string as it reads back from a file: bytes that are not UTF-8 were replaced when written.
std::string as_read_back(const std::string& s) {
  if (std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; })) return s;
  return json::parse(json(s).dump(-1, ' ', false, json::error_handler_t::replace)).get<std::string>();
}

// Event fields as they read back: the line's own keys dropped, every value through JSON text.
json fields_read_back(const json& fields) {
  if (!fields.is_object()) return json::object();
  json out = fields;
  for (const char* key : {"type", "t", "kind", "gpu"}) out.erase(key);
  return json::parse(out.dump(-1, ' ', false, json::error_handler_t::replace));
}

// The header as a reader reads it back from the file (strings repaired, absent values left out).
TraceHeader header_read_back(const TraceHeader& header) {
  std::string line;
  try {
    line = detail::header_line(header) + "\n";
  } catch (const std::exception&) {
    return header;  // a header no writer can write: kept as given
  }
  auto t = parse_trace(line, "header");
  return t ? std::move(t->header) : header;
}

template <class T>
void sort_by_t(std::vector<T>& v) {
  auto by_t = [](const T& a, const T& b) { return a.t < b.t; };
  if (!std::is_sorted(v.begin(), v.end(), by_t)) std::stable_sort(v.begin(), v.end(), by_t);
}

// Utilization samples come from the driver's buffer and arrive after later fast samples, so series
// may be out of order; a stable sort keeps equal times in the order they came.
void sort_series(Series& s) {
  if (std::is_sorted(s.t.begin(), s.t.end())) return;
  std::vector<std::size_t> order(s.t.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return s.t[a] < s.t[b]; });
  Series sorted;
  sorted.t.reserve(order.size());
  sorted.v.reserve(order.size());
  for (std::size_t i : order) {
    sorted.t.push_back(s.t[i]);
    sorted.v.push_back(s.v[i]);
  }
  s = std::move(sorted);
}

}  // namespace

// ---- TraceColumns ----------------------------------------------------------------------------

void TraceColumns::header(const TraceHeader& h) {
  trace_.header = h;
  trace_.gpus.resize(h.gpus.size());
}

void TraceColumns::sample(std::size_t gpu, gpu::Metric m, double t, double value) {
  if (!trace_.first_sample_s || t < *trace_.first_sample_s) trace_.first_sample_s = t;
  if (!trace_.last_sample_s || t > *trace_.last_sample_s) trace_.last_sample_s = t;
  if (!options_.metrics.test(gpu::index(m))) return;
  Series& s = trace_.gpus[gpu].metric(m);
  s.t.push_back(t);
  s.v.push_back(value);
}

void TraceColumns::process(std::size_t gpu, ProcessPoint&& p) {
  if (options_.processes) trace_.gpus[gpu].processes.push_back(std::move(p));
}

void TraceColumns::finish(double duration_s) {
  for (auto& g : trace_.gpus) {
    for (auto& s : g.metrics) sort_series(s);
    sort_by_t(g.processes);
  }
  sort_by_t(trace_.events);
  trace_.duration_s = duration_s;
}

// ---- TraceBuilder ----------------------------------------------------------------------------

TraceBuilder::TraceBuilder(const TraceHeader& header, const ReadOptions& options)
    : columns_(options), start_unix_ns_(header.start_unix_ns) {
  // TraceWriter's rule: GPUs are named by backend index unless the indices are the positions or
  // do not tell the GPUs apart.
  std::vector<int> sorted;
  for (std::size_t i = 0; i < header.gpus.size(); ++i) {
    index_of_slot_.push_back(header.gpus[i].index);
    sorted.push_back(header.gpus[i].index);
    identity_ = identity_ && header.gpus[i].index == static_cast<int>(i);
  }
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) identity_ = true;
  columns_.header(header_read_back(header));
}

std::optional<std::size_t> TraceBuilder::slot_of(int gpu) const {
  if (identity_) {
    if (gpu >= 0 && static_cast<std::size_t>(gpu) < index_of_slot_.size()) return static_cast<std::size_t>(gpu);
    return std::nullopt;
  }
  auto it = std::find(index_of_slot_.begin(), index_of_slot_.end(), gpu);
  if (it == index_of_slot_.end()) return std::nullopt;
  return static_cast<std::size_t>(it - index_of_slot_.begin());
}

void TraceBuilder::note_t(double t) { max_t_ = std::max(max_t_, t); }

void TraceBuilder::add(const SamplerRecord& record) {
  switch (record.kind) {
    case SamplerRecord::Kind::kSamples: add_samples(record.gpu, record.samples); break;
    case SamplerRecord::Kind::kProcesses: add_processes(record.gpu, record.processes); break;
    case SamplerRecord::Kind::kEvent:
      add_event(Event{static_cast<double>(record.time_unix_ns - start_unix_ns_) * 1e-9, record.event_kind, record.gpu,
                      record.event_fields});
      break;
  }
}

void TraceBuilder::add_samples(int gpu, std::span<const gpu::MetricSample> samples) {
  const auto slot = slot_of(gpu);
  if (!slot) return;
  // Line by line as TraceWriter::write_samples writes them: a new line at each new time or at a
  // metric already on the line; the line's t is its first sample's.
  bool open = false;
  std::int64_t line_time = 0;
  double line_t = 0;
  std::bitset<gpu::kMetricCount> on_line;
  for (const auto& s : samples) {
    if (!std::isfinite(s.value) || gpu::index(s.metric) >= gpu::kMetricCount) continue;
    if (open && (s.time_unix_ns != line_time || on_line.test(gpu::index(s.metric)))) open = false;
    if (!open) {
      auto us = detail::micros_since(s.time_unix_ns, start_unix_ns_);
      if (!us) continue;
      line_t = seconds_of(*us);
      last_t_us_ = std::max(last_t_us_, *us);
      note_t(line_t);
      ++sample_lines_;
      open = true;
      line_time = s.time_unix_ns;
      on_line.reset();
    }
    on_line.set(gpu::index(s.metric));
    columns_.sample(*slot, s.metric, line_t, s.value);
  }
}

void TraceBuilder::add_processes(int gpu, std::span<const gpu::ProcessSample> processes) {
  const auto slot = slot_of(gpu);
  if (!slot) return;
  for (const auto& p : processes) {
    auto us = detail::micros_since(p.time_unix_ns, start_unix_ns_);
    if (!us) continue;
    last_t_us_ = std::max(last_t_us_, *us);
    ProcessPoint point;
    point.t = seconds_of(*us);
    note_t(point.t);
    point.sample.pid = p.pid;
    point.sample.name = as_read_back(p.name);
    if (p.sm_utilization_percent && std::isfinite(*p.sm_utilization_percent))
      point.sample.sm_utilization_percent = p.sm_utilization_percent;
    if (p.memory_utilization_percent && std::isfinite(*p.memory_utilization_percent))
      point.sample.memory_utilization_percent = p.memory_utilization_percent;
    point.sample.memory_used_bytes = p.memory_used_bytes;
    point.sample.gpu_instance_id = p.gpu_instance_id;
    point.sample.compute_instance_id = p.compute_instance_id;
    point.sample.time_unix_ns = start_unix_ns_ + std::llround(point.t * 1e9);
    columns_.process(*slot, std::move(point));
  }
}

void TraceBuilder::add_event(const Event& event) {
  auto us = detail::micros_of_seconds(event.t);
  if (!us || event.kind.empty()) return;
  Event e;
  e.t = seconds_of(*us);
  e.kind = as_read_back(event.kind);
  if (event.gpu) {
    auto slot = slot_of(*event.gpu);
    if (slot) e.gpu = static_cast<int>(*slot);
  }
  e.fields = fields_read_back(event.fields);
  last_t_us_ = std::max(last_t_us_, *us);
  note_t(e.t);
  columns_.event(std::move(e));
}

Trace TraceBuilder::finish(const TraceSummary& summary) {
  TraceSummary end = summary;
  end.t = seconds_of(detail::micros_of_seconds(summary.t).value_or(last_t_us_));
  end.sample_lines = sample_lines_;
  end.reason = as_read_back(summary.reason);
  note_t(end.t);
  columns_.end(end);
  return finish();
}

Trace TraceBuilder::finish() {
  columns_.finish(max_t_);
  return columns_.take_trace();
}

}  // namespace gpudoc::telemetry
