#include "gpu/fake/fake_backend.hpp"

#include <gtest/gtest.h>

#include <map>

namespace gpudoc::gpu {
namespace {

using namespace std::chrono_literals;

TEST(FakeBackend, UtilizationBufferAdvancesEvery200ms) {
  core::ManualClock clock;
  FakeBackend fake(clock, 1);
  clock.advance(1s);
  auto r = fake.read(0, MetricGroup::kUtilization);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->metrics.size(), 10u);  // 5 samples × (gpu, memory)
  auto again = fake.read(0, MetricGroup::kUtilization);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->metrics.empty()) << "a buffered sample was handed out twice";
}

TEST(FakeBackend, InjectedErrorsAndLoss) {
  core::ManualClock clock;
  FakeBackend fake(clock, 2);
  fake.inject_error(0, MetricGroup::kFast, core::ErrorKind::kTimeout, 2);
  EXPECT_EQ(fake.read(0, MetricGroup::kFast).error().kind(), core::ErrorKind::kTimeout);
  EXPECT_EQ(fake.read(0, MetricGroup::kFast).error().kind(), core::ErrorKind::kTimeout);
  EXPECT_TRUE(fake.read(0, MetricGroup::kFast).ok());
  fake.lose_gpu(1, clock.now() + 1s);
  EXPECT_TRUE(fake.read(1, MetricGroup::kFast).ok());
  clock.advance(1s);
  auto lost = fake.read(1, MetricGroup::kFast);
  ASSERT_FALSE(lost.ok());
  EXPECT_EQ(lost.error().kind(), core::ErrorKind::kGpuLost);
  EXPECT_EQ(fake.device_info(1).error().kind(), core::ErrorKind::kGpuLost);
  EXPECT_EQ(fake.device_info(7).error().kind(), core::ErrorKind::kBadInput);
}

TEST(FakeBackend, UnsupportedMetricsAreAbsentNotZero) {
  core::ManualClock clock;
  FakeBackend fake(clock, 1);
  MetricSet s;
  s.set(index(Metric::kPowerWatts));
  fake.set_supported(0, s);
  auto r = fake.read(0, MetricGroup::kFast);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->metrics.size(), 1u);
  EXPECT_EQ(r->metrics[0].metric, Metric::kPowerWatts);
  EXPECT_EQ(fake.read(0, MetricGroup::kGpm).error().kind(), core::ErrorKind::kNotSupported);
}

// The errors group reads the counters of the GPU's health facts: scripted once, seen by both.
TEST(FakeBackend, ErrorCountersComeFromTheHealthFacts) {
  core::ManualClock clock;
  FakeBackend fake(clock, 1);
  auto values = [&] {
    std::map<Metric, double> out;
    auto r = fake.read(0, MetricGroup::kErrors);
    EXPECT_TRUE(r.ok());
    if (r.ok())
      for (const auto& s : r->metrics) out[s.metric] = s.value;
    return out;
  };
  // A healthy H200: every counter there, at 0 (18 NVLinks summed).
  const auto healthy = values();
  EXPECT_EQ(healthy.size(), metrics_in(MetricGroup::kErrors).count());
  for (const auto& [m, v] : healthy) EXPECT_EQ(v, 0) << info(m).name;

  HealthFacts f = FakeBackend::default_health_facts();
  f.ecc_volatile_corrected = 11;
  f.ecc_volatile_uncorrected = 12;
  f.ecc_aggregate_corrected = 21;
  f.ecc_aggregate_uncorrected = std::nullopt;  // not reported: absent, not 0
  f.remapped_rows_corrected = 3;
  f.remapped_rows_uncorrected = 1;
  f.remap_pending = true;
  f.remap_failed = false;
  f.pcie_replay_errors = 5;
  f.nvlinks.resize(2);
  f.nvlinks[0].crc_flit_errors = 7;
  f.nvlinks[1].crc_flit_errors = 8;
  f.nvlinks[1].replay_errors = 2;
  f.nvlinks[0].replay_errors = std::nullopt;
  f.nvlinks[0].crc_data_errors = std::nullopt;
  f.nvlinks[1].crc_data_errors = std::nullopt;
  fake.set_health_facts(0, f);
  const auto v = values();
  EXPECT_EQ(v.at(Metric::kEccCorrectedVolatileErrors), 11);
  EXPECT_EQ(v.at(Metric::kEccUncorrectedVolatileErrors), 12);
  EXPECT_EQ(v.at(Metric::kEccCorrectedAggregateErrors), 21);
  EXPECT_EQ(v.count(Metric::kEccUncorrectedAggregateErrors), 0u);
  EXPECT_EQ(v.at(Metric::kRemappedRowsCorrectable), 3);
  EXPECT_EQ(v.at(Metric::kRemappedRowsUncorrectable), 1);
  EXPECT_EQ(v.at(Metric::kRowRemapPending), 1);
  EXPECT_EQ(v.at(Metric::kRowRemapFailure), 0);
  EXPECT_EQ(v.at(Metric::kPcieReplayErrors), 5);
  EXPECT_EQ(v.at(Metric::kNvlinkCrcFlitErrors), 15);  // summed over the links
  EXPECT_EQ(v.at(Metric::kNvlinkReplayErrors), 2);    // the one link that reports it
  EXPECT_EQ(v.count(Metric::kNvlinkCrcDataErrors), 0u);
  EXPECT_EQ(v.at(Metric::kNvlinkRecoveryErrors), 0);
  // The same mapping, directly: samples are stamped with the time given.
  const auto samples = error_counter_samples(f, 42);
  EXPECT_EQ(samples.size(), v.size());
  for (const auto& s : samples) EXPECT_EQ(s.time_unix_ns, 42);
  EXPECT_TRUE(error_counter_samples(HealthFacts{}, 0).empty());
}

}  // namespace
}  // namespace gpudoc::gpu
