// gpudoc::telemetry traces — the recorded file format (docs/trace-format.md) and its data model.
//
// A trace is JSON Lines: a header line, then sample, process and event lines in time order of
// writing, then an "end" line when the recording closed cleanly. Readable by people and by a few
// lines of Python; gpudoc reads it into a columnar Trace for analysis and replay, or hands its
// records one by one to a TraceVisitor (a summary of a day-long trace needs no Trace in memory).
//
//   auto w = telemetry::TraceWriter::create("run.jsonl", header);   // Result<TraceWriter>
//   w->write_samples(gpu, samples);   // device metrics
//   w->write_event(event);            // process start/exit, xid, step, finding, annotation, ...
//   w->close(summary);                // writes the end line
//
//   auto t = telemetry::read_trace_file("run.jsonl");   // Result<Trace>, kBadInput names file:line
//   const Series& util = t->gpus[0].metric(gpu::Metric::kGpuUtilizationPercent);
//   for (const auto& w : t->warnings) ...               // "run.jsonl line 812: ... cut off ..."
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <bitset>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "gpu/backend.hpp"
#include "gpu/metrics.hpp"

namespace gpudoc::telemetry {

inline constexpr int kTraceFormatVersion = 1;

struct MetricColumn {
  std::string name;  // gpu::MetricInfo::name
  std::string unit;
  std::string group;           // gpu::GroupInfo::name
  std::int64_t period_ms = 0;  // how often gpudoc read it in this recording
};

struct TraceHeader {
  int version = kTraceFormatVersion;
  std::string gpudoc_version;
  std::string host;
  std::int64_t start_unix_ns = 0;                   // t = 0 in the records
  gpu::SystemInfo system;                           // backend, driver, CUDA, NVML versions
  std::vector<gpu::DeviceInfo> gpus;                // index = position
  std::vector<MetricColumn> metrics;                // what was recorded, with periods
  std::vector<std::string> command;                 // `record -- CMD ARGS...`, empty otherwise
  nlohmann::json extra = nlohmann::json::object();  // unknown header keys, kept for round-trips
};

// An event: process_start, process_exit, xid, step, finding, annotation, gpu_lost,
// gpu_unresponsive, gpu_recovered, sampler_overrun, ... Readers accept kinds they do not know.
struct Event {
  double t = 0;  // seconds since start
  std::string kind;
  std::optional<int> gpu;                            // read: position in header.gpus; written: see TraceWriter
  nlohmann::json fields = nlohmann::json::object();  // every other key of the line
};

struct TraceSummary {  // the "end" line
  double t = 0;
  std::uint64_t sample_lines = 0;
  std::uint64_t dropped_records = 0;  // records the sampler had to drop (bounded memory)
  std::string reason;                 // "duration", "command_exited", "interrupted", ...
};

// A time series: t in seconds since start, values in the metric's unit. Sorted by t.
struct Series {
  std::vector<double> t;
  std::vector<double> v;
  [[nodiscard]] bool empty() const { return t.empty(); }
  [[nodiscard]] std::size_t size() const { return t.size(); }
};

struct ProcessPoint {
  double t = 0;
  gpu::ProcessSample sample;
};

struct GpuTrace {
  std::array<Series, gpu::kMetricCount> metrics;
  std::vector<ProcessPoint> processes;
  [[nodiscard]] const Series& metric(gpu::Metric m) const { return metrics[gpu::index(m)]; }
  [[nodiscard]] Series& metric(gpu::Metric m) { return metrics[gpu::index(m)]; }
};

struct Trace {
  TraceHeader header;
  std::vector<GpuTrace> gpus;  // same order as header.gpus
  std::vector<Event> events;
  std::optional<TraceSummary> end;  // absent when the recording did not close cleanly
  double duration_s = 0;            // last t seen
  // The first and last time of any sample, of every metric, kept or not (ReadOptions). Set by the
  // reader and the importer; absent in a Trace built otherwise, or without samples.
  std::optional<double> first_sample_s, last_sample_s;
  // What the reader (or an importer) left out of a file it accepted, each naming the file and
  // line: a last line cut off mid-record, CSV rows skipped. Empty when everything was read.
  std::vector<std::string> warnings;
};

// Limits the reader enforces (absurd sizes are bad input, not an allocation).
inline constexpr std::size_t kMaxLineBytes = 1 << 20;
inline constexpr std::size_t kMaxGpus = 4096;
inline constexpr double kMaxTraceSeconds = 1.0e8;

// What a reader keeps. Everything is validated either way; what is not kept costs no memory.
struct ReadOptions {
  gpu::MetricSet metrics = gpu::MetricSet().set();  // by gpu::index(metric)
  bool processes = true;                            // per-process samples
};

// Receives the records of a trace as the reader validates them, in file order: a sample line's
// metrics one call each, processes and events as they come. File order is nearly time order
// (utilization samples arrive late; docs/trace-format.md), not exactly. Calls: header() first,
// then the records, warning() for what was dropped, finish() last (with the last t seen); none
// after an error. A visitor that needs order or totals keeps them itself.
class TraceVisitor {
 public:
  virtual ~TraceVisitor() = default;
  virtual void header(const TraceHeader& header) = 0;
  // gpu: position in header.gpus; t in seconds since the start; value finite, in the metric's unit.
  virtual void sample(std::size_t gpu, gpu::Metric metric, double t, double value) = 0;
  virtual void process(std::size_t gpu, ProcessPoint&& point) = 0;
  virtual void event(Event&& event) = 0;
  virtual void end(const TraceSummary& summary) = 0;
  virtual void warning(std::string message) = 0;
  virtual void finish(double duration_s) = 0;
};
// Hands a Trace already in memory to a visitor, in the same call order, series by series (time
// order within each), then processes, events, the end line and the warnings.
void visit_trace(const Trace& trace, TraceVisitor& visitor);

class LineReader;  // telemetry/input.hpp
// Reads a trace line by line from `lines` (positioned before line 1) and hands it to `visitor`.
// Memory: one line. Errors: kBadInput naming the file and line; kIo.
[[nodiscard]] core::Status visit_trace_lines(LineReader& lines, TraceVisitor& visitor);

// Parses a whole trace held in memory. `name` is used in messages ("run.jsonl line 812: ...").
// A last line cut off mid-record (a crash or a full disk) is dropped with a warning (the trace
// keeps what came before); anything else wrong is an error. Errors: kBadInput naming name and line.
[[nodiscard]] core::Result<Trace> parse_trace(std::string_view content, std::string_view name,
                                              const ReadOptions& options = {});
// Reads a file as a stream: memory holds the kept samples, never the file. Errors: kIo when it
// cannot be read, kBadInput as parse_trace.
[[nodiscard]] core::Result<Trace> read_trace_file(const std::string& path, const ReadOptions& options = {});
// Reads from lines already opened (read_telemetry_file detects the format first).
[[nodiscard]] core::Result<Trace> read_trace_lines(LineReader& lines, const ReadOptions& options = {});

// Writes a trace line by line. Not thread-safe: one writer thread.
class TraceWriter {
 public:
  // Creates (truncates) path and writes the header. Errors: kIo.
  [[nodiscard]] static core::Result<TraceWriter> create(const std::string& path, const TraceHeader& header);
  // Writes to an already-open FILE* (stdout, a pipe); does not close it.
  [[nodiscard]] static core::Result<TraceWriter> wrap(std::FILE* f, const TraceHeader& header);
  TraceWriter(TraceWriter&&) noexcept;
  TraceWriter& operator=(TraceWriter&&) noexcept;
  ~TraceWriter();

  // `gpu` (here and in Event::gpu) is the backend's index, as in the header's DeviceInfo::index;
  // the file records the GPU's position in the header's list (they differ when a subset is
  // recorded; when the header's indices are not distinct, `gpu` is taken as the position).
  // Errors: kInternal for a GPU not in the header or an event t outside -1..kMaxTraceSeconds;
  // kIo when writing fails (then every later call returns that error).
  // Device metrics of one GPU: consecutive samples with the same timestamp share a line; NaN/Inf
  // values and samples from before start - 1 s are not written.
  core::Status write_samples(int gpu, std::span<const gpu::MetricSample> samples);
  core::Status write_processes(int gpu, std::span<const gpu::ProcessSample> processes);
  core::Status write_event(const Event& event);
  // Pushes buffered lines to the OS (the sampler calls this at least once a second).
  core::Status flush();
  // Writes the end line, fsyncs and closes the file (a wrapped stream is flushed, not closed).
  // Idempotent: later calls return the first call's status. The end line's sample_lines is the
  // writer's own count (what the file holds), not summary.sample_lines. A writer destroyed
  // without close() closes with reason "destroyed".
  core::Status close(const TraceSummary& summary);

  [[nodiscard]] std::int64_t start_unix_ns() const;
  [[nodiscard]] std::uint64_t sample_lines() const;

 private:
  struct Impl;
  explicit TraceWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpudoc::telemetry
