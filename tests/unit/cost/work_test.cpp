// The work a job reports (cost/work.hpp): steps are a counter, samples and tokens add up.
#include "cost/work.hpp"

#include <gtest/gtest.h>

namespace gpudoc::cost {
namespace {

TEST(CostWork, StepIsACounterSamplesAndTokensAddUp) {
  WorkCounter w;
  EXPECT_TRUE(w.add(nlohmann::json::parse(R"({"step": 10, "samples": 256, "tokens": 1000, "loss": 2.0})")).empty());
  EXPECT_TRUE(w.add(nlohmann::json::parse(R"({"step": 20, "samples": 256, "tokens": 1000})")).empty());
  EXPECT_TRUE(w.add(nlohmann::json::parse(R"({"step": 15})")).empty());  // out of order: the largest stands
  EXPECT_DOUBLE_EQ(*w.work().steps, 20);
  EXPECT_DOUBLE_EQ(*w.work().samples, 512);
  EXPECT_DOUBLE_EQ(*w.work().tokens, 2000);
}

TEST(CostWork, EventsAndBadValuesAreNotCounted) {
  WorkCounter w;
  EXPECT_TRUE(w.add(nlohmann::json::parse(R"({"event": "end", "steps": 99, "samples": 5})")).empty());
  const auto refused = w.add(nlohmann::json::parse(R"({"samples": -1, "tokens": "many", "step": null})"));
  EXPECT_EQ(refused, (std::vector<std::string>{"step", "samples", "tokens"}));
  EXPECT_TRUE(w.work().empty());
  EXPECT_TRUE(w.add(nlohmann::json::array()).empty());
}

TEST(CostWork, RunsAddUpAndJsonNamesWhatIsMissing) {
  Work a{.steps = 10, .samples = 100, .tokens = std::nullopt};
  a.add(Work{.steps = 5, .samples = std::nullopt, .tokens = 7});
  EXPECT_DOUBLE_EQ(*a.steps, 15);
  EXPECT_DOUBLE_EQ(*a.samples, 100);
  EXPECT_DOUBLE_EQ(*a.tokens, 7);
  const auto j = to_json(Work{.steps = 3, .samples = std::nullopt, .tokens = std::nullopt});
  EXPECT_EQ(j["steps"], 3.0);
  EXPECT_TRUE(j["samples"].is_null());
  EXPECT_TRUE(is_work_key("tokens"));
  EXPECT_FALSE(is_work_key("step_ms"));
}

}  // namespace
}  // namespace gpudoc::cost
