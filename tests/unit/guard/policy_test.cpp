#include "guard/policy.hpp"

#include <gtest/gtest.h>

#include <string>

namespace gpudoc::guard {
namespace {

std::string error_of(const std::string& text) {
  auto p = parse_policy(text, "p.policy");
  EXPECT_FALSE(p.ok()) << text;
  return p ? std::string() : p.error().message();
}

TEST(GuardPolicy, DefaultsParseIntoThreeLevels) {
  auto p = parse_policy(default_policy_text(), "default");
  ASSERT_TRUE(p.ok()) << p.error().message();
  const Policy d = default_policy();
  ASSERT_EQ(d.levels.size(), 3u);
  EXPECT_DOUBLE_EQ(d.horizon_s, 5.0);
  EXPECT_EQ(d.levels[0].actions.at(0).action, Action::kShrinkBatch);
  EXPECT_DOUBLE_EQ(d.levels[0].actions.at(0).factor, 0.75);
  EXPECT_EQ(d.levels[1].actions.at(1).action, Action::kPauseNoncritical);
  EXPECT_EQ(d.levels[2].actions.back().action, Action::kStop);
  EXPECT_EQ(d.levels[2].fatal.size(), 4u);
  EXPECT_EQ(d.levels[0].triggers.at(0).threshold.base, LimitBase::kMaxOperating);
  EXPECT_DOUBLE_EQ(d.levels[0].triggers.at(0).threshold.offset, -2);
}

TEST(GuardPolicy, FileLevelReplacesOnlyThatLevel) {
  auto p = parse_policy(
      "horizon_s = 3 # shorter\n[level1]\nwhen = gpu_temp_forecast >= slowdown - 8\nclear_below = slowdown - 12\n"
      "action = shrink_batch 0.5\nmin_interval_s = 10\nnoncritical = tensorboard re:eval-.*\n",
      "p.policy");
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_DOUBLE_EQ(p->horizon_s, 3);
  ASSERT_EQ(p->levels.size(), 3u);
  ASSERT_EQ(p->levels[0].triggers.size(), 1u);
  EXPECT_DOUBLE_EQ(p->levels[0].triggers[0].clear->offset, -12);
  EXPECT_DOUBLE_EQ(p->levels[0].actions[0].factor, 0.5);
  EXPECT_EQ(p->noncritical.size(), 2u);
  EXPECT_EQ(p->levels[1].triggers.size(), default_policy().levels[1].triggers.size());
}

TEST(GuardPolicy, EachErrorNamesFileAndLine) {
  EXPECT_EQ(error_of("\n\nbogus = 1\n").rfind("p.policy:3: unknown key 'bogus'", 0), 0u);
  EXPECT_NE(
      error_of("[level1]\nwhen = gpu_temp_forecast >= 85\naction = stop\n").find("p.policy:2: '85' is a fixed number"),
      std::string::npos);
  EXPECT_NE(error_of("[level1]\nwhen = gpu_temp_forecast >= slowdown\naction = reset_gpu\n")
                .find("p.policy:3: 'reset_gpu': a GPU reset is never an action"),
            std::string::npos);
  EXPECT_NE(error_of("[level4]\n").find("p.policy:1: unknown section"), std::string::npos);
  EXPECT_NE(error_of("# c\n[level1]\naction = stop\n").find("p.policy:2: [level1] has neither"), std::string::npos);
  EXPECT_NE(error_of("[level1]\nwhen = gpu_temp_forecast >= slowdown\n").find("p.policy:1: [level1] has no action"),
            std::string::npos);
  EXPECT_NE(error_of("[level1]\nwhen = seconds_to_oom >= 5\n").find("p.policy:2: expected 'seconds_to_oom <= LIMIT'"),
            std::string::npos);
  EXPECT_NE(error_of("[level1]\nclear_below = slowdown\n").find("p.policy:2: 'clear_below' must follow a 'when'"),
            std::string::npos);
  EXPECT_NE(error_of("[level1]\nwhen = gpu_temp_forecast >= slowdown\nclear_above = slowdown\n").find("p.policy:3:"),
            std::string::npos);
  EXPECT_NE(error_of("[level1]\naction = shrink_batch 1.5\n").find("p.policy:2: 'shrink_batch 1.5'"),
            std::string::npos);
  EXPECT_NE(error_of("[level1]\naction = resume_noncritical\n").find("p.policy:2:"), std::string::npos);
  EXPECT_NE(error_of("[level1]\nfatal = meteor\n").find("p.policy:2: unknown fatal event 'meteor'"), std::string::npos);
  EXPECT_NE(error_of("[level1]\nwhen = power >= slowdown\n").find("p.policy:2:"), std::string::npos);
  EXPECT_NE(error_of("horizon_s = -1\n").find("p.policy:1: horizon_s"), std::string::npos);
  EXPECT_NE(error_of("noncritical = re:(\n").find("p.policy:1:"), std::string::npos);
  EXPECT_NE(error_of("[level2]\nfatal = xid\naction = stop\n[level2]\n").find("p.policy:4: [level2] appears twice"),
            std::string::npos);
  EXPECT_NE(error_of("when = gpu_temp_forecast >= slowdown\n").find("p.policy:1: 'when' outside a level"),
            std::string::npos);
  EXPECT_EQ(parse_policy("x", "p").error().kind(), core::ErrorKind::kBadInput);
}

}  // namespace
}  // namespace gpudoc::guard
