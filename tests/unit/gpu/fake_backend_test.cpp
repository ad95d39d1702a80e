#include "gpu/fake/fake_backend.hpp"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace gpudoc::gpu
