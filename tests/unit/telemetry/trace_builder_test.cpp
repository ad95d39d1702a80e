// TraceBuilder: sampler records turned into the Trace the diagnosis reads, in memory — the same
// object as writing the records with TraceWriter and reading the file back.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <limits>

#include "core/clock.hpp"
#include "gpu/fake/fake_backend.hpp"
#include "telemetry/recorder.hpp"
#include "telemetry/trace_builder.hpp"
#include "telemetry/trace_line.hpp"
#include "trace_test_util.hpp"

namespace gpudoc::telemetry {
namespace {

using gpu::Metric;
using testing::at;
using testing::full_header;
using testing::kStart;

void expect_same(const Trace& a, const Trace& b) {
  EXPECT_EQ(detail::header_line(a.header), detail::header_line(b.header));
  ASSERT_EQ(a.gpus.size(), b.gpus.size());
  for (std::size_t g = 0; g < a.gpus.size(); ++g) {
    for (Metric m : gpu::all_metrics()) {
      EXPECT_EQ(a.gpus[g].metric(m).t, b.gpus[g].metric(m).t) << g << " " << gpu::info(m).name;
      EXPECT_EQ(a.gpus[g].metric(m).v, b.gpus[g].metric(m).v) << g << " " << gpu::info(m).name;
    }
    ASSERT_EQ(a.gpus[g].processes.size(), b.gpus[g].processes.size());
    for (std::size_t i = 0; i < a.gpus[g].processes.size(); ++i) {
      const auto& p = a.gpus[g].processes[i];
      const auto& q = b.gpus[g].processes[i];
      EXPECT_EQ(p.t, q.t);
      EXPECT_EQ(p.sample.pid, q.sample.pid);
      EXPECT_EQ(p.sample.name, q.sample.name);
      EXPECT_EQ(p.sample.time_unix_ns, q.sample.time_unix_ns);
      EXPECT_EQ(p.sample.sm_utilization_percent, q.sample.sm_utilization_percent);
      EXPECT_EQ(p.sample.memory_utilization_percent, q.sample.memory_utilization_percent);
      EXPECT_EQ(p.sample.memory_used_bytes, q.sample.memory_used_bytes);
      EXPECT_EQ(p.sample.gpu_instance_id, q.sample.gpu_instance_id);
      EXPECT_EQ(p.sample.compute_instance_id, q.sample.compute_instance_id);
    }
  }
  ASSERT_EQ(a.events.size(), b.events.size());
  for (std::size_t i = 0; i < a.events.size(); ++i) {
    EXPECT_EQ(a.events[i].t, b.events[i].t);
    EXPECT_EQ(a.events[i].kind, b.events[i].kind);
    EXPECT_EQ(a.events[i].gpu, b.events[i].gpu);
    EXPECT_EQ(a.events[i].fields.dump(), b.events[i].fields.dump()) << a.events[i].kind;
  }
  ASSERT_EQ(a.end.has_value(), b.end.has_value());
  if (a.end) {
    EXPECT_EQ(a.end->t, b.end->t);
    EXPECT_EQ(a.end->sample_lines, b.end->sample_lines);
    EXPECT_EQ(a.end->dropped_records, b.end->dropped_records);
    EXPECT_EQ(a.end->reason, b.end->reason);
  }
  EXPECT_EQ(a.duration_s, b.duration_s);
  EXPECT_EQ(a.first_sample_s, b.first_sample_s);
  EXPECT_EQ(a.last_sample_s, b.last_sample_s);
  EXPECT_EQ(a.warnings, b.warnings);
}

SamplerRecord samples(int gpu, std::vector<gpu::MetricSample> s) {
  SamplerRecord r;
  r.kind = SamplerRecord::Kind::kSamples;
  r.gpu = gpu;
  r.samples = std::move(s);
  return r;
}

// Records with everything a file changes: times between microseconds, a sample from before the
// file's -1 s bound, a NaN, a metric twice at one time (two lines), buffered samples older than
// the fast ones before them, a process name that is not UTF-8, integer and text event fields.
std::vector<SamplerRecord> awkward_records() {
  std::vector<SamplerRecord> out;
  out.push_back(samples(2, {{Metric::kPowerWatts, 612.25, at(0.1) + 123},
                            {Metric::kGpuTemperatureCelsius, 61, at(0.1) + 123},
                            {Metric::kPowerWatts, 613.5, at(0.1) + 123},
                            {Metric::kSmClockMhz, std::numeric_limits<double>::quiet_NaN(), at(0.2) + 999}}));
  out.push_back(samples(3, {{Metric::kPowerWatts, 1.0 / 3.0, at(0.15) - 501}}));
  out.push_back(samples(2, {{Metric::kGpuUtilizationPercent, 50, at(-3)},
                            {Metric::kGpuUtilizationPercent, 97, at(-0.5)},
                            {Metric::kGpuUtilizationPercent, 98, at(0.05) + 7}}));
  SamplerRecord procs;
  procs.kind = SamplerRecord::Kind::kProcesses;
  procs.gpu = 3;
  procs.time_unix_ns = at(0.3);
  gpu::ProcessSample p;
  p.pid = 4242;
  p.time_unix_ns = at(0.3) + 777;
  p.name = std::string("py\xff") + "thon";
  p.sm_utilization_percent = 71.5;
  p.memory_utilization_percent = std::numeric_limits<double>::infinity();
  p.memory_used_bytes = 1ULL << 40;
  procs.processes.push_back(p);
  out.push_back(procs);
  SamplerRecord xid;
  xid.kind = SamplerRecord::Kind::kEvent;
  xid.gpu = 3;
  xid.time_unix_ns = at(0.25) + 1;
  xid.event_kind = "xid";
  xid.event_fields = {{"code", 79}};
  out.push_back(xid);
  SamplerRecord lost = xid;
  lost.gpu = 2;
  lost.event_kind = "gpu_unresponsive";
  lost.event_fields = {{"group", "fast"}, {"waited_ms", 2500}};
  out.push_back(lost);
  return out;
}

TraceHeader subset_header() {
  TraceHeader h = full_header(4);
  h.gpus.erase(h.gpus.begin(), h.gpus.begin() + 2);  // GPUs 2 and 3: indices are not positions
  return h;
}

Trace written_and_read(const TraceHeader& h, const std::vector<SamplerRecord>& records, const TraceSummary& end,
                       const ReadOptions& options) {
  testing::TempFile file;
  auto w = TraceWriter::create(file.path(), h);
  EXPECT_TRUE(w) << w.error().message();
  for (const auto& r : records) {
    switch (r.kind) {
      case SamplerRecord::Kind::kSamples: EXPECT_TRUE(w->write_samples(r.gpu, r.samples)); break;
      case SamplerRecord::Kind::kProcesses: EXPECT_TRUE(w->write_processes(r.gpu, r.processes)); break;
      case SamplerRecord::Kind::kEvent:
        EXPECT_TRUE(w->write_event(
            Event{static_cast<double>(r.time_unix_ns - h.start_unix_ns) * 1e-9, r.event_kind, r.gpu, r.event_fields}));
        break;
    }
  }
  EXPECT_TRUE(w->close(end));
  auto t = read_trace_file(file.path(), options);
  EXPECT_TRUE(t) << t.error().message();
  return std::move(*t);
}

TEST(TraceBuilder, RecordsGiveTheTraceTheirFileReadsBackAs) {
  const TraceHeader h = subset_header();
  const auto records = awkward_records();
  const TraceSummary end{0.4567891, 999, 3, "duration"};
  TraceBuilder b(h);
  for (const auto& r : records) b.add(r);
  Trace built = b.finish(end);
  expect_same(built, written_and_read(h, records, end, {}));
  // What the file changed, seen in the built trace.
  EXPECT_EQ(built.gpus[0].processes.size(), 0U);
  ASSERT_EQ(built.gpus[1].processes.size(), 1U);
  EXPECT_EQ(built.gpus[1].processes[0].sample.name, "py\xEF\xBF\xBDthon");
  EXPECT_FALSE(built.gpus[1].processes[0].sample.memory_utilization_percent);
  EXPECT_EQ(built.gpus[0].metric(Metric::kPowerWatts).size(), 2U);
  EXPECT_TRUE(built.gpus[0].metric(Metric::kSmClockMhz).empty());
  EXPECT_EQ(built.gpus[0].metric(Metric::kGpuUtilizationPercent).t.front(), -0.5);
  EXPECT_EQ(built.end->sample_lines, b.sample_lines());
}

TEST(TraceBuilder, KeepsWhatTheReadOptionsKeep) {
  const TraceHeader h = subset_header();
  ReadOptions only_power;
  only_power.metrics.reset();
  only_power.metrics.set(gpu::index(Metric::kPowerWatts));
  only_power.processes = false;
  const TraceSummary end{1, 0, 0, "interrupted"};
  TraceBuilder b(h, only_power);
  for (const auto& r : awkward_records()) b.add(r);
  Trace built = b.finish(end);
  expect_same(built, written_and_read(h, awkward_records(), end, only_power));
  // first and last sample times count every metric, kept or not, as the reader's do.
  EXPECT_EQ(built.first_sample_s, -0.5);
}

TEST(TraceBuilder, AWindowHasNoEndLineAndKeepsEventsOfUnknownGpusWithoutTheirGpu) {
  TraceHeader h = full_header(1);
  TraceBuilder b(h);
  b.add(samples(0, {{Metric::kPowerWatts, 600, at(2)}}));
  b.add(samples(5, {{Metric::kPowerWatts, 600, at(2)}}));  // not in the header: left out
  SamplerRecord e;
  e.kind = SamplerRecord::Kind::kEvent;
  e.gpu = 5;
  e.time_unix_ns = at(1);
  e.event_kind = "xid";
  e.event_fields = {{"code", 13}};
  b.add(e);
  Trace t = b.finish();
  EXPECT_FALSE(t.end);
  EXPECT_EQ(t.duration_s, 2.0);
  ASSERT_EQ(t.events.size(), 1U);
  EXPECT_FALSE(t.events[0].gpu);
  EXPECT_EQ(t.gpus[0].metric(Metric::kPowerWatts).size(), 1U);
}

// The recorder with both outputs: the trace it builds in memory is the file it wrote, read back.
TEST(TraceBuilder, RecordInMemoryMatchesTheFileItWrites) {
  core::SystemClock clock;
  gpu::FakeBackend fake(clock, 2);
  fake.set_value_fn(gpu::FakeBackend::steady_load());
  testing::TempFile file;
  RecordOptions opt;
  opt.output_path = file.path();
  opt.in_memory = ReadOptions{};
  opt.duration = std::chrono::milliseconds(1200);
  opt.wake_interval = std::chrono::milliseconds(100);
  std::atomic<int> stop{0};
  auto r = record(fake, clock, opt, stop);
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_TRUE(r->trace);
  auto back = read_trace_file(file.path());
  ASSERT_TRUE(back) << back.error().message();
  expect_same(*r->trace, *back);
  EXPECT_GT(r->sample_lines, 0U);
  EXPECT_EQ(r->trace->end->sample_lines, r->sample_lines);
}

TEST(TraceBuilder, RecordInMemoryOnlyWritesNoFile) {
  core::SystemClock clock;
  gpu::FakeBackend fake(clock, 1);
  testing::TempFile file;
  RecordOptions opt;
  opt.in_memory = ReadOptions{};
  opt.duration = std::chrono::milliseconds(300);
  opt.wake_interval = std::chrono::milliseconds(50);
  std::atomic<int> stop{0};
  auto r = record(fake, clock, opt, stop);
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_TRUE(r->trace);
  EXPECT_EQ(r->trace->end->reason, "duration");
  EXPECT_FALSE(std::filesystem::exists(file.path()));
  RecordOptions neither;
  auto e = record(fake, clock, neither, stop);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().kind(), core::ErrorKind::kInternal);
}

}  // namespace
}  // namespace gpudoc::telemetry
