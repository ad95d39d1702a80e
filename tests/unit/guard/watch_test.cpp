#include "guard/watch.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "guard/session.hpp"

namespace gpudoc::guard {
namespace {

gpu::DeviceInfo h200(int index = 0) {
  gpu::DeviceInfo info;
  info.index = index;
  info.uuid = "GPU-5c7c9a2e-0000-0000-0000-00000000000" + std::to_string(index);
  info.temperature_slowdown_celsius = 87;
  info.temperature_gpu_max_celsius = 85;
  info.temperature_shutdown_celsius = 92;
  info.temperature_memory_max_celsius = 95;
  info.memory_total_bytes = std::uint64_t{141} << 30;
  return info;
}

std::int64_t ns(double s) { return static_cast<std::int64_t>(s * 1e9); }

telemetry::SamplerRecord fast(int gpu, double t, double power, double temp) {
  telemetry::SamplerRecord r;
  r.gpu = gpu;
  r.samples = {{gpu::Metric::kPowerWatts, power, ns(t)}, {gpu::Metric::kGpuTemperatureCelsius, temp, ns(t)}};
  return r;
}

telemetry::SamplerRecord memory(int gpu, double t, double used_bytes) {
  telemetry::SamplerRecord r;
  r.gpu = gpu;
  r.samples = {{gpu::Metric::kMemoryUsedBytes, used_bytes, ns(t)}};
  return r;
}

telemetry::SamplerRecord event(int gpu, double t, const std::string& kind, std::uint64_t code = 0) {
  telemetry::SamplerRecord r;
  r.kind = telemetry::SamplerRecord::Kind::kEvent;
  r.gpu = gpu;
  r.time_unix_ns = ns(t);
  r.event_kind = kind;
  r.event_fields = {{"code", code}};
  return r;
}

TEST(GuardWatch, RisingTemperatureEscalatesFromTheSamples) {
  GpuWatch w(0, h200(), default_policy());
  double t = 1000;
  for (; t < 1010; t += 0.1) w.add(fast(0, t, 650, 70));
  EXPECT_FALSE(w.tick(t));
  EXPECT_DOUBLE_EQ(*w.input().gpu_temp_now, 70);
  // The die reaches the level-1 threshold (max operating 85 - 2 = 83): persistence says 84.
  for (double end = t + 2; t < end; t += 0.1) w.add(fast(0, t, 650, 84));
  auto d = w.tick(t);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->level, 1);
  EXPECT_NEAR(*w.newest_sample_t(), t - 0.1, 1e-6);
  EXPECT_DOUBLE_EQ(*w.input().power_watts, 650);
}

TEST(GuardWatch, IgnoresOtherGpusRecords) {
  GpuWatch w(1, h200(1), default_policy());
  for (double t = 0; t < 5; t += 0.1) w.add(fast(0, t, 650, 95));
  EXPECT_FALSE(w.tick(5));
  EXPECT_FALSE(w.input().gpu_temp_now.has_value());
}

TEST(GuardWatch, MemoryGrowthGivesSecondsToOomAndLevelTwo) {
  GpuWatch w(0, h200(), default_policy());
  const double total = static_cast<double>(std::uint64_t{141} << 30);
  // 4 GiB/s with 100 GiB left: about 25 s to OOM, under level 2's 30 s.
  double t = 0;
  for (; t <= 10; t += 1) w.add(memory(0, t, total - (100.0 + 4.0 * (10 - t)) * (1 << 30)));
  auto d = w.tick(t);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->level, 2);
  ASSERT_TRUE(w.input().seconds_to_oom);
  EXPECT_NEAR(*w.input().seconds_to_oom, 25, 2);
}

TEST(GuardWatch, FatalXidOnlyWhenTheCatalogSaysSo) {
  WatchOptions o;
  o.fatal_xid = [](std::uint64_t xid) { return xid == 79; };
  GpuWatch w(0, h200(), default_policy(), o);
  w.add(event(0, 1, "xid", 13));  // an application error: not fatal
  EXPECT_FALSE(w.tick(1));
  w.add(event(0, 2, "xid", 79));
  auto d = w.tick(2);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->level, 3);
  EXPECT_TRUE(d->fatal);
  ASSERT_EQ(w.fatal_reasons().size(), 1u);
  EXPECT_EQ(w.fatal_reasons()[0], "XID 79");
}

TEST(GuardWatch, GpuLostIsFatal) {
  GpuWatch w(0, h200(), default_policy());
  w.add(event(0, 1, "gpu_lost"));
  auto d = w.tick(1);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->level, 3);
  EXPECT_TRUE(d->fatal);
}

TEST(GuardWatch, UncorrectableEccCountsOnlyWhenTheyRise) {
  GpuWatch w(0, h200(), default_policy());
  gpu::HealthFacts f;
  f.ecc_volatile_uncorrected = 2;  // already there when the guard started: not this run's
  w.add_health(f);
  EXPECT_FALSE(w.tick(1));
  w.add_health(f);
  EXPECT_FALSE(w.tick(2));
  f.ecc_volatile_uncorrected = 3;
  w.add_health(f);
  auto d = w.tick(3);
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->fatal);
  EXPECT_NE(w.fatal_reasons().at(0).find("from 2 to 3"), std::string::npos);
}

TEST(GuardWatch, RowRemapFailureIsFatal) {
  GpuWatch w(0, h200(), default_policy());
  gpu::HealthFacts f;
  f.remap_failed = true;
  w.add_health(f);
  auto d = w.tick(1);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->level, 3);
}

TEST(GuardNoncritical, MatchesNamesScriptsAndExpressions) {
  const std::vector<std::string> p = {"eval_server", "re:.*tensorboard.*"};
  EXPECT_TRUE(matches_noncritical(p, "eval_server", {"/opt/bin/eval_server", "--port", "1"}));
  EXPECT_TRUE(matches_noncritical(p, "python3", {"/usr/bin/python3", "-u", "/srv/eval_server", "x"}));
  EXPECT_TRUE(matches_noncritical(p, "python3", {"python3", "-m", "tensorboard.main", "--logdir", "r"}));
  EXPECT_FALSE(matches_noncritical(p, "python3", {"python3", "train.py"}));
  EXPECT_FALSE(matches_noncritical(p, "python3", {"python3", "-c", "eval_server"}));
  EXPECT_FALSE(matches_noncritical({"re:("}, "x", {"x"}));  // a bad expression matches nothing
  EXPECT_FALSE(matches_noncritical({}, "eval_server", {"eval_server"}));
}

TEST(GuardJobGpus, MapsThroughCudaVisibleDevices) {
  const std::vector<gpu::DeviceInfo> devices = {h200(0), h200(1), h200(2), h200(3)};
  EXPECT_EQ(map_job_gpus({"0", "1"}, std::nullopt, devices), (std::vector<int>{0, 1}));
  EXPECT_EQ(map_job_gpus({"0", "1"}, std::string("2,3"), devices), (std::vector<int>{2, 3}));
  EXPECT_EQ(map_job_gpus({"0"}, std::string(devices[3].uuid), devices), (std::vector<int>{3}));
  // CUDA stops at the first entry that names no device.
  EXPECT_EQ(map_job_gpus({"0", "1"}, std::string("1,9,2"), devices), (std::vector<int>{1}));
  EXPECT_EQ(map_job_gpus({devices[2].uuid}, std::nullopt, devices), (std::vector<int>{2}));
  EXPECT_EQ(map_job_gpus({"7", "GPU-nope"}, std::nullopt, devices), (std::vector<int>{}));
  EXPECT_EQ(map_job_gpus({"0", "0"}, std::nullopt, devices), (std::vector<int>{0}));
}

}  // namespace
}  // namespace gpudoc::guard
