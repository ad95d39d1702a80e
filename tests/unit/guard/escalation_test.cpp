#include "guard/escalation.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

namespace gpudoc::guard {
namespace {

gpu::DeviceInfo device(double slowdown, double max_operating, double shutdown) {
  gpu::DeviceInfo info;
  info.temperature_slowdown_celsius = slowdown;
  info.temperature_gpu_max_celsius = max_operating;
  info.temperature_shutdown_celsius = shutdown;
  info.temperature_memory_max_celsius = 95;
  return info;
}

EscalationInput at(double t, double forecast) {
  EscalationInput in;
  in.t = t;
  in.gpu_temp_now = forecast - 1;
  in.gpu_temp_forecast = forecast;
  return in;
}

// Default levels on (slowdown 87, max operating 85, shutdown 92): level 1 at >= 83 (clears < 79),
// level 2 at >= 86 (clears < 81), level 3 at >= 89.
TEST(GuardEscalation, RisingForecastEscalatesOneTwoThree) {
  Escalator e(default_policy(), device(87, 85, 92));
  EXPECT_FALSE(e.tick(at(0, 80)));
  auto d1 = e.tick(at(1, 83.5));
  ASSERT_TRUE(d1);
  EXPECT_EQ(d1->level, 1);
  ASSERT_EQ(d1->actions.size(), 1u);
  EXPECT_EQ(d1->actions[0].action, Action::kShrinkBatch);
  EXPECT_NE(d1->reason.find("83.5"), std::string::npos) << d1->reason;
  EXPECT_NE(d1->reason.find("max_operating 85"), std::string::npos) << d1->reason;
  EXPECT_DOUBLE_EQ(*d1->threshold, 83);
  auto d2 = e.tick(at(2, 86.2));
  ASSERT_TRUE(d2);
  EXPECT_EQ(d2->level, 2);
  EXPECT_EQ(d2->actions.at(0).action, Action::kCheckpointNow);
  EXPECT_EQ(d2->actions.at(1).action, Action::kPauseNoncritical);
  auto d3 = e.tick(at(3, 89.5));
  ASSERT_TRUE(d3);
  EXPECT_EQ(d3->level, 3);
  EXPECT_EQ(d3->actions.back().action, Action::kStop);
  EXPECT_TRUE(e.notes().empty());
}

TEST(GuardEscalation, HysteresisNoFlappingThenResume) {
  Escalator e(default_policy(), device(87, 85, 92));
  ASSERT_TRUE(e.tick(at(0, 86.5)));  // level 2
  int decisions = 0;
  for (int i = 1; i < 100; ++i) {  // hovering around the level 2 threshold, above its clear limit
    if (e.tick(at(i, (i % 2 != 0) ? 85.5 : 86.1))) ++decisions;
  }
  EXPECT_EQ(decisions, 0);
  EXPECT_EQ(e.level(), 2);
  auto down = e.tick(at(100, 80));  // below level 2's clear (81), within level 1's band (>= 79)
  ASSERT_TRUE(down);
  EXPECT_EQ(down->level, 1);
  ASSERT_EQ(down->actions.size(), 1u);
  EXPECT_EQ(down->actions[0].action, Action::kResumeNoncritical);
  auto zero = e.tick(at(101, 78));
  ASSERT_TRUE(zero);
  EXPECT_EQ(zero->level, 0);
  EXPECT_TRUE(zero->actions.empty());
  EXPECT_NE(down->reason.find("gpu_temp_forecast 80.0 <"), std::string::npos) << down->reason;
}

TEST(GuardEscalation, RateCapHoldsActionsBack) {
  Escalator e(default_policy(), device(87, 85, 92));  // level 1: min_interval_s 60
  ASSERT_EQ(e.tick(at(0, 84))->actions.size(), 1u);
  ASSERT_EQ(e.tick(at(5, 70))->level, 0);
  auto again = e.tick(at(10, 84));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->level, 1);
  EXPECT_TRUE(again->rate_limited);
  EXPECT_TRUE(again->actions.empty());
  ASSERT_EQ(e.tick(at(20, 70))->level, 0);
  auto later = e.tick(at(61, 84));
  ASSERT_TRUE(later);
  EXPECT_FALSE(later->rate_limited);
  EXPECT_EQ(later->actions.size(), 1u);
}

TEST(GuardEscalation, FatalEventGoesStraightToThreeAndLatches) {
  Escalator e(default_policy(), device(87, 85, 92));
  EscalationInput in = at(0, 60);
  in.fatal.gpu_lost = true;
  auto d = e.tick(in);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->level, 3);
  EXPECT_TRUE(d->fatal);
  EXPECT_EQ(d->actions.back().action, Action::kStop);
  EXPECT_NE(d->reason.find("gpu_lost"), std::string::npos);
  EXPECT_FALSE(e.tick(at(1, 40)));
  EXPECT_EQ(e.level(), 3);
}

TEST(GuardEscalation, ThresholdsComeFromEachDevice) {
  Escalator hot(default_policy(), device(87, 85, 92));
  Escalator cool(default_policy(), device(80, 78, 85));
  EXPECT_FALSE(hot.tick(at(0, 78)));
  auto d = cool.tick(at(0, 78));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->level, 1);  // 78 >= 78 - 2
  EXPECT_FALSE(hot.tick(at(1, 82.9)));
  ASSERT_TRUE(hot.tick(at(2, 83)));
}

TEST(GuardEscalation, MissingLimitDisablesTriggerAndSaysSo) {
  gpu::DeviceInfo info;  // no limits at all
  Escalator e(default_policy(), info);
  EXPECT_FALSE(e.notes().empty());
  bool named = false;
  for (const auto& n : e.notes()) named = named || n.find("max_operating") != std::string::npos;
  EXPECT_TRUE(named);
  for (double temp : {90.0, 120.0, 200.0}) EXPECT_FALSE(e.tick(at(temp, temp)));
  EscalationInput oom;  // a trigger with no device limit still works
  oom.t = 300;
  oom.seconds_to_oom = 20;
  auto d = e.tick(oom);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->level, 2);
}

}  // namespace
}  // namespace gpudoc::guard
