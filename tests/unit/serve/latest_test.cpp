#include "serve/latest.hpp"

#include <gtest/gtest.h>

#include <chrono>

#include "core/clock.hpp"
#include "gpu/fake/fake_backend.hpp"
#include "telemetry/sampler.hpp"

namespace gpudoc::serve {
namespace {

using namespace std::chrono_literals;
using telemetry::SamplerRecord;

gpu::DeviceInfo device(int index) {
  gpu::DeviceInfo d;
  d.index = index;
  d.uuid = "GPU-" + std::to_string(index);
  d.name = "NVIDIA H200";
  d.pci_bus_id = "00000000:1" + std::to_string(index) + ":00.0";
  return d;
}

SamplerRecord samples(int gpu, std::vector<gpu::MetricSample> s) {
  SamplerRecord r;
  r.kind = SamplerRecord::Kind::kSamples;
  r.gpu = gpu;
  r.samples = std::move(s);
  return r;
}

constexpr std::int64_t kSecond = 1'000'000'000;

TEST(Latest, KeepsTheNewestValueOfEachMetric) {
  Latest latest({device(0), device(2)}, telemetry::SamplerConfig::default_periods());
  latest.apply(
      samples(2, {{gpu::Metric::kPowerWatts, 400, 10 * kSecond}, {gpu::Metric::kPowerWatts, 410, 11 * kSecond}}));
  latest.apply(samples(2, {{gpu::Metric::kPowerWatts, 390, 9 * kSecond}}));  // older: ignored
  latest.apply(samples(5, {{gpu::Metric::kPowerWatts, 1, 11 * kSecond}}));   // not a known GPU
  const Snapshot s = latest.snapshot(11 * kSecond);
  ASSERT_EQ(s.gpus.size(), 2u);
  EXPECT_EQ(s.gpus[1].index, 2);
  EXPECT_EQ(s.gpus[1].uuid, "GPU-2");
  EXPECT_EQ(s.gpus[1].pci_bus_id, "00000000:12:00.0");
  EXPECT_EQ(s.gpus[1].latest[gpu::index(gpu::Metric::kPowerWatts)], 410);
  EXPECT_FALSE(s.gpus[0].latest[gpu::index(gpu::Metric::kPowerWatts)]);
}

TEST(Latest, StaleValuesAreLeftOut) {
  // fast: 100 ms period -> stale after max(300 ms, 5 s) = 5 s; energy: 30 s -> 90 s.
  Latest latest({device(0)}, telemetry::SamplerConfig::default_periods());
  latest.apply(
      samples(0, {{gpu::Metric::kPowerWatts, 400, 10 * kSecond}, {gpu::Metric::kEnergyJoules, 5, 10 * kSecond}}));
  EXPECT_TRUE(latest.snapshot(15 * kSecond).gpus[0].latest[gpu::index(gpu::Metric::kPowerWatts)]);
  const Snapshot later = latest.snapshot(15 * kSecond + 1);
  EXPECT_FALSE(later.gpus[0].latest[gpu::index(gpu::Metric::kPowerWatts)]);
  EXPECT_TRUE(later.gpus[0].latest[gpu::index(gpu::Metric::kEnergyJoules)]);
}

TEST(Latest, ProcessesAreTheLastRead) {
  Latest latest({device(0)}, telemetry::SamplerConfig::default_periods());
  SamplerRecord r;
  r.kind = SamplerRecord::Kind::kProcesses;
  r.gpu = 0;
  r.time_unix_ns = 10 * kSecond;
  gpu::ProcessSample p;
  p.pid = 42;
  p.name = "python3";
  p.memory_used_bytes = 1024;
  r.processes = {p, p};
  r.processes[1].pid = 43;
  latest.apply(r);
  r.processes.pop_back();
  latest.apply(r);
  const auto procs = latest.snapshot(10 * kSecond).gpus[0].processes;
  ASSERT_EQ(procs.size(), 1u);
  EXPECT_EQ(procs[0].pid, 42u);
  EXPECT_EQ(procs[0].memory_used_bytes, 1024u);
  EXPECT_TRUE(latest.snapshot(41 * kSecond).gpus[0].processes.empty());  // processes: 10 s -> stale after 30 s
}

TEST(Latest, FromTheFakeBackendThroughTheSampler) {
  core::ManualClock clock;
  gpu::FakeBackend fake(clock, 2);
  fake.set_value_fn(gpu::FakeBackend::steady_load());
  telemetry::SamplerConfig config;
  config.read_events = false;
  telemetry::Sampler sampler(fake, clock, config);
  Latest latest({*fake.device_info(0), *fake.device_info(1)}, config.periods);
  ASSERT_TRUE(sampler.run_until(clock.now() + 31s, [&](SamplerRecord&& r) { latest.apply(r); }));
  const Snapshot s = latest.snapshot(clock.unix_now_ns());
  ASSERT_EQ(s.gpus.size(), 2u);
  for (const auto& g : s.gpus) {
    const auto power = g.latest[gpu::index(gpu::Metric::kPowerWatts)];
    ASSERT_TRUE(power);
    EXPECT_GE(*power, 500);
    EXPECT_TRUE(g.latest[gpu::index(gpu::Metric::kGpuUtilizationPercent)]);
    EXPECT_TRUE(g.latest[gpu::index(gpu::Metric::kEnergyJoules)]);
  }
  const std::string body = render(s, {});
  EXPECT_NE(body.find("gpudoc_power_watts{gpu=\"1\""), std::string::npos);
}

}  // namespace
}  // namespace gpudoc::serve
