// p2p.* and nccl.* on a real multi-GPU machine (label "gpu": run on the GPU machine, not in CI).
// Each runs in quick mode, verifies, and lands in a physically plausible range. Skipped with the
// reason on a machine with fewer than 2 GPUs (and nccl.* where libnccl.so.2 cannot be loaded).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench/registry.hpp"
#include "view/bench_details.hpp"

namespace gpudoc::bench {
namespace {

class MultiGpuLive : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_ = probe_context(0);
    if (!ctx_.gpu) GTEST_SKIP() << "no GPU: " << ctx_.no_gpu_reason;
    if (ctx_.device_count < 2) GTEST_SKIP() << "needs 2 or more GPUs, " << ctx_.device_count << " visible";
  }
  // Runs `key` in quick mode; skips (with the waiver) when it is waived here.
  std::optional<BenchResult> run_one(const std::string& key) {
    const Benchmark* b = registry().find(key);
    EXPECT_NE(b, nullptr) << key;
    if (b == nullptr) return std::nullopt;
    if (auto why = b->applicable(ctx_)) {
      waiver_ = *why;
      return std::nullopt;
    }
    RunOptions opt;
    opt.mode = Mode::kQuick;
    auto r = b->run(ctx_, opt);
    EXPECT_TRUE(r.ok()) << key << ": " << (r.ok() ? "" : r.error().message());
    if (!r.ok()) return std::nullopt;
    EXPECT_TRUE(r->verified) << key << ": " << r->verify_detail;
    EXPECT_FALSE(r->samples.empty());
    std::printf("%s: median %.3f %s, min %.3f, max %.3f, CV %.2f%% — %s\n%s", key.c_str(), r->median, r->unit.c_str(),
                r->min, r->max, r->cv * 100, r->params.value("note", std::string()).c_str(),
                view::details_text(*r).c_str());
    return *r;
  }
  Context ctx_;
  std::string waiver_;
};

TEST_F(MultiGpuLive, P2pBandwidthIsNvlinkOrPcieSpeed) {
  const auto r = run_one("p2p.bandwidth");
  if (!r) GTEST_SKIP() << waiver_;
  // Above any PCIe Gen5 x16 figure would prove NVLink; the floor only proves a real copy ran.
  EXPECT_GT(r->median, 10.0);
  EXPECT_LT(r->median, 1000.0);
  EXPECT_EQ(r->params["matrix"]["values"].size(), static_cast<std::size_t>(ctx_.device_count));
}

TEST_F(MultiGpuLive, P2pBidirectionalIsAtLeastOneDirection) {
  const auto r = run_one("p2p.bidirectional");
  if (!r) GTEST_SKIP() << waiver_;
  EXPECT_GT(r->median, 10.0);
  EXPECT_LT(r->median, 2000.0);
}

TEST_F(MultiGpuLive, P2pLatencyIsAFewMicrosecondsAtMost) {
  const auto r = run_one("p2p.latency");
  if (!r) GTEST_SKIP() << waiver_;
  EXPECT_GT(r->median, 0.05);  // 50 ns: faster than any remote load could be
  EXPECT_LT(r->median, 10.0);
}

void expect_curve(const BenchResult& r) {
  const auto& curve = r.params["curve"];
  ASSERT_TRUE(curve.is_array());
  ASSERT_GE(curve.size(), 10u);
  EXPECT_EQ(curve.back()["bytes"].get<std::size_t>(), std::size_t{1} << 30);
  for (const auto& p : curve) EXPECT_TRUE(p["verified"].get<bool>()) << p.dump();
  // Large messages move faster than small ones.
  EXPECT_GT(curve.back()["busbw_gb_per_s"].get<double>(), curve.front()["busbw_gb_per_s"].get<double>());
  EXPECT_EQ(r.params["nvls"]["NCCL_NVLS_ENABLE"],
            std::getenv("NCCL_NVLS_ENABLE") ? std::getenv("NCCL_NVLS_ENABLE") : "");
}

TEST_F(MultiGpuLive, NcclAllReduce) {
  const auto r = run_one("nccl.all_reduce");
  if (!r) GTEST_SKIP() << waiver_;
  expect_curve(*r);
  EXPECT_GT(r->median, 10.0);
  EXPECT_LT(r->median, 1000.0);
}

TEST_F(MultiGpuLive, NcclAllGather) {
  const auto r = run_one("nccl.all_gather");
  if (!r) GTEST_SKIP() << waiver_;
  expect_curve(*r);
  EXPECT_GT(r->median, 10.0);
  EXPECT_LT(r->median, 1000.0);
}

TEST_F(MultiGpuLive, NcclReduceScatter) {
  const auto r = run_one("nccl.reduce_scatter");
  if (!r) GTEST_SKIP() << waiver_;
  expect_curve(*r);
  EXPECT_GT(r->median, 10.0);
  EXPECT_LT(r->median, 1000.0);
}

}  // namespace
}  // namespace gpudoc::bench
