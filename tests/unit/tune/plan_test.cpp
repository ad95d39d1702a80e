// tune::make_plan: the budget split between the layers before the first trial.
#include "tune/plan.hpp"

#include <gtest/gtest.h>

namespace gpudoc::tune {
namespace {

Change change(const std::string& id, Layer layer, int priority) {
  return Change{.id = id, .knob = id, .layer = layer, .priority = priority};
}

TEST(Plan, AmpleBudgetGetsTheMostRepetitions) {
  const Plan p = make_plan({change("a", Layer::kProcess, 1), change("b", Layer::kFramework, 0)}, 1.0, 1000);
  EXPECT_EQ(p.repetitions, kRepetitions);
  ASSERT_EQ(p.layers.size(), 2u);
  // first block: (changes + reference) x repetitions; one confirmation block: 2 x its repetitions
  EXPECT_DOUBLE_EQ(p.layers[0].planned_s, kRepetitions * 2 + 2 * kConfirmRepetitions);
  EXPECT_DOUBLE_EQ(p.final_s, 2.0 * (kConfirmRepetitions + 1));
  EXPECT_DOUBLE_EQ(p.reserve_after(Layer::kProcess), p.final_s + p.layers[1].planned_s);
  EXPECT_DOUBLE_EQ(p.reserve_after(Layer::kFramework), p.final_s);
  EXPECT_TRUE(p.dropped.empty());
}

TEST(Plan, TightBudgetDropsTheLeastPointedToFirst) {
  const std::vector<Change> all = {change("omp", Layer::kProcess, 1), change("alloc", Layer::kCuda, 1),
                                   change("loader", Layer::kFramework, 0)};
  // one layer of one change at 2 repetitions: 2x2 + 2x2 = 8 trials
  const Plan p = make_plan(all, 1.0, 8.5);
  EXPECT_EQ(p.repetitions, kMinRepetitions);
  ASSERT_EQ(p.layers.size(), 1u);
  EXPECT_EQ(p.layers[0].changes[0].id, "loader");
  ASSERT_EQ(p.dropped.size(), 2u);
  EXPECT_EQ(p.dropped[0].id, "alloc");  // the later layer of the two
  EXPECT_EQ(p.dropped[1].id, "omp");
  EXPECT_NE(p.dropped[0].why.find("no room in the budget"), std::string::npos);
}

TEST(Plan, NothingFitsNothingPlanned) {
  const Plan p = make_plan({change("a", Layer::kProcess, 0)}, 10.0, 5);
  EXPECT_TRUE(p.layers.empty());
  EXPECT_EQ(p.dropped.size(), 1u);
}

TEST(Plan, OneKnobNeedsNoFinalCheck) {
  const Plan p = make_plan({change("a", Layer::kProcess, 0)}, 1.0, 100);
  EXPECT_DOUBLE_EQ(p.final_s, 0);
}

}  // namespace
}  // namespace gpudoc::tune
