#include "telemetry/replay_backend.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "telemetry/trace.hpp"

namespace gpudoc::telemetry {
namespace {

using namespace gpudoc::gpu;  // the Backend's types: MetricGroup, Metric, ...

using std::chrono::milliseconds;
constexpr std::int64_t kStart = 1'780'000'000'000'000'000;

// Two GPUs, 10 s: fast samples every 100 ms (power + sm clock on one line), utilization every
// 200 ms written in 1 s batches after the fast samples (as the sampler does), energy every 2 s on
// GPU 0 only, processes every 2 s, xids at 2.5 s and 7.25 s.
telemetry::Trace make_trace() {
  std::string text =
      R"({"type":"header","format":"gpudoc-trace","version":1,"host":"node7","start_unix_ns":1780000000000000000,)"
      R"("backend":"nvml","driver_version":"580.159.03","gpus":[{"index":0,"name":"NVIDIA H200","uuid":"GPU-a"},)"
      R"({"index":1,"name":"NVIDIA H200","uuid":"GPU-b"}],"metrics":[]})"
      "\n";
  auto line = [&](const std::string& s) { text += s + "\n"; };
  for (int i = 1; i <= 100; ++i) {
    double t = i / 10.0;
    for (int g = 0; g < 2; ++g)
      line(fmt::format(R"({{"type":"sample","t":{},"gpu":{},"power_watts":{},"sm_clock_mhz":1980}})", t, g,
                       100 * g + i));
    if (i % 10 == 0)
      for (int k = 4; k >= 0; --k)
        line(fmt::format(R"({{"type":"sample","t":{},"gpu":0,"gpu_utilization_percent":{}}})", t - k * 0.2, i - k));
    if (i % 20 == 0) {
      line(fmt::format(R"({{"type":"sample","t":{},"gpu":0,"energy_joules":{}}})", t, i * 1000));
      line(
          fmt::format(R"({{"type":"process","t":{},"gpu":1,"pid":42,"name":"python3","memory_used_bytes":{}}})", t, i));
    }
  }
  line(R"({"type":"event","t":2.5,"kind":"xid","gpu":1,"code":79})");
  line(R"({"type":"event","t":3,"kind":"step","step_ms":100})");
  line(R"({"type":"event","t":7.25,"kind":"xid","gpu":0,"code":48})");
  line(R"({"type":"end","t":10,"sample_lines":0,"dropped_records":0,"reason":"duration"})");
  auto t = telemetry::parse_trace(text, "replay.jsonl");
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message());
  return std::move(t.value());
}

using Key = std::tuple<int, int, std::int64_t>;  // gpu, metric, time

std::size_t total_samples(const telemetry::Trace& t) {
  std::size_t n = 0;
  for (const auto& g : t.gpus)
    for (const auto& s : g.metrics) n += s.size();
  return n;
}

// Reads every group of every GPU once, recording what came back; fails on a duplicate.
void read_all(ReplayBackend& b, std::set<Key>& seen, std::size_t& processes) {
  for (int g = 0; g < 2; ++g) {
    for (MetricGroup grp : all_groups()) {
      auto r = b.read(g, grp);
      if (!r.ok()) {
        EXPECT_EQ(r.error().kind(), core::ErrorKind::kNotSupported) << r.error().message();
        continue;
      }
      std::int64_t prev = std::numeric_limits<std::int64_t>::min();
      for (const auto& s : r->metrics) {
        EXPECT_EQ(info(s.metric).group, grp) << "a read returns only its own group";
        EXPECT_GE(s.time_unix_ns, prev) << "in time order";
        prev = s.time_unix_ns;
        EXPECT_TRUE(seen.insert({g, static_cast<int>(s.metric), s.time_unix_ns}).second)
            << "returned twice: " << info(s.metric).name;
      }
      processes += r->processes.size();
    }
  }
}

TEST(ReplayBackend, ReportsTheRecordedSystem) {
  core::ManualClock clock;
  auto b = open_replay_backend(make_trace(), clock);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*b)->name(), "replay");
  EXPECT_EQ((*b)->device_count().value(), 2);
  EXPECT_EQ((*b)->system_info()->backend, "replay");
  EXPECT_EQ((*b)->system_info()->driver_version, "580.159.03");
  EXPECT_EQ((*b)->device_info(1)->uuid, "GPU-b");
  EXPECT_EQ((*b)->device_info(1)->index, 1);
  EXPECT_EQ((*b)->device_info(2).error().kind(), core::ErrorKind::kBadInput);
  EXPECT_EQ((*b)->read(-1, MetricGroup::kFast).error().kind(), core::ErrorKind::kBadInput);

  MetricSet caps0 = (*b)->capabilities(0).value();
  EXPECT_TRUE(caps0.test(index(Metric::kPowerWatts)));
  EXPECT_TRUE(caps0.test(index(Metric::kGpuUtilizationPercent)));
  EXPECT_TRUE(caps0.test(index(Metric::kEnergyJoules)));
  EXPECT_FALSE(caps0.test(index(Metric::kMemoryClockMhz)));
  MetricSet caps1 = (*b)->capabilities(1).value();
  EXPECT_FALSE(caps1.test(index(Metric::kEnergyJoules)));
  EXPECT_EQ((*b)->read(1, MetricGroup::kEnergy).error().kind(), core::ErrorKind::kNotSupported);
  EXPECT_EQ((*b)->read(0, MetricGroup::kGpm).error().kind(), core::ErrorKind::kNotSupported);

  // Usable through the interface as any backend.
  std::unique_ptr<Backend> as_backend = std::move(b.value());
  EXPECT_EQ(as_backend->device_count().value(), 2);
}

TEST(ReplayBackend, RejectsABadSpeed) {
  core::ManualClock clock;
  EXPECT_EQ(open_replay_backend(make_trace(), clock, {-1}).error().kind(), core::ErrorKind::kUsage);
  EXPECT_EQ(open_replay_backend(make_trace(), clock, {std::nan("")}).error().kind(), core::ErrorKind::kUsage);
}

TEST(ReplayBackend, RealTimeReturnsWhatIsDueOnceEach) {
  core::ManualClock clock;
  clock.advance(std::chrono::seconds(123));  // open time is not clock zero
  telemetry::Trace trace = make_trace();
  const std::size_t total = total_samples(trace);
  auto b = open_replay_backend(std::move(trace), clock, {1.0});
  ASSERT_TRUE(b.ok());
  ReplayBackend& r = **b;

  // Nothing is due at t = 0 (the first fast sample is at 0.1 s).
  EXPECT_TRUE(r.read(0, MetricGroup::kFast)->metrics.empty());
  clock.advance(milliseconds(250));
  auto fast = r.read(0, MetricGroup::kFast);
  ASSERT_EQ(fast->metrics.size(), 4u);  // t = 0.1 and 0.2, power and sm clock each
  EXPECT_EQ(fast->metrics[0].time_unix_ns, kStart + 100'000'000);
  EXPECT_EQ(fast->metrics[0].metric, Metric::kPowerWatts);
  EXPECT_EQ(fast->metrics[0].value, 1);
  EXPECT_EQ(fast->metrics[1].metric, Metric::kSmClockMhz);
  EXPECT_EQ(fast->metrics[3].time_unix_ns, kStart + 200'000'000);
  // Utilization sample at t = 0.2 is due too, but only through its own group.
  auto util = r.read(0, MetricGroup::kUtilization);
  ASSERT_EQ(util->metrics.size(), 1u);
  EXPECT_EQ(util->metrics[0].metric, Metric::kGpuUtilizationPercent);
  EXPECT_DOUBLE_EQ(r.position_s(), 0.25);
  EXPECT_FALSE(r.finished());

  std::set<Key> seen;
  std::size_t processes = 0;
  for (const auto& s : fast->metrics) seen.insert({0, static_cast<int>(s.metric), s.time_unix_ns});
  for (const auto& s : util->metrics) seen.insert({0, static_cast<int>(s.metric), s.time_unix_ns});
  // Irregular polling, as a real sampler under load would.
  int step = 0;
  while (!r.finished()) {
    read_all(r, seen, processes);
    clock.advance(milliseconds(37 + (step++ % 5) * 91));
  }
  read_all(r, seen, processes);  // what was left when the position passed the end
  EXPECT_EQ(seen.size(), total);
  EXPECT_EQ(processes, 5u);
  // Nothing more after the end.
  clock.advance(std::chrono::seconds(5));
  std::size_t before = seen.size();
  read_all(r, seen, processes);
  EXPECT_EQ(seen.size(), before);
}

TEST(ReplayBackend, SpeedScalesThePosition) {
  core::ManualClock clock;
  auto b = open_replay_backend(make_trace(), clock, {4.0});
  ASSERT_TRUE(b.ok());
  clock.advance(milliseconds(500));
  EXPECT_DOUBLE_EQ((*b)->position_s(), 2.0);
  EXPECT_EQ((*b)->read(1, MetricGroup::kFast)->metrics.size(), 40u);        // t = 0.1 .. 2.0
  EXPECT_EQ((*b)->read(1, MetricGroup::kProcesses)->processes.size(), 1u);  // t = 2
}

TEST(ReplayBackend, AsFastAsPossibleStepsEachGroupThroughItsSampleTimes) {
  core::ManualClock clock;
  telemetry::Trace trace = make_trace();
  const std::size_t total = total_samples(trace);
  auto b = open_replay_backend(std::move(trace), clock, {0.0});
  ASSERT_TRUE(b.ok());
  ReplayBackend& r = **b;

  // Each read is one sample time of that group.
  auto first = r.read(0, MetricGroup::kFast);
  ASSERT_EQ(first->metrics.size(), 2u);
  EXPECT_EQ(first->metrics[0].time_unix_ns, kStart + 100'000'000);
  EXPECT_EQ(first->metrics[1].time_unix_ns, kStart + 100'000'000);
  auto u = r.read(0, MetricGroup::kUtilization);
  ASSERT_EQ(u->metrics.size(), 1u);
  EXPECT_EQ(u->metrics[0].time_unix_ns, kStart + 200'000'000);  // its own first time, sorted
  auto p = r.read(1, MetricGroup::kProcesses);
  ASSERT_EQ(p->processes.size(), 1u);
  EXPECT_EQ(p->processes[0].time_unix_ns, kStart + 2'000'000'000);
  EXPECT_EQ(p->processes[0].name, "python3");

  std::set<Key> seen;
  std::size_t processes = 1;
  for (const auto& s : first->metrics) seen.insert({0, static_cast<int>(s.metric), s.time_unix_ns});
  for (const auto& s : u->metrics) seen.insert({0, static_cast<int>(s.metric), s.time_unix_ns});
  int reads = 0;
  while (!r.finished() && reads < 10000) {
    read_all(r, seen, processes);
    ++reads;
  }
  EXPECT_TRUE(r.finished());
  EXPECT_EQ(reads, 100);  // GPU 1's 100 fast sample times (GPU 0's first was read above)
  EXPECT_EQ(seen.size(), total);
  EXPECT_EQ(processes, 5u);
  EXPECT_EQ(clock.now().time_since_epoch().count(), 0) << "speed 0 never waits";
  EXPECT_TRUE(r.read(0, MetricGroup::kFast)->metrics.empty());
}

TEST(ReplayBackend, XidEventsFallDueWithThePosition) {
  core::ManualClock clock;
  auto b = open_replay_backend(make_trace(), clock, {1.0});
  ASSERT_TRUE(b.ok());
  ReplayBackend& r = **b;
  // Nothing due: waits out the timeout on the clock.
  auto none = r.wait_events(milliseconds(500));
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  EXPECT_EQ(clock.now().time_since_epoch(), milliseconds(500));
  // The next xid (2.5 s) comes before the timeout: it wakes then and returns it.
  auto first = r.wait_events(std::chrono::seconds(10));
  ASSERT_EQ(first->size(), 1u);
  EXPECT_EQ((*first)[0].gpu, 1);
  EXPECT_EQ((*first)[0].kind, "xid");
  EXPECT_EQ((*first)[0].code, 79u);
  EXPECT_EQ((*first)[0].time_unix_ns, kStart + 2'500'000'000);
  EXPECT_EQ(clock.now().time_since_epoch(), milliseconds(2500));
  // Only once; step events are not device events.
  clock.advance(std::chrono::seconds(10));
  auto second = r.wait_events(milliseconds(1));
  ASSERT_EQ(second->size(), 1u);
  EXPECT_EQ((*second)[0].code, 48u);
  EXPECT_TRUE(r.wait_events(milliseconds(1))->empty());
}

TEST(ReplayBackend, AsFastAsPossibleEventsFollowTheReads) {
  core::ManualClock clock;
  auto b = open_replay_backend(make_trace(), clock, {0.0});
  ASSERT_TRUE(b.ok());
  ReplayBackend& r = **b;
  EXPECT_TRUE(r.wait_events(milliseconds(1))->empty());
  for (int i = 0; i < 25; ++i) (void)r.read(0, MetricGroup::kFast);  // up to t = 2.5
  auto due = r.wait_events(milliseconds(1));
  ASSERT_EQ(due->size(), 1u);
  EXPECT_EQ((*due)[0].code, 79u);
}

}  // namespace
}  // namespace gpudoc::telemetry
