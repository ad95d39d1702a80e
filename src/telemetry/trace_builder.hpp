// gpudoc::telemetry::TraceBuilder — the sampler's records (or points a live view kept) turned into
// the in-memory Trace the diagnosis reads, without a file: the same object that writing them with
// TraceWriter and reading the file back with read_trace_file produces. Times are rounded to the
// microseconds a file holds, samples outside the file's bounds and non-finite values are left out,
// GPUs are named by their position in the header, strings and event fields read as a file's would;
// the columns are built by the reader's own visitor (TraceColumns).
//
//   telemetry::TraceBuilder b(header, diagnose::read_options());
//   for (auto& rec : sampler.drain(250ms)) b.add(rec);              // samples, processes, events
//   b.add_event({t, "process_exit", std::nullopt, {{"pid", pid}}});  // the recorder's own events
//   telemetry::Trace t = b.finish(summary);                          // with the end line
//
// `gpudoc diagnose --live`, `gpudoc doctor` (through telemetry::record) and `gpudoc serve`'s
// sliding window (serve::History) build their traces here.
//
// Not thread-safe: one thread feeds a builder.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "gpu/backend.hpp"
#include "telemetry/sampler.hpp"
#include "telemetry/trace.hpp"

namespace gpudoc::telemetry {

// The visitor that turns a trace's records into columns per GPU and metric: behind read_trace_file
// and behind TraceBuilder. Each column is a vector of its own (a few MB for a day at native rates):
// when one grows, the copy is of that column only.
class TraceColumns final : public TraceVisitor {
 public:
  explicit TraceColumns(const ReadOptions& options) : options_(options) {}

  void header(const TraceHeader& h) override;
  void sample(std::size_t gpu, gpu::Metric m, double t, double value) override;
  void process(std::size_t gpu, ProcessPoint&& p) override;
  void event(Event&& e) override { trace_.events.push_back(std::move(e)); }
  void end(const TraceSummary& s) override { trace_.end = s; }
  void warning(std::string message) override { trace_.warnings.push_back(std::move(message)); }
  // Sorts every series, the process points and the events by time (stable: equal times keep the
  // order they came in).
  void finish(double duration_s) override;

  [[nodiscard]] Trace take_trace() { return std::move(trace_); }

 private:
  ReadOptions options_;
  Trace trace_;
};

class TraceBuilder {
 public:
  // `header` as it would be written (GPUs by backend index in DeviceInfo::index); the trace's header
  // is what a reader reads back from it. `options` as for read_trace_file.
  explicit TraceBuilder(const TraceHeader& header, const ReadOptions& options = {});

  // A record of the sampler; samples and processes of a GPU not in the header are left out, an
  // event of one is kept without its GPU.
  void add(const SamplerRecord& record);
  // One GPU's samples (backend index), as TraceWriter::write_samples would write them.
  void add_samples(int gpu, std::span<const gpu::MetricSample> samples);
  void add_processes(int gpu, std::span<const gpu::ProcessSample> processes);
  // t in seconds since the start; gpu, when set, a backend index. Ignored outside -1..kMaxTraceSeconds
  // or without a kind (a writer refuses them).
  void add_event(const Event& event);

  // Sample lines a file would hold so far.
  [[nodiscard]] std::uint64_t sample_lines() const { return sample_lines_; }
  [[nodiscard]] std::int64_t start_unix_ns() const { return start_unix_ns_; }

  // The trace of a recording closed cleanly: with its end line (summary.sample_lines is replaced
  // by sample_lines(), as TraceWriter::close does). The builder is spent afterwards.
  [[nodiscard]] Trace finish(const TraceSummary& summary);
  // The trace without an end line (a window of a live run), duration_s the last t seen.
  [[nodiscard]] Trace finish();

 private:
  [[nodiscard]] std::optional<std::size_t> slot_of(int gpu) const;
  void note_t(double t);

  TraceColumns columns_;
  std::int64_t start_unix_ns_ = 0;
  std::vector<int> index_of_slot_;
  bool identity_ = true;  // GPUs are named by position (TraceWriter's rule)
  std::uint64_t sample_lines_ = 0;
  double max_t_ = 0;
  std::int64_t last_t_us_ = 0;
};

}  // namespace gpudoc::telemetry
