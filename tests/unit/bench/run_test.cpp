// One bench run: the plan's checks, and an observer that is asked for the GPU backend only when a
// CUDA GPU can run benchmarks.
#include "bench/run.hpp"

#include <gtest/gtest.h>

namespace gpudoc::bench {
namespace {

TEST(BenchPlan, SelectsInRegistryOrderAndChecksTheRequest) {
  auto all = make_plan({});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->selected.size(), registry().all().size());
  EXPECT_EQ(all->options.mode, Mode::kDefault);

  auto some = make_plan({.only = {"launch", "hbm"}, .mode = Mode::kQuick});
  ASSERT_TRUE(some.ok());
  ASSERT_FALSE(some->selected.empty());
  EXPECT_EQ(some->selected.front()->key().rfind("hbm", 0), 0u);  // registry order, not --only's
  EXPECT_EQ(some->options.mode, Mode::kQuick);

  auto unknown = make_plan({.only = {"no.such.benchmark"}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().kind(), core::ErrorKind::kUsage);
  auto negative = make_plan({.only = {}, .device = -1});
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.error().message(), "--device must be >= 0");
}

TEST(BenchRun, WithoutAGpuTheBackendIsNeverOpened) {
  if (probe_context(0).gpu) GTEST_SKIP() << "this machine has a GPU";
  auto plan = make_plan({.only = {"hbm.copy"}, .mode = Mode::kQuick});
  ASSERT_TRUE(plan.ok());
  int asked = 0;
  const Report rep = run(*plan,
                         [&] {
                           ++asked;
                           return Observer{nullptr, nullptr, "not wanted"};
                         },
                         {});
  EXPECT_EQ(asked, 0);
  EXPECT_EQ(rep.context.machine_reason, "no GPU");
  ASSERT_EQ(rep.outcomes.size(), 1u);
  EXPECT_EQ(rep.outcomes[0].status, OutcomeStatus::kWaived);
  EXPECT_EQ(exit_code(rep), 3);
}

}  // namespace
}  // namespace gpudoc::bench
