// The sampler against the fake backend: cadence, bounded memory, lost and hung GPUs.
#include "telemetry/sampler.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <numeric>
#include <set>
#include <unistd.h>

#include "gpu/fake/fake_backend.hpp"

namespace gpudoc::telemetry {
namespace {

using namespace std::chrono_literals;
using gpu::Metric;
using gpu::MetricGroup;

SamplerConfig only(MetricGroup g, std::chrono::milliseconds period) {
  SamplerConfig c;
  c.periods.fill(0ms);
  c.periods[gpu::index(g)] = period;
  c.read_events = false;
  return c;
}

TEST(Sampler, ReadsEachGroupOnItsOwnPeriod) {
  core::ManualClock clock;
  gpu::FakeBackend fake(clock, 2);
  SamplerConfig c;  // catalog defaults: fast 100 ms, utilization 10 s, gpm 200 ms, energy 30 s ...
  c.read_events = false;
  Sampler s(fake, clock, c);
  std::size_t records = 0;
  ASSERT_TRUE(s.run_until(clock.now() + 60s, [&](SamplerRecord&&) { ++records; }).ok());
  for (int g = 0; g < 2; ++g) {
    EXPECT_EQ(fake.read_count(g, MetricGroup::kFast), 600u);
    EXPECT_EQ(fake.read_count(g, MetricGroup::kGpm), 300u);
    EXPECT_EQ(fake.read_count(g, MetricGroup::kUtilization), 6u);
    EXPECT_EQ(fake.read_count(g, MetricGroup::kSlow), 60u);
    EXPECT_EQ(fake.read_count(g, MetricGroup::kEnergy), 2u);
    EXPECT_EQ(fake.read_count(g, MetricGroup::kProcesses), 6u);
  }
  EXPECT_GT(records, 0u);
}

// Two processes on a GPU: their turns are only visible when the processes group is read often, so
// the sampler reads it every second while it sees two or more, and at the default period otherwise.
TEST(Sampler, ProcessesReadOftenOnlyWhileSeveralShareAGpu) {
  core::ManualClock clock;
  gpu::FakeBackend fake(clock, 2);
  gpu::ProcessSample a, b;
  a.pid = 100;
  b.pid = 200;
  fake.set_processes(0, {a, b});  // GPU 0 shared by two processes
  fake.set_processes(1, {a});     // GPU 1 has one
  SamplerConfig c = only(MetricGroup::kProcesses, 10000ms);
  Sampler s(fake, clock, c);
  ASSERT_TRUE(s.run_until(clock.now() + 60s, [](SamplerRecord&&) {}).ok());
  EXPECT_EQ(fake.read_count(0, MetricGroup::kProcesses), 60u);  // first read at 0, then every 1 s
  EXPECT_EQ(fake.read_count(1, MetricGroup::kProcesses), 6u);   // every 10 s
  EXPECT_TRUE(s.stats().gpus[0].contended);
  EXPECT_FALSE(s.stats().gpus[1].contended);

  // When the second process leaves, the period goes back to the default.
  fake.set_processes(0, {a});
  ASSERT_TRUE(s.run_until(clock.now() + 60s, [](SamplerRecord&&) {}).ok());
  EXPECT_LE(fake.read_count(0, MetricGroup::kProcesses), 60u + 7u);
  EXPECT_FALSE(s.stats().gpus[0].contended);

  // Off when asked.
  core::ManualClock clock2;
  gpu::FakeBackend fake2(clock2, 1);
  fake2.set_processes(0, {a, b});
  c.contended_processes_period = 0ms;
  Sampler s2(fake2, clock2, c);
  ASSERT_TRUE(s2.run_until(clock2.now() + 60s, [](SamplerRecord&&) {}).ok());
  EXPECT_EQ(fake2.read_count(0, MetricGroup::kProcesses), 6u);
}

// Every 200 ms utilization sample of the driver's buffer arrives exactly once, whatever the
// drain period.
TEST(Sampler, UtilizationBufferSamplesNeitherLostNorDuplicated) {
  core::ManualClock clock;
  gpu::FakeBackend fake(clock, 1);
  Sampler s(fake, clock, only(MetricGroup::kUtilization, 1300ms));
  std::vector<std::int64_t> stamps;
  ASSERT_TRUE(s.run_until(clock.now() + 30s, [&](SamplerRecord&& r) {
                 for (const auto& m : r.samples)
                   if (m.metric == Metric::kGpuUtilizationPercent) stamps.push_back(m.time_unix_ns);
               }).ok());
  ASSERT_GE(stamps.size(), 140u);
  for (std::size_t i = 1; i < stamps.size(); ++i)
    EXPECT_EQ(stamps[i] - stamps[i - 1], gpu::FakeBackend::kUtilizationSampleNs) << "at " << i;
}

// The utilization buffer is drained every 10 s; what the driver sampled since the last drain is
// read once more when the sampler stops, so a recording does not lose its last seconds.
TEST(Sampler, StopDrainsTheBuffersOnceMore) {
  core::SystemClock clock;
  gpu::FakeBackend fake(clock, 2);
  SamplerConfig c = only(MetricGroup::kUtilization, 10000ms);
  c.periods[gpu::index(MetricGroup::kFast)] = 100ms;
  Sampler s(fake, clock, c);
  ASSERT_TRUE(s.start().ok());
  std::this_thread::sleep_for(700ms);
  std::size_t early = 0;
  for (auto& r : s.drain(0ms))
    for (const auto& m : r.samples) early += m.metric == Metric::kGpuUtilizationPercent ? 1 : 0;
  s.stop();
  std::size_t late = 0;
  for (auto& r : s.drain(0ms))
    for (const auto& m : r.samples) late += m.metric == Metric::kGpuUtilizationPercent ? 1 : 0;
  for (int g = 0; g < 2; ++g) {
    EXPECT_EQ(fake.read_count(g, MetricGroup::kUtilization), 2u) << "GPU " << g;  // at start, at stop
    const auto fast = fake.read_count(g, MetricGroup::kFast);
    EXPECT_GE(fast, 6u);  // the fast group is not read again at stop: it holds no buffer
    EXPECT_LE(fast, 9u);
  }
  // ~0.7 s of 200 ms samples per GPU came with the read at stop, none before it but the first.
  EXPECT_GE(late, 2u * 3u);
  EXPECT_LE(early, 2u * 1u);
}

// The energy counter is read every 30 s; a recording's energy is its last reading less its first,
// so it is read once more at stop: the counter then spans the whole recording.
TEST(Sampler, StopReadsTheEnergyCounterOnceMore) {
  core::SystemClock clock;
  gpu::FakeBackend fake(clock, 2);
  SamplerConfig c = only(MetricGroup::kEnergy, 30000ms);
  Sampler s(fake, clock, c);
  ASSERT_TRUE(s.start().ok());
  std::this_thread::sleep_for(300ms);
  s.stop();
  std::size_t readings = 0;
  for (auto& r : s.drain(0ms))
    for (const auto& m : r.samples) readings += m.metric == Metric::kEnergyJoules ? 1 : 0;
  for (int g = 0; g < 2; ++g) EXPECT_EQ(fake.read_count(g, MetricGroup::kEnergy), 2u) << "GPU " << g;  // start, stop
  EXPECT_EQ(readings, 4u);
}

TEST(Sampler, NotSupportedGroupIsNotPolledAgain) {
  core::ManualClock clock;
  gpu::FakeBackend fake(clock, 1);
  gpu::MetricSet supported;
  supported.set();
  for (Metric m : gpu::all_metrics())
    if (gpu::info(m).group == MetricGroup::kGpm) supported.reset(gpu::index(m));
  fake.set_supported(0, supported);
  SamplerConfig c;
  c.read_events = false;
  Sampler s(fake, clock, c);
  ASSERT_TRUE(s.run_until(clock.now() + 10s, [](SamplerRecord&&) {}).ok());
  EXPECT_EQ(fake.read_count(0, MetricGroup::kGpm), 1u);
  EXPECT_TRUE(s.stats().gpus[0].group_disabled[gpu::index(MetricGroup::kGpm)]);
  EXPECT_EQ(fake.read_count(0, MetricGroup::kFast), 100u);
}

TEST(Sampler, TransientErrorsSkipOneReadAndAreCounted) {
  core::ManualClock clock;
  gpu::FakeBackend fake(clock, 1);
  fake.inject_error(0, MetricGroup::kFast, core::ErrorKind::kTimeout, 3);
  Sampler s(fake, clock, only(MetricGroup::kFast, 100ms));
  std::size_t sample_records = 0;
  ASSERT_TRUE(s.run_until(clock.now() + 1s, [&](SamplerRecord&& r) {
                 if (r.kind == SamplerRecord::Kind::kSamples) ++sample_records;
               }).ok());
  EXPECT_EQ(sample_records, 7u);
  EXPECT_EQ(s.stats().gpus[0].errors, 3u);
}

TEST(Sampler, UnknownGpuIsBadInput) {
  core::ManualClock clock;
  gpu::FakeBackend fake(clock, 2);
  SamplerConfig c;
  c.gpus = {0, 5};
  Sampler s(fake, clock, c);
  auto st = s.start();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind(), core::ErrorKind::kBadInput);
  EXPECT_EQ(st.error().message(), "GPU 5 does not exist (this machine has 2 GPUs)");
}

TEST(Sampler, NoDriverIsAnEnvironmentError) {
  core::ManualClock clock;
  gpu::FakeBackend fake(clock, 1);
  fake.set_device_count_error(core::Error(core::ErrorKind::kEnvironment, "libnvidia-ml.so.1 not found"));
  Sampler s(fake, clock, SamplerConfig{});
  auto st = s.start();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind(), core::ErrorKind::kEnvironment);
  EXPECT_EQ(st.error().message(), "counting GPUs: libnvidia-ml.so.1 not found");
}

// A GPU lost mid-run: the others keep every sample, the lost one is reported within two periods
// and produces no values after that.
TEST(Sampler, LostGpuIsReportedAndOthersKeepTheirSamples) {
  core::SystemClock clock;
  gpu::FakeBackend fake(clock, 4);
  const auto period = 20ms;
  auto lost_at = clock.now() + 1s;
  fake.lose_gpu(2, lost_at);
  Sampler s(fake, clock, only(MetricGroup::kFast, period));
  auto t0 = clock.now();
  ASSERT_TRUE(s.start().ok());
  std::map<int, std::size_t> lines;
  std::optional<core::MonoTime> lost_reported;
  std::int64_t last_value_after_loss_ns = 0;
  while (clock.now() - t0 < 3s) {
    for (auto& r : s.drain(50ms)) {
      if (r.kind == SamplerRecord::Kind::kSamples) {
        lines[r.gpu]++;
        if (r.gpu == 2 && lost_reported) last_value_after_loss_ns = r.samples.front().time_unix_ns;
      }
      if (r.kind == SamplerRecord::Kind::kEvent && r.event_kind == "gpu_lost" && r.gpu == 2)
        lost_reported = clock.now();
    }
  }
  s.stop();
  auto elapsed = clock.now() - t0;
  ASSERT_TRUE(lost_reported.has_value());
  // Reported at the first read after the loss (no value after it, below), normally within two
  // periods and one drain wait (~0.1 s); hang guard: 10x margin.
  EXPECT_LE(*lost_reported - lost_at, 1s);
  EXPECT_EQ(last_value_after_loss_ns, 0) << "a value was reported for the lost GPU";
  auto expected = static_cast<double>(elapsed / period);
  for (int g : {0, 1, 3}) EXPECT_GE(static_cast<double>(lines[g]), 0.99 * expected - 1) << "GPU " << g;
  EXPECT_TRUE(s.stats().gpus[2].lost);
  EXPECT_LE(static_cast<double>(lines[2]), 1.0 * static_cast<double>(1s / period) + 2);
}

// A driver call that hangs on one GPU does not stall the others; the hung GPU is reported as
// unresponsive and then as recovered.
TEST(Sampler, HungCallDoesNotStallOtherGpus) {
  core::SystemClock clock;
  gpu::FakeBackend fake(clock, 2);
  const auto period = 20ms;
  SamplerConfig c = only(MetricGroup::kFast, period);
  c.hang_timeout = 300ms;
  Sampler s(fake, clock, c);
  ASSERT_TRUE(s.start().ok());
  auto t0 = clock.now();
  std::this_thread::sleep_for(200ms);
  fake.set_hang(1, MetricGroup::kFast, 1500ms);
  std::map<int, std::size_t> lines;
  std::vector<std::string> events_gpu1;
  while (clock.now() - t0 < 3s) {
    for (auto& r : s.drain(50ms)) {
      if (r.kind == SamplerRecord::Kind::kSamples) lines[r.gpu]++;
      if (r.kind == SamplerRecord::Kind::kEvent && r.gpu == 1) events_gpu1.push_back(r.event_kind);
    }
  }
  s.stop();
  auto expected = static_cast<double>((clock.now() - t0) / period);
  EXPECT_GE(static_cast<double>(lines[0]), 0.99 * expected - 1);
  EXPECT_LE(static_cast<double>(lines[1]), expected - 1500.0 / 20 + 5);  // the hang cost GPU 1 its samples
  ASSERT_EQ(events_gpu1.size(), 2u);
  EXPECT_EQ(events_gpu1[0], "gpu_unresponsive");
  EXPECT_EQ(events_gpu1[1], "gpu_recovered");
}

TEST(Sampler, StopReturnsWhileACallIsStillHung) {
  core::SystemClock clock;
  auto fake = std::make_shared<gpu::FakeBackend>(clock, 1);
  SamplerConfig c = only(MetricGroup::kFast, 20ms);
  c.hang_timeout = 100ms;
  {
    Sampler s(*fake, clock, c);
    ASSERT_TRUE(s.start().ok());
    std::this_thread::sleep_for(50ms);
    fake->set_hang(0, MetricGroup::kFast, 5s);
    std::this_thread::sleep_for(100ms);
    auto t0 = clock.now();
    s.stop();
    EXPECT_LT(clock.now() - t0, 2500ms);  // hang guard: normally ~0.1 s, the hung call 5 s; 10x+ margin
  }
  std::this_thread::sleep_for(5200ms);  // let the detached call finish before the backend goes
}

TEST(Sampler, QueueIsBoundedAndCountsDrops) {
  core::SystemClock clock;
  gpu::FakeBackend fake(clock, 2);
  SamplerConfig c = only(MetricGroup::kFast, 1ms);
  c.periods[gpu::index(MetricGroup::kFast)] = 1ms;
  c.queue_capacity = 50;
  Sampler s(fake, clock, c);
  ASSERT_TRUE(s.start().ok());
  std::this_thread::sleep_for(300ms);  // nobody drains
  auto got = s.drain(0ms);
  s.stop();
  EXPECT_LE(got.size(), 50u);
  EXPECT_GT(s.stats().dropped_records, 0u);
}

long resident_kib() {
  std::ifstream statm("/proc/self/statm");
  long size = 0, resident = 0;
  statm >> size >> resident;
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

// 8 GPUs, 10 minutes, every group at 100 Hz: resident memory stays flat after warm-up
// (every reading within ±5% of the mean).
TEST(Sampler, MemoryFlatForTenMinutesOfEightGpusAt100Hz) {
  core::ManualClock clock;
  gpu::FakeBackend fake(clock, 8);
  std::vector<gpu::ProcessSample> procs(3);
  for (std::size_t i = 0; i < procs.size(); ++i) procs[i].pid = 1000 + static_cast<std::uint32_t>(i);
  for (int g = 0; g < 8; ++g) fake.set_processes(g, procs);
  SamplerConfig c;
  c.periods.fill(10ms);
  c.read_events = false;
  Sampler s(fake, clock, c);
  std::vector<long> rss;
  std::uint64_t records = 0, samples = 0;
  std::deque<SamplerRecord> window;  // a consumer that keeps the last second, like a live view
  auto t_end = clock.now() + 10min;
  auto next_probe = clock.now() + 10s;
  ASSERT_TRUE(s.run_until(t_end, [&](SamplerRecord&& r) {
                 ++records;
                 samples += r.samples.size();
                 window.push_back(std::move(r));
                 while (window.size() > 8 * 6 * 100) window.pop_front();
                 if (clock.now() >= next_probe) {
                   rss.push_back(resident_kib());
                   next_probe += 10s;
                 }
               }).ok());
  ASSERT_GE(rss.size(), 55u);
  EXPECT_GE(samples, 8ull * 60000 * 19);  // 8 GPUs × 60000 ticks × 19 non-buffered metrics
  std::vector<long> steady(rss.begin() + static_cast<long>(rss.size() / 10), rss.end());
  double mean = std::accumulate(steady.begin(), steady.end(), 0.0) / static_cast<double>(steady.size());
  for (std::size_t i = 0; i < steady.size(); ++i)
    EXPECT_NEAR(static_cast<double>(steady[i]), mean, 0.05 * mean) << "probe " << i;
  RecordProperty("records", std::to_string(records));
  RecordProperty("rss_mean_kib", std::to_string(static_cast<long>(mean)));
}

TEST(SamplerConfigPeriods, GroupValuesLaidOverTheDefaultsTheLaterWinning) {
  SamplerConfig c;
  ASSERT_TRUE(c.set_periods({"fast=200", "slow=0", "fast=300"}));
  EXPECT_EQ(c.periods[gpu::index(gpu::MetricGroup::kFast)], std::chrono::milliseconds(300));
  EXPECT_EQ(c.periods[gpu::index(gpu::MetricGroup::kSlow)], std::chrono::milliseconds(0));
  for (const char* bad : {"nosuch=100", "fast", "fast=1"}) {
    SamplerConfig d;
    auto st = d.set_periods({bad});
    ASSERT_FALSE(st) << bad;
    EXPECT_EQ(st.error().kind(), core::ErrorKind::kUsage) << bad;
    EXPECT_EQ(st.error().message().rfind("--period ", 0), 0u) << st.error().message();
  }
}

TEST(SamplerConfigPeriods, ACommandsSamplerIsItsOwnDefaultsWithTheGroupValuesOverThem) {
  auto defaults = SamplerConfig::default_periods();
  defaults[gpu::index(gpu::MetricGroup::kSlow)] = std::chrono::milliseconds(5000);
  auto c = SamplerConfig::with_periods(defaults, {"fast=250"}, {1, 3}, false);
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->periods[gpu::index(gpu::MetricGroup::kFast)], std::chrono::milliseconds(250));
  EXPECT_EQ(c->periods[gpu::index(gpu::MetricGroup::kSlow)], std::chrono::milliseconds(5000));
  EXPECT_EQ(c->gpus, (std::vector<int>{1, 3}));
  EXPECT_FALSE(c->read_events);
  auto plain = SamplerConfig::with_periods(SamplerConfig::default_periods(), {}, {}, true);
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->periods, SamplerConfig::default_periods());
  EXPECT_TRUE(plain->gpus.empty());
  EXPECT_TRUE(plain->read_events);
  auto bad = SamplerConfig::with_periods(defaults, {"nosuch=100"}, {}, true);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind(), core::ErrorKind::kUsage);
  EXPECT_NE(bad.error().message().find("nosuch"), std::string::npos) << bad.error().message();
}

}  // namespace
}  // namespace gpudoc::telemetry
