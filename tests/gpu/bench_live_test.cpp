// The hbm and launch benchmarks on a real GPU (label "gpu": run on the GPU machine, not in CI):
// each runs in quick mode, verifies, and lands in a physically plausible range.
#include <gtest/gtest.h>

#include <cstdio>

#include "bench/engine.hpp"
#include "bench/registry.hpp"

namespace gpudoc::bench {
namespace {

class BenchLive : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_ = probe_context(0);
    ASSERT_TRUE(ctx_.gpu.has_value()) << ctx_.no_gpu_reason;
  }
  BenchResult run_one(const std::string& key) {
    const Benchmark* b = registry().find(key);
    EXPECT_NE(b, nullptr) << key;
    if (b == nullptr) return {};
    RunOptions opt;
    opt.mode = Mode::kQuick;
    auto r = b->run(ctx_, opt);
    EXPECT_TRUE(r.ok()) << key << ": " << (r.ok() ? "" : r.error().message());
    if (!r.ok()) return {};
    EXPECT_TRUE(r->verified) << key << ": " << r->verify_detail;
    EXPECT_FALSE(r->samples.empty());
    std::printf("%s: median %.2f %s, min %.2f, max %.2f, CV %.2f%%\n", key.c_str(), r->median, r->unit.c_str(), r->min,
                r->max, r->cv * 100);
    return *r;
  }
  Context ctx_;
};

TEST_F(BenchLive, HbmCopyReachesHbmSpeeds) { EXPECT_GT(run_one("hbm.copy").median, 1000.0); }
TEST_F(BenchLive, HbmReadReachesHbmSpeeds) { EXPECT_GT(run_one("hbm.read").median, 1000.0); }
TEST_F(BenchLive, HbmWriteReachesHbmSpeeds) { EXPECT_GT(run_one("hbm.write").median, 1000.0); }

TEST_F(BenchLive, LaunchThroughputIsMicroseconds) {
  const auto r = run_one("launch.throughput");
  EXPECT_GT(r.median, 0.0);
  EXPECT_LT(r.median, 20.0);
}
TEST_F(BenchLive, LaunchLatencyIsMicroseconds) {
  const auto r = run_one("launch.latency");
  EXPECT_GT(r.median, 0.0);
  EXPECT_LT(r.median, 20.0);
}
TEST_F(BenchLive, GraphNodeIsMicroseconds) {
  const auto r = run_one("launch.graph_node");
  EXPECT_GT(r.median, 0.0);
  EXPECT_LT(r.median, 20.0);
}

TEST_F(BenchLive, WholeSuiteRunsAndExitsZero) {
  const Report rep = run_benchmarks(registry().all(), ctx_, RunOptions{Mode::kQuick, 0}, nullptr);
  for (const Outcome& o : rep.outcomes) EXPECT_EQ(o.status, OutcomeStatus::kOk) << o.key << ": " << o.reason;
  EXPECT_EQ(exit_code(rep), 0);
}

}  // namespace
}  // namespace gpudoc::bench
