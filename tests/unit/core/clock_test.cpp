#include "core/clock.hpp"

#include <gtest/gtest.h>

namespace gpudoc::core {
namespace {

TEST(ManualClock, SleepAdvancesOnlyForward) {
  ManualClock c(1'000'000'000);
  EXPECT_EQ(c.now().time_since_epoch().count(), 0);
  c.sleep_until(MonoTime(Nanos(500)));
  EXPECT_EQ(c.now().time_since_epoch().count(), 500);
  c.sleep_until(MonoTime(Nanos(100)));  // in the past: no change
  EXPECT_EQ(c.now().time_since_epoch().count(), 500);
  c.advance(Nanos(10));
  EXPECT_EQ(c.unix_now_ns(), 1'000'000'510);
}

TEST(SystemClock, IsMonotonicAndWallClockIsPlausible) {
  SystemClock c;
  auto a = c.now();
  auto b = c.now();
  EXPECT_LE(a, b);
  EXPECT_GT(c.unix_now_ns(), 1'600'000'000'000'000'000);  // after 2020
}

}  // namespace
}  // namespace gpudoc::core
