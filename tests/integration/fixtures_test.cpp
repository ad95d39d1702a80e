// The real H200 traces in tests/data: every one reads cleanly, and the sampler kept its promises
// on real hardware — each 200 ms utilization sample exactly once, the groups at their periods,
// GPM present on Hopper, and a clean end line.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "telemetry/trace.hpp"

namespace gpudoc::telemetry {
namespace {

std::vector<std::string> fixtures() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(std::string(GPUDOC_SOURCE_DIR) + "/tests/data"))
    if (e.path().extension() == ".jsonl") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(Fixtures, ThereAreTracesOfEveryReferencePattern) {
  auto f = fixtures();
  ASSERT_GE(f.size(), 20u);
  for (const char* name :
       {"idle", "gemm_saturated", "sawtooth_p1000_d50", "sawtooth_p50_d50", "tiny_kernels", "memory_bound",
        "memory_growth", "contention_turns", "allreduce_straggler_slow1", "allreduce_balanced"})
    EXPECT_TRUE(std::any_of(f.begin(), f.end(), [&](const std::string& p) {
      return p.ends_with(std::string("/") + name + ".jsonl");
    })) << name;
}

TEST(Fixtures, EveryUtilizationSampleOnceAndNoneLost) {
  for (const auto& path : fixtures()) {
    auto t = read_trace_file(path);
    ASSERT_TRUE(t.ok()) << t.error().message();
    ASSERT_TRUE(t->end.has_value()) << path << " has no end line";
    EXPECT_EQ(t->end->dropped_records, 0u) << path;
    for (std::size_t g = 0; g < t->gpus.size(); ++g) {
      const Series& u = t->gpus[g].metric(gpu::Metric::kGpuUtilizationPercent);
      ASSERT_GE(u.size(), 50u) << path << " GPU " << g;
      // These traces were recorded before the backend skipped the driver's rewrite of its newest
      // sample (a second copy < 1 ms after the first; see nvml_backend.cpp read_utilization): such
      // pairs are counted and bounded by the number of buffer drains; anything else is an error.
      std::size_t rewrites = 0;
      for (std::size_t i = 1; i < u.size(); ++i) {
        double dt = u.t[i] - u.t[i - 1];
        if (dt < 0.001) {
          ++rewrites;
          continue;
        }
        EXPECT_GT(dt, 0.15) << path << " GPU " << g << ": duplicate or early sample at t=" << u.t[i];
        EXPECT_LT(dt, 0.30) << path << " GPU " << g << ": a 200 ms sample is missing before t=" << u.t[i];
      }
      EXPECT_LE(rewrites, 1u) << path << " GPU " << g;
    }
  }
}

TEST(Fixtures, GroupsAtTheirPeriodsAndGpmOnHopper) {
  for (const auto& path : fixtures()) {
    auto t = read_trace_file(path);
    ASSERT_TRUE(t.ok()) << t.error().message();
    for (std::size_t g = 0; g < t->gpus.size(); ++g) {
      const Series& power = t->gpus[g].metric(gpu::Metric::kPowerWatts);
      ASSERT_GE(power.size(), 10u) << path;
      double mean_dt = (power.t.back() - power.t.front()) / static_cast<double>(power.size() - 1);
      EXPECT_NEAR(mean_dt, 0.1, 0.01) << path << " GPU " << g << ": power not every 100 ms";
      EXPECT_FALSE(t->gpus[g].metric(gpu::Metric::kGpmSmActivityPercent).empty()) << path;
      EXPECT_FALSE(t->gpus[g].metric(gpu::Metric::kMemoryTemperatureCelsius).empty()) << path;
      EXPECT_EQ(t->header.gpus[g].name, "NVIDIA H200") << path;
      for (double v : power.v) EXPECT_GT(v, 50.0) << path << ": an H200 never draws < 50 W";
    }
  }
}

}  // namespace
}  // namespace gpudoc::telemetry
