// One bench run: the plan's checks, and an observer that is asked for the GPU backend only when a
// CUDA GPU can run benchmarks.
#include "bench/run.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "support/temp_dir.hpp"

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

// bench's observer is the run's backend, opened when asked; one that cannot open says why.
TEST(BenchObserver, IsTheRunsBackendOrSaysWhyNot) {
  telemetry::BackendSource fake(*telemetry::parse_backend_spec("fake:2", "--backend"));
  const Observer seen = observe_through(fake)();
  EXPECT_NE(seen.backend, nullptr);
  EXPECT_NE(seen.clock, nullptr);
  EXPECT_EQ(seen.why_not, "");

  telemetry::BackendSource missing(*telemetry::parse_backend_spec("replay:/nonexistent/run.jsonl", "--backend"));
  const Observer none = observe_through(missing)();
  EXPECT_EQ(none.backend, nullptr);
  EXPECT_EQ(none.why_not.rfind("no GPU telemetry: ", 0), 0u) << none.why_not;
  EXPECT_NE(none.why_not.find("/nonexistent/run.jsonl"), std::string::npos) << none.why_not;
}

// A saved run is read whole up to 32 MiB; past that it is refused before it is read.
TEST(BenchSavedRun, IsReadUnderItsLimit) {
  const std::string small = std::string(GPUDOC_SOURCE_DIR) + "/tests/data/bench_h200_full.json";
  auto text = read_saved_run(small);
  ASSERT_TRUE(text.ok()) << text.error().message();
  EXPECT_GT(text->size(), 100u << 10);

  const testing::TempDir dir("gpudoc-bench-run");
  const std::string big = dir.file("big.json");
  std::FILE* f = std::fopen(big.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  ASSERT_EQ(::truncate(big.c_str(), (32 << 20) + 1), 0);  // sparse: nothing is written
  auto over = read_saved_run(big);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().kind(), core::ErrorKind::kBadInput);
  EXPECT_EQ(over.error().message(), big + ": larger than the limit of 32 MiB for a saved bench run");
}

}  // namespace
}  // namespace gpudoc::bench
