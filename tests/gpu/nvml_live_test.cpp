// The NVML backend on a real GPU (label "gpu": run on the GPU machine, not in CI). Checks that
// every group reads, that values are physically plausible, that the utilization buffer is drained
// sample by sample, that Hopper has GPM, and what a kFast read costs in CPU.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <thread>
#include <vector>

#include "gpu/backend.hpp"
#include "gpu/metrics.hpp"
#include "gpu/nvml/nvml_backend.hpp"

namespace gpudoc::gpu {
namespace {

using namespace std::chrono_literals;

// Suite "nvml_live" is lower case so `ctest -R nvml` selects it (ctest's -R is case-sensitive).
std::unique_ptr<Backend> open_or_fail() {
  auto r = open_nvml_backend();
  EXPECT_TRUE(r.ok()) << r.error().message();
  return r.ok() ? std::move(r).value() : nullptr;
}

std::optional<double> value_of(const GroupReading& r, Metric m) {
  std::optional<double> v;
  for (const auto& s : r.metrics)
    if (s.metric == m) v = s.value;
  return v;
}

double thread_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

TEST(nvml_live, EveryGroupReadsOnEveryGpu) {
  auto b = open_or_fail();
  ASSERT_TRUE(b);
  auto n = b->device_count();
  ASSERT_TRUE(n.ok());
  ASSERT_GE(*n, 1);
  auto sys = b->system_info();
  ASSERT_TRUE(sys.ok());
  EXPECT_EQ(sys->backend, "nvml");
  EXPECT_FALSE(sys->driver_version.empty());
  EXPECT_FALSE(sys->cuda_driver_version.empty());
  EXPECT_FALSE(sys->nvml_version.empty());

  for (int g = 0; g < *n; ++g) {
    auto d = b->device_info(g);
    ASSERT_TRUE(d.ok()) << d.error().message();
    EXPECT_FALSE(d->name.empty());
    EXPECT_EQ(d->uuid.rfind("GPU-", 0), 0U) << d->uuid;
    EXPECT_FALSE(d->pci_bus_id.empty());
    ASSERT_TRUE(d->memory_total_bytes);
    EXPECT_GT(*d->memory_total_bytes, 1ULL << 30);
    ASSERT_TRUE(d->sm_clock_max_mhz);
    EXPECT_GT(*d->sm_clock_max_mhz, 0);
    ASSERT_TRUE(d->compute_capability_major);
    if (d->temperature_slowdown_celsius && d->temperature_shutdown_celsius) {
      EXPECT_LE(*d->temperature_slowdown_celsius, *d->temperature_shutdown_celsius);
    }

    auto caps = b->capabilities(g);
    ASSERT_TRUE(caps.ok()) << caps.error().message();
    EXPECT_TRUE(caps->test(index(Metric::kPowerWatts)));
    EXPECT_TRUE(caps->test(index(Metric::kSmClockMhz)));
    EXPECT_TRUE(caps->test(index(Metric::kGpuUtilizationPercent)));
    for (MetricGroup group : all_groups()) {
      auto r = b->read(g, group);
      if (!r.ok()) {
        // Only a group with nothing supported may refuse.
        EXPECT_EQ(r.error().kind(), core::ErrorKind::kNotSupported) << info(group).name << ": " << r.error().message();
        if (group != MetricGroup::kProcesses) {
          EXPECT_TRUE((*caps & metrics_in(group)).none()) << info(group).name;
        }
        continue;
      }
      for (const auto& s : r->metrics) {
        EXPECT_TRUE(b->capabilities(g)->test(index(s.metric))) << info(s.metric).name << " read but not supported";
        EXPECT_GT(s.time_unix_ns, 1'600'000'000'000'000'000LL) << info(s.metric).name;
      }
    }
  }
  auto events = b->wait_events(100ms);
  EXPECT_TRUE(events.ok()) << events.error().message();
}

TEST(nvml_live, ValuesArePlausible) {
  auto b = open_or_fail();
  ASSERT_TRUE(b);
  for (int g = 0; g < *b->device_count(); ++g) {
    auto r = b->read(g, MetricGroup::kFast);
    ASSERT_TRUE(r.ok()) << r.error().message();
    ASSERT_TRUE(value_of(*r, Metric::kPowerWatts));
    EXPECT_GT(*value_of(*r, Metric::kPowerWatts), 0.0);
    EXPECT_LT(*value_of(*r, Metric::kPowerWatts), 2000.0);
    ASSERT_TRUE(value_of(*r, Metric::kGpuTemperatureCelsius));
    EXPECT_GE(*value_of(*r, Metric::kGpuTemperatureCelsius), 0.0);
    EXPECT_LE(*value_of(*r, Metric::kGpuTemperatureCelsius), 120.0);
    ASSERT_TRUE(value_of(*r, Metric::kSmClockMhz));
    EXPECT_GT(*value_of(*r, Metric::kSmClockMhz), 0.0);
    ASSERT_TRUE(value_of(*r, Metric::kMemoryClockMhz));
    EXPECT_GT(*value_of(*r, Metric::kMemoryClockMhz), 0.0);
    auto d = b->device_info(g);
    ASSERT_TRUE(d.ok());
    if (auto used = value_of(*r, Metric::kMemoryUsedBytes); used && d->memory_total_bytes) {
      EXPECT_LE(*used, static_cast<double>(*d->memory_total_bytes));
    }

    auto slow = b->read(g, MetricGroup::kSlow);
    ASSERT_TRUE(slow.ok()) << slow.error().message();
    if (auto limit = value_of(*slow, Metric::kPowerLimitWatts)) {
      EXPECT_GT(*limit, 50.0);
      EXPECT_LT(*limit, 2000.0);
    }
    if (auto t = value_of(*slow, Metric::kMemoryTemperatureCelsius)) {
      EXPECT_GE(*t, 0.0);
      EXPECT_LE(*t, 120.0);
    }

    auto e1 = b->read(g, MetricGroup::kEnergy);
    std::this_thread::sleep_for(300ms);
    auto e2 = b->read(g, MetricGroup::kEnergy);
    if (e1.ok() && e2.ok() && value_of(*e1, Metric::kEnergyJoules) && value_of(*e2, Metric::kEnergyJoules)) {
      EXPECT_GE(*value_of(*e2, Metric::kEnergyJoules), *value_of(*e1, Metric::kEnergyJoules));
    }
  }
}

TEST(nvml_live, UtilizationSamplesIncreaseAndAreAtMostOneSecondApart) {
  auto b = open_or_fail();
  ASSERT_TRUE(b);
  std::vector<std::int64_t> times;
  const auto end = std::chrono::steady_clock::now() + 2s;
  while (std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(250ms);
    auto r = b->read(0, MetricGroup::kUtilization);
    ASSERT_TRUE(r.ok()) << r.error().message();
    for (const auto& s : r->metrics) {
      if (s.metric != Metric::kGpuUtilizationPercent) continue;
      EXPECT_GE(s.value, 0.0);
      EXPECT_LE(s.value, 100.0);
      times.push_back(s.time_unix_ns);
    }
  }
  ASSERT_GE(times.size(), 3U) << "a 200 ms buffer should give ~10 samples in 2 s";
  for (std::size_t i = 1; i < times.size(); ++i) {
    EXPECT_GT(times[i], times[i - 1]) << "returned twice or out of order at " << i;
    EXPECT_LE(times[i] - times[i - 1], 1'000'000'000LL) << "a gap (lost samples?) at " << i;
  }
}

TEST(nvml_live, GpmMetricsOnHopper) {
  auto b = open_or_fail();
  ASSERT_TRUE(b);
  auto d = b->device_info(0);
  ASSERT_TRUE(d.ok());
  if (!d->compute_capability_major || *d->compute_capability_major < 9) GTEST_SKIP() << "GPM needs Hopper or newer";
  if (d->mig_enabled.value_or(false)) GTEST_SKIP() << "GPM on the parent device is not read in MIG mode";
  auto caps = b->capabilities(0);
  ASSERT_TRUE(caps.ok());
  ASSERT_TRUE(caps->test(index(Metric::kGpmSmActivityPercent)));
  auto prime = b->read(0, MetricGroup::kGpm);
  ASSERT_TRUE(prime.ok()) << prime.error().message();
  EXPECT_TRUE(prime->metrics.empty());
  std::this_thread::sleep_for(250ms);
  auto r = b->read(0, MetricGroup::kGpm);
  ASSERT_TRUE(r.ok()) << r.error().message();
  auto sm = value_of(*r, Metric::kGpmSmActivityPercent);
  ASSERT_TRUE(sm);
  EXPECT_GE(*sm, 0.0);
  EXPECT_LE(*sm, 100.0);
  ASSERT_TRUE(value_of(*r, Metric::kGpmDramActivityPercent));
  if (auto pcie = value_of(*r, Metric::kGpmPcieRxBytesPerSecond)) {
    EXPECT_GE(*pcie, 0.0);
  }
  // Two reads 10 ms apart: the second reports nothing rather than a 0 or NaN.
  auto close = b->read(0, MetricGroup::kGpm);
  ASSERT_TRUE(close.ok());
  EXPECT_TRUE(close->metrics.empty());
}

// The CPU a read costs is a benchmark's figure (tests/perf/nvml_read_cost.cpp, the 50 us target);
// here it is recorded, and bounded only far above it, against a read that spins or sleeps.
TEST(nvml_live, FastReadCostIsRecorded) {
  auto b = open_or_fail();
  ASSERT_TRUE(b);
  ASSERT_TRUE(b->read(0, MetricGroup::kFast).ok());  // probe outside the measurement
  constexpr int kReads = 1000;
  const double before = thread_cpu_seconds();
  for (int i = 0; i < kReads; ++i) {
    auto r = b->read(0, MetricGroup::kFast);
    ASSERT_TRUE(r.ok()) << r.error().message();
  }
  const double per_read_us = (thread_cpu_seconds() - before) / kReads * 1e6;
  RecordProperty("fast_read_cpu_us", std::to_string(per_read_us));
  EXPECT_LT(per_read_us, 1000.0);  // hang guard: normally well under 50 us of CPU; 20x+ margin
}

}  // namespace
}  // namespace gpudoc::gpu
