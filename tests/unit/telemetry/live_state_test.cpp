// telemetry::LiveState: the newest value of each metric of each GPU, found by one lookup; what
// watch renders and serve scrapes. Pure logic, fed with made-up records.
#include <gtest/gtest.h>

#include "telemetry/live_state.hpp"
#include "telemetry/sampler.hpp"

namespace gpudoc::telemetry {
namespace {

using namespace std::chrono_literals;
using gpu::Metric;

gpu::DeviceInfo h200(int index) {
  gpu::DeviceInfo d;
  d.index = index;
  d.name = "NVIDIA H200";
  return d;
}

SamplerRecord samples(int gpu, std::int64_t t_ns, std::vector<std::pair<Metric, double>> v) {
  SamplerRecord r;
  r.gpu = gpu;
  for (auto [m, x] : v) r.samples.push_back({m, x, t_ns});
  return r;
}

constexpr std::int64_t kSec = 1'000'000'000;

TEST(LiveState, LatestGoesStaleAndAbsentIsNotZero) {
  LiveState s({h200(0)}, SamplerConfig::default_periods());
  s.add(samples(0, 10 * kSec, {{Metric::kPowerWatts, 312.5}}));
  s.set_now(10 * kSec + kSec / 10);
  EXPECT_EQ(s.latest(0, Metric::kPowerWatts), 312.5);
  EXPECT_FALSE(s.latest(0, Metric::kGpmSmActivityPercent).has_value());
  s.set_now(13 * kSec);  // fast group period 100 ms: 3 s without a reading is stale
  EXPECT_FALSE(s.latest(0, Metric::kPowerWatts).has_value());
}

TEST(LiveState, HistoryBucketsMeanAndGaps) {
  LiveState s({h200(0)}, SamplerConfig::default_periods(), {.bucket = 500ms, .width = 4});
  s.add(samples(0, 10 * kSec, {{Metric::kGpuUtilizationPercent, 100}}));
  s.add(samples(0, 10 * kSec + kSec / 5, {{Metric::kGpuUtilizationPercent, 50}}));
  s.add(samples(0, 11 * kSec + kSec / 5, {{Metric::kGpuUtilizationPercent, 0}}));
  s.set_now(11 * kSec + kSec / 2);  // buckets 20, 21, 22, 23 (of 500 ms)
  auto h = s.history(0, Metric::kGpuUtilizationPercent);
  ASSERT_EQ(h.size(), 4u);
  EXPECT_EQ(h[0], 75.0);
  EXPECT_FALSE(h[1].has_value());
  EXPECT_EQ(h[2], 0.0);
  EXPECT_FALSE(h[3].has_value());
}

TEST(LiveState, FindsGpusByBackendIndexAndIgnoresOthers) {
  LiveState s({h200(7), h200(2), h200(5)}, SamplerConfig::default_periods());
  EXPECT_EQ(s.slot_of(7), 0U);
  EXPECT_EQ(s.slot_of(2), 1U);
  EXPECT_EQ(s.slot_of(5), 2U);
  EXPECT_FALSE(s.slot_of(0));
  s.add(samples(5, 10 * kSec, {{Metric::kPowerWatts, 400}}));
  s.add(samples(3, 10 * kSec, {{Metric::kPowerWatts, 999}}));  // not sampled here
  s.set_now(10 * kSec);
  EXPECT_EQ(s.latest(2, Metric::kPowerWatts), 400.0);
  EXPECT_FALSE(s.latest(0, Metric::kPowerWatts));
  EXPECT_FALSE(s.latest(1, Metric::kPowerWatts));
}

TEST(LiveState, AnOlderBufferedSampleNeverReplacesTheNewest) {
  LiveState s({h200(0)}, SamplerConfig::default_periods(), {.width = 0});
  s.add(samples(0, 10 * kSec, {{Metric::kGpuUtilizationPercent, 90}}));
  s.add(samples(0, 9 * kSec, {{Metric::kGpuUtilizationPercent, 10}}));
  ASSERT_TRUE(s.newest(0, Metric::kGpuUtilizationPercent));
  EXPECT_EQ(s.newest(0, Metric::kGpuUtilizationPercent)->value, 90.0);
  EXPECT_EQ(s.newest(0, Metric::kGpuUtilizationPercent)->time_unix_ns, 10 * kSec);
  EXPECT_EQ(s.newest_sample_unix_ns(0), 10 * kSec);
  // No history was asked for: the buckets stay empty.
  s.set_now(10 * kSec);
  EXPECT_TRUE(s.history(0, Metric::kGpuUtilizationPercent).empty());
}

TEST(LiveState, StalenessHasAFloorAndProcessesTheirTime) {
  auto periods = SamplerConfig::default_periods();
  LiveState s({h200(0)}, periods, {.min_stale = 5s});
  s.add(samples(0, 10 * kSec, {{Metric::kPowerWatts, 300}}));
  EXPECT_EQ(s.latest_at(0, Metric::kPowerWatts, 15 * kSec), 300.0);  // 3 periods of 100 ms, but 5 s at least
  EXPECT_FALSE(s.latest_at(0, Metric::kPowerWatts, 15 * kSec + 1));
  SamplerRecord procs;
  procs.kind = SamplerRecord::Kind::kProcesses;
  procs.gpu = 0;
  procs.time_unix_ns = 12 * kSec;
  gpu::ProcessSample proc;
  proc.pid = 42;
  procs.processes.push_back(proc);
  s.add(procs);
  ASSERT_EQ(s.processes(0).size(), 1U);
  EXPECT_EQ(s.processes_time_unix_ns(0), 12 * kSec);
  EXPECT_TRUE(s.fresh(gpu::MetricGroup::kProcesses, 12 * kSec, 13 * kSec));
  periods[gpu::index(gpu::MetricGroup::kProcesses)] = 0ms;  // a group that is not read is never fresh
  LiveState off({h200(0)}, periods);
  EXPECT_FALSE(off.fresh(gpu::MetricGroup::kProcesses, 12 * kSec, 12 * kSec));
}

TEST(LiveState, EventsSetTheStatus) {
  LiveState s({h200(0)}, SamplerConfig::default_periods());
  SamplerRecord e;
  e.kind = SamplerRecord::Kind::kEvent;
  e.gpu = 0;
  e.event_kind = "gpu_lost";
  s.add(e);
  EXPECT_EQ(s.status(0), "lost");
  e.event_kind = "gpu_recovered";
  s.add(e);
  EXPECT_EQ(s.status(0), "");
  EXPECT_EQ(s.recent_events().size(), 2U);
}

}  // namespace
}  // namespace gpudoc::telemetry
