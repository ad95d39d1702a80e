// The compute cap's controller (pure logic): the launch duty shrinks while the slice's measured
// share is over its cap, grows back under it, never swings more than 2x per step, and holds on
// a missing reading.
#include <gtest/gtest.h>

#include "slice/inject/compute_cap.hpp"

namespace gpudoc::slice::inject {
namespace {

TEST(SliceDutyController, SettlesWhereTheShareMeetsTheCap) {
  DutyController c;
  // A workload whose share is proportional to the duty it is allowed (100 % at duty 1).
  for (int step = 0; step < 40; ++step) c.update(100.0 * c.duty(), 30);
  EXPECT_NEAR(c.duty(), 0.30, 0.01);
  for (int step = 0; step < 40; ++step) c.update(100.0 * c.duty(), 60);
  EXPECT_NEAR(c.duty(), 0.60, 0.01);
}

TEST(SliceDutyController, MovesAtMostTwofoldPerStepAndHoldsWithoutAReading) {
  DutyController c;
  c.update(100, 1);  // far over: only halved
  EXPECT_DOUBLE_EQ(c.duty(), 0.5);
  c.update(-1, 30);  // no reading
  EXPECT_DOUBLE_EQ(c.duty(), 0.5);
  c.update(0, 30);  // idle: grows, at most doubled, never past 1
  EXPECT_DOUBLE_EQ(c.duty(), 1.0);
  for (int step = 0; step < 20; ++step) c.update(100, 1);
  EXPECT_DOUBLE_EQ(c.duty(), DutyController::kMinDuty);
}

}  // namespace
}  // namespace gpudoc::slice::inject
