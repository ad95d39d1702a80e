#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "telemetry/trace.hpp"
#include "trace_test_util.hpp"

namespace gpudoc::telemetry {
namespace {

using gpu::Metric;
using testing::at;
using testing::full_header;
using testing::kStart;
using testing::lines_of;
using testing::slurp;
using testing::TempFile;

Trace read_back(const std::string& path) {
  auto t = read_trace_file(path);
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message());
  return t.ok() ? std::move(t.value()) : Trace{};
}

TEST(TraceWriter, RoundTripsEveryField) {
  TempFile f;
  TraceHeader h = full_header(2);
  {
    auto w = TraceWriter::create(f.path(), h);
    ASSERT_TRUE(w.ok()) << w.error().message();
    std::vector<gpu::MetricSample> fast = {{Metric::kPowerWatts, 312.5, at(0.1)},
                                           {Metric::kSmClockMhz, 1980, at(0.1)},
                                           {Metric::kMemoryUsedBytes, 81'604'378'624.0, at(0.1)},
                                           {Metric::kClockEventReasonsMask, 4, at(0.1)},
                                           {Metric::kPowerWatts, 313.25, at(0.2)}};
    ASSERT_TRUE(w->write_samples(0, fast).ok());
    std::vector<gpu::MetricSample> other = {{Metric::kGpmSmActivityPercent, 87.125, at(0.3)},
                                            {Metric::kEnergyJoules, 123456.789, at(0.3)}};
    ASSERT_TRUE(w->write_samples(1, other).ok());

    gpu::ProcessSample full;
    full.pid = 4242;
    full.time_unix_ns = at(1.5);
    full.name = "python3";
    full.sm_utilization_percent = 97;
    full.memory_utilization_percent = 40.5;
    full.memory_used_bytes = 70'000'000'000ULL;
    full.gpu_instance_id = 1;
    full.compute_instance_id = 0;
    gpu::ProcessSample bare;
    bare.pid = 7;
    bare.time_unix_ns = at(1.5);
    std::vector<gpu::ProcessSample> procs = {full, bare};
    ASSERT_TRUE(w->write_processes(1, procs).ok());

    Event start{0.0, "process_start", std::nullopt, {{"pid", 4242}, {"command", {"python3", "train.py"}}}};
    Event xid{2.25, "xid", 1, {{"code", 79}}};
    Event step{2.5, "step", std::nullopt, {{"step_ms", 412.5}, {"loss", 1.25}, {"step", 10}}};
    Event future{2.75, "thermal_event_from_the_future", 0, {{"zone", "hbm"}, {"nested", {{"a", 1}}}}};
    for (const Event* e : {&start, &xid, &step, &future}) ASSERT_TRUE(w->write_event(*e).ok());
    EXPECT_EQ(w->sample_lines(), 3u);
    EXPECT_EQ(w->start_unix_ns(), kStart);
    ASSERT_TRUE(w->close({3.0, 0, 17, "command_exited"}).ok());
  }
  Trace t = read_back(f.path());

  // Header.
  const TraceHeader& r = t.header;
  EXPECT_EQ(r.version, 1);
  EXPECT_EQ(r.gpudoc_version, "0.1.0");
  EXPECT_EQ(r.host, "node7");
  EXPECT_EQ(r.start_unix_ns, kStart);
  EXPECT_EQ(r.system.backend, "nvml");
  EXPECT_EQ(r.system.driver_version, "580.159.03");
  EXPECT_EQ(r.system.cuda_driver_version, "13.0");
  EXPECT_EQ(r.system.nvml_version, "12.580.159.03");
  EXPECT_EQ(r.command, h.command);
  EXPECT_EQ(r.extra, h.extra);
  ASSERT_EQ(r.metrics.size(), h.metrics.size());
  for (std::size_t i = 0; i < r.metrics.size(); ++i) {
    EXPECT_EQ(r.metrics[i].name, h.metrics[i].name);
    EXPECT_EQ(r.metrics[i].unit, h.metrics[i].unit);
    EXPECT_EQ(r.metrics[i].group, h.metrics[i].group);
    EXPECT_EQ(r.metrics[i].period_ms, h.metrics[i].period_ms);
  }
  ASSERT_EQ(r.gpus.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& a = r.gpus[i];
    const auto& b = h.gpus[i];
    EXPECT_EQ(a.index, b.index);
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.uuid, b.uuid);
    EXPECT_EQ(a.pci_bus_id, b.pci_bus_id);
    EXPECT_EQ(a.memory_total_bytes, b.memory_total_bytes);
    EXPECT_EQ(a.sm_clock_max_mhz, b.sm_clock_max_mhz);
    EXPECT_EQ(a.memory_clock_max_mhz, b.memory_clock_max_mhz);
    EXPECT_EQ(a.pcie_link_generation_max, b.pcie_link_generation_max);
    EXPECT_EQ(a.pcie_link_width_max, b.pcie_link_width_max);
    EXPECT_EQ(a.power_limit_default_watts, b.power_limit_default_watts);
    EXPECT_EQ(a.temperature_slowdown_celsius, b.temperature_slowdown_celsius);
    EXPECT_EQ(a.temperature_shutdown_celsius, b.temperature_shutdown_celsius);
    EXPECT_EQ(a.temperature_gpu_max_celsius, b.temperature_gpu_max_celsius);
    EXPECT_EQ(a.temperature_memory_max_celsius, b.temperature_memory_max_celsius);
    EXPECT_EQ(a.compute_capability_major, b.compute_capability_major);
    EXPECT_EQ(a.compute_capability_minor, b.compute_capability_minor);
    EXPECT_EQ(a.mig_enabled, b.mig_enabled);
    ASSERT_EQ(a.mig_instances.size(), b.mig_instances.size());
    for (std::size_t k = 0; k < a.mig_instances.size(); ++k) {
      EXPECT_EQ(a.mig_instances[k].gpu_instance_id, b.mig_instances[k].gpu_instance_id);
      EXPECT_EQ(a.mig_instances[k].compute_instance_id, b.mig_instances[k].compute_instance_id);
      EXPECT_EQ(a.mig_instances[k].uuid, b.mig_instances[k].uuid);
      EXPECT_EQ(a.mig_instances[k].memory_total_bytes, b.mig_instances[k].memory_total_bytes);
      EXPECT_EQ(a.mig_instances[k].multiprocessor_count, b.mig_instances[k].multiprocessor_count);
    }
  }

  // Samples, columnar.
  ASSERT_EQ(t.gpus.size(), 2u);
  const Series& power = t.gpus[0].metric(Metric::kPowerWatts);
  EXPECT_EQ(power.t, (std::vector<double>{0.1, 0.2}));
  EXPECT_EQ(power.v, (std::vector<double>{312.5, 313.25}));
  EXPECT_EQ(t.gpus[0].metric(Metric::kSmClockMhz).v, std::vector<double>{1980});
  EXPECT_EQ(t.gpus[0].metric(Metric::kMemoryUsedBytes).v, std::vector<double>{81'604'378'624.0});
  EXPECT_EQ(t.gpus[0].metric(Metric::kClockEventReasonsMask).v, std::vector<double>{4});
  EXPECT_EQ(t.gpus[1].metric(Metric::kGpmSmActivityPercent).v, std::vector<double>{87.125});
  EXPECT_EQ(t.gpus[1].metric(Metric::kEnergyJoules).v, std::vector<double>{123456.789});
  EXPECT_TRUE(t.gpus[1].metric(Metric::kPowerWatts).empty());

  // Processes.
  ASSERT_EQ(t.gpus[1].processes.size(), 2u);
  const auto& p = t.gpus[1].processes[0];
  EXPECT_DOUBLE_EQ(p.t, 1.5);
  EXPECT_EQ(p.sample.pid, 4242u);
  EXPECT_EQ(p.sample.time_unix_ns, at(1.5));
  EXPECT_EQ(p.sample.name, "python3");
  EXPECT_EQ(p.sample.sm_utilization_percent, 97.0);
  EXPECT_EQ(p.sample.memory_utilization_percent, 40.5);
  EXPECT_EQ(p.sample.memory_used_bytes, 70'000'000'000ULL);
  EXPECT_EQ(p.sample.gpu_instance_id, 1u);
  EXPECT_EQ(p.sample.compute_instance_id, 0u);
  const auto& q = t.gpus[1].processes[1];
  EXPECT_EQ(q.sample.pid, 7u);
  EXPECT_EQ(q.sample.name, "");
  EXPECT_FALSE(q.sample.sm_utilization_percent);
  EXPECT_FALSE(q.sample.memory_utilization_percent);
  EXPECT_FALSE(q.sample.memory_used_bytes);
  EXPECT_FALSE(q.sample.gpu_instance_id);
  EXPECT_FALSE(q.sample.compute_instance_id);
  EXPECT_TRUE(t.gpus[0].processes.empty());

  // Events, unknown kinds included, with their fields.
  ASSERT_EQ(t.events.size(), 4u);
  EXPECT_EQ(t.events[0].kind, "process_start");
  EXPECT_FALSE(t.events[0].gpu);
  EXPECT_EQ(t.events[0].fields, (nlohmann::json{{"pid", 4242}, {"command", {"python3", "train.py"}}}));
  EXPECT_EQ(t.events[1].kind, "xid");
  EXPECT_EQ(t.events[1].gpu, 1);
  EXPECT_DOUBLE_EQ(t.events[1].t, 2.25);
  EXPECT_EQ(t.events[1].fields, (nlohmann::json{{"code", 79}}));
  EXPECT_EQ(t.events[2].fields["loss"], 1.25);
  EXPECT_EQ(t.events[3].kind, "thermal_event_from_the_future");
  EXPECT_EQ(t.events[3].gpu, 0);
  EXPECT_EQ(t.events[3].fields, (nlohmann::json{{"zone", "hbm"}, {"nested", {{"a", 1}}}}));

  // End.
  ASSERT_TRUE(t.end);
  EXPECT_DOUBLE_EQ(t.end->t, 3.0);
  EXPECT_EQ(t.end->sample_lines, 3u);  // the writer's own count
  EXPECT_EQ(t.end->dropped_records, 17u);
  EXPECT_EQ(t.end->reason, "command_exited");
  EXPECT_DOUBLE_EQ(t.duration_s, 3.0);
}

TEST(TraceWriter, WritesTheDocumentedLines) {
  TempFile f;
  TraceHeader h = full_header(1);
  auto w = TraceWriter::create(f.path(), h);
  ASSERT_TRUE(w.ok());
  std::vector<gpu::MetricSample> s = {{Metric::kPowerWatts, 312.5, kStart + 12'345'678'000},
                                      {Metric::kSmClockMhz, 1980, kStart + 12'345'678'000},
                                      {Metric::kPowerWatts, 300, kStart + 12'500'000'400},   // rounds to 12.5
                                      {Metric::kPowerWatts, 301, kStart + 13'000'000'000}};  // whole second
  ASSERT_TRUE(w->write_samples(0, s).ok());
  gpu::ProcessSample p;
  p.pid = 1234;
  p.time_unix_ns = kStart + 14'000'001'000;
  p.name = "python3";
  p.memory_used_bytes = 1000;
  std::vector<gpu::ProcessSample> ps = {p};
  ASSERT_TRUE(w->write_processes(0, ps).ok());
  ASSERT_TRUE(w->write_event({14.5, "annotation", std::nullopt, {{"text", "warmup done"}}}).ok());
  ASSERT_TRUE(w->close({15, 3, 0, "duration"}).ok());
  auto lines = lines_of(slurp(f.path()));
  ASSERT_EQ(lines.size(), 7u);
  EXPECT_EQ(
      lines[0].rfind("{\"type\":\"header\",\"format\":\"gpudoc-trace\",\"version\":1,\"gpudoc_version\":\"0.1.0\","
                     "\"host\":\"node7\",\"start_unix_ns\":1780000000000000000,\"backend\":\"nvml\",",
                     0),
      0u)
      << lines[0];
  EXPECT_EQ(lines[1], R"({"type":"sample","t":12.345678,"gpu":0,"power_watts":312.5,"sm_clock_mhz":1980})");
  EXPECT_EQ(lines[2], R"({"type":"sample","t":12.5,"gpu":0,"power_watts":300})");
  EXPECT_EQ(lines[3], R"({"type":"sample","t":13,"gpu":0,"power_watts":301})");
  EXPECT_EQ(lines[4],
            R"({"type":"process","t":14.000001,"gpu":0,"pid":1234,"name":"python3","memory_used_bytes":1000})");
  EXPECT_EQ(lines[5], R"({"type":"event","t":14.5,"kind":"annotation","text":"warmup done"})");
  EXPECT_EQ(lines[6], R"({"type":"end","t":15,"sample_lines":3,"dropped_records":0,"reason":"duration"})");
}

TEST(TraceWriter, MergesOnlyConsecutiveSamplesOfOneTimestamp) {
  TempFile f;
  auto w = TraceWriter::create(f.path(), full_header(1));
  ASSERT_TRUE(w.ok());
  std::vector<gpu::MetricSample> s = {{Metric::kPowerWatts, 1, at(1)},
                                      {Metric::kSmClockMhz, 2, at(1)},
                                      {Metric::kPowerWatts, 3, at(2)},
                                      {Metric::kSmClockMhz, 4, at(1)},   // back to t=1: a new line
                                      {Metric::kSmClockMhz, 5, at(1)}};  // same metric again: a new line
  ASSERT_TRUE(w->write_samples(0, s).ok());
  ASSERT_TRUE(w->close({2, 0, 0, "duration"}).ok());
  auto lines = lines_of(slurp(f.path()));
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[1], R"({"type":"sample","t":1,"gpu":0,"power_watts":1,"sm_clock_mhz":2})");
  EXPECT_EQ(lines[2], R"({"type":"sample","t":2,"gpu":0,"power_watts":3})");
  EXPECT_EQ(lines[3], R"({"type":"sample","t":1,"gpu":0,"sm_clock_mhz":4})");
  EXPECT_EQ(lines[4], R"({"type":"sample","t":1,"gpu":0,"sm_clock_mhz":5})");
  Trace t = read_back(f.path());
  EXPECT_EQ(t.gpus[0].metric(Metric::kSmClockMhz).v, (std::vector<double>{2, 4, 5}));  // stable by t
}

TEST(TraceWriter, NeverWritesNanOrInfAndAbsentStaysAbsent) {
  TempFile f;
  auto w = TraceWriter::create(f.path(), full_header(1));
  ASSERT_TRUE(w.ok());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<gpu::MetricSample> s = {{Metric::kPowerWatts, nan, at(1)},
                                      {Metric::kSmClockMhz, 0, at(1)},
                                      {Metric::kPowerWatts, inf, at(2)}};  // a line of nothing: not written
  ASSERT_TRUE(w->write_samples(0, s).ok());
  gpu::ProcessSample p;
  p.pid = 1;
  p.time_unix_ns = at(3);
  p.sm_utilization_percent = nan;
  std::vector<gpu::ProcessSample> ps = {p};
  ASSERT_TRUE(w->write_processes(0, ps).ok());
  ASSERT_TRUE(w->close({3, 0, 0, "duration"}).ok());
  std::string content = slurp(f.path());
  EXPECT_EQ(content.find("nan"), std::string::npos);
  EXPECT_EQ(content.find("inf"), std::string::npos);
  EXPECT_EQ(content.find("null"), std::string::npos);
  Trace t = read_back(f.path());
  EXPECT_TRUE(t.gpus[0].metric(Metric::kPowerWatts).empty());                  // not read, not 0
  EXPECT_EQ(t.gpus[0].metric(Metric::kSmClockMhz).v, std::vector<double>{0});  // a real 0 stays 0
  EXPECT_FALSE(t.gpus[0].processes[0].sample.sm_utilization_percent);
  EXPECT_EQ(t.end->sample_lines, 1u);
}

TEST(TraceWriter, SkipsSamplesFromBeforeTheRecordingStarted) {
  TempFile f;
  auto w = TraceWriter::create(f.path(), full_header(1));
  ASSERT_TRUE(w.ok());
  // The utilization buffer reaches back ~14 s: only samples from t >= -1 are written.
  std::vector<gpu::MetricSample> s = {{Metric::kGpuUtilizationPercent, 10, at(-5)},
                                      {Metric::kGpuUtilizationPercent, 20, at(-0.5)},
                                      {Metric::kGpuUtilizationPercent, 30, at(0.5)}};
  ASSERT_TRUE(w->write_samples(0, s).ok());
  ASSERT_TRUE(w->close({1, 0, 0, "duration"}).ok());
  Trace t = read_back(f.path());
  EXPECT_EQ(t.gpus[0].metric(Metric::kGpuUtilizationPercent).t, (std::vector<double>{-0.5, 0.5}));
}

TEST(TraceWriter, CloseIsIdempotentAndTheDestructorEndsTheFile) {
  TempFile a;
  {
    auto w = TraceWriter::create(a.path(), full_header(1));
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w->close({1, 0, 0, "duration"}).ok());
    EXPECT_TRUE(w->close({2, 0, 0, "again"}).ok());
    EXPECT_EQ(w->write_samples(0, {}).error().kind(), core::ErrorKind::kInternal);
  }
  EXPECT_EQ(lines_of(slurp(a.path())).size(), 2u);
  EXPECT_EQ(read_back(a.path()).end->reason, "duration");

  TempFile b;
  {
    auto w = TraceWriter::create(b.path(), full_header(1));
    ASSERT_TRUE(w.ok());
    std::vector<gpu::MetricSample> s = {{Metric::kPowerWatts, 1, at(4.5)}};
    ASSERT_TRUE(w->write_samples(0, s).ok());
  }
  Trace t = read_back(b.path());
  ASSERT_TRUE(t.end);
  EXPECT_EQ(t.end->reason, "destroyed");
  EXPECT_DOUBLE_EQ(t.end->t, 4.5);
}

TEST(TraceWriter, FlushMakesLinesVisibleAndATraceWithoutEndIsValid) {
  TempFile f;
  auto w = TraceWriter::create(f.path(), full_header(1));
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(lines_of(slurp(f.path())).size(), 1u);  // the header is written at once
  std::vector<gpu::MetricSample> s = {{Metric::kPowerWatts, 1, at(1)}};
  ASSERT_TRUE(w->write_samples(0, s).ok());
  ASSERT_TRUE(w->flush().ok());
  // What a reader sees while the recording runs, or after kill -9: no end line, still valid.
  auto t = parse_trace(slurp(f.path()), "live.jsonl");
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_FALSE(t->end);
  EXPECT_EQ(t->gpus[0].metric(Metric::kPowerWatts).size(), 1u);
  EXPECT_DOUBLE_EQ(t->duration_s, 1.0);
}

TEST(TraceWriter, MovedWriterKeepsWriting) {
  TempFile f;
  auto w = TraceWriter::create(f.path(), full_header(1));
  ASSERT_TRUE(w.ok());
  TraceWriter moved = std::move(w.value());
  std::vector<gpu::MetricSample> s = {{Metric::kPowerWatts, 1, at(1)}};
  ASSERT_TRUE(moved.write_samples(0, s).ok());
  ASSERT_TRUE(moved.close({1, 0, 0, "duration"}).ok());
  EXPECT_EQ(read_back(f.path()).gpus[0].metric(Metric::kPowerWatts).size(), 1u);
}

TEST(TraceWriter, WrapsAStreamWithoutClosingIt) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    auto w = TraceWriter::wrap(f, full_header(1));
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w->write_event({0.5, "annotation", std::nullopt, {{"text", "hi"}}}).ok());
    ASSERT_TRUE(w->close({1, 0, 0, "duration"}).ok());
  }
  std::rewind(f);  // still open: wrap() does not own it
  std::string content;
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) content.append(buf, n);
  std::fclose(f);
  auto t = parse_trace(content, "stream");
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->events.size(), 1u);
}

TEST(TraceWriter, ReportsIoErrorsWithThePath) {
  auto w = TraceWriter::create("/nonexistent-dir/run.jsonl", full_header(1));
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().kind(), core::ErrorKind::kIo);
  EXPECT_EQ(w.error().message(), "creating /nonexistent-dir/run.jsonl: No such file or directory");

  if (std::FILE* probe = std::fopen("/dev/full", "w")) {
    std::fclose(probe);
    auto full = TraceWriter::create("/dev/full", full_header(1));
    ASSERT_FALSE(full.ok());
    EXPECT_EQ(full.error().kind(), core::ErrorKind::kIo);
    EXPECT_EQ(full.error().message(), "writing /dev/full: No space left on device");
  }
}

TEST(TraceWriter, RejectsMisuse) {
  TempFile f;
  auto w = TraceWriter::create(f.path(), full_header(1));
  ASSERT_TRUE(w.ok());
  std::vector<gpu::MetricSample> s = {{Metric::kPowerWatts, 1, at(1)}};
  EXPECT_EQ(w->write_samples(1, s).error().message(), "TraceWriter: GPU 1 is not in the trace header (its GPUs: 0)");
  EXPECT_EQ(w->write_event({std::nan(""), "x", std::nullopt, {}}).error().kind(), core::ErrorKind::kInternal);
  EXPECT_EQ(w->write_event({1, "", std::nullopt, {}}).error().kind(), core::ErrorKind::kInternal);
  EXPECT_EQ(w->write_event({1, "x", 3, {}}).error().kind(), core::ErrorKind::kInternal);
  // Reserved keys in fields do not override the line's own.
  ASSERT_TRUE(w->write_event({1, "x", std::nullopt, {{"type", "sample"}, {"kind", "y"}, {"k", 1}}}).ok());
  ASSERT_TRUE(w->close({1, 0, 0, "duration"}).ok());
  Trace t = read_back(f.path());
  ASSERT_EQ(t.events.size(), 1u);
  EXPECT_EQ(t.events[0].kind, "x");
  EXPECT_EQ(t.events[0].fields, (nlohmann::json{{"k", 1}}));
}

TEST(TraceWriter, NumbersARecordedSubsetByPositionInTheHeader) {
  // `record --gpus 2,3`: the sampler names GPUs 2 and 3; the file calls them 0 and 1.
  TraceHeader h = full_header(0);
  h.gpus = {testing::full_device(3), testing::full_device(2)};
  TempFile f;
  auto w = TraceWriter::create(f.path(), h);
  ASSERT_TRUE(w.ok());
  std::vector<gpu::MetricSample> s = {{Metric::kPowerWatts, 2, at(1)}};
  ASSERT_TRUE(w->write_samples(2, s).ok());
  gpu::ProcessSample p;
  p.pid = 3;
  p.time_unix_ns = at(1);
  std::vector<gpu::ProcessSample> ps = {p};
  ASSERT_TRUE(w->write_processes(3, ps).ok());
  ASSERT_TRUE(w->write_event({1, "xid", 3, {{"code", 79}}}).ok());
  EXPECT_EQ(w->write_samples(0, s).error().message(), "TraceWriter: GPU 0 is not in the trace header (its GPUs: 2, 3)");
  ASSERT_TRUE(w->close({1, 0, 0, "duration"}).ok());
  Trace t = read_back(f.path());
  EXPECT_EQ(t.header.gpus[0].index, 3);  // the recording machine's numbers are kept
  EXPECT_EQ(t.header.gpus[1].index, 2);
  EXPECT_EQ(t.gpus[1].metric(Metric::kPowerWatts).v, std::vector<double>{2});
  EXPECT_EQ(t.gpus[0].processes.size(), 1u);
  EXPECT_EQ(t.events[0].gpu, 0);
}

TEST(TraceWriter, ReplacesInvalidUtf8InNames) {
  TempFile f;
  auto w = TraceWriter::create(f.path(), full_header(1));
  ASSERT_TRUE(w.ok());
  gpu::ProcessSample p;
  p.pid = 1;
  p.time_unix_ns = at(1);
  p.name = std::string("bad\xff\"name\n");
  std::vector<gpu::ProcessSample> ps = {p};
  ASSERT_TRUE(w->write_processes(0, ps).ok());
  ASSERT_TRUE(w->close({1, 0, 0, "duration"}).ok());
  Trace t = read_back(f.path());
  EXPECT_EQ(t.gpus[0].processes[0].sample.name, "bad\xEF\xBF\xBD\"name\n");
}

}  // namespace
}  // namespace gpudoc::telemetry
