// The hbm, pcie, gemm and launch benchmarks on a real GPU (label "gpu": run on the GPU machine, not in CI):
// each runs in quick mode, verifies, and lands in a physically plausible range.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <utility>

#include "bench/engine.hpp"
#include "bench/machine.hpp"
#include "bench/registry.hpp"
#include "gpu/nvml/nvml_backend.hpp"

namespace gpudoc::bench {
namespace {

class BenchLive : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_ = probe_context(0);
    ASSERT_TRUE(ctx_.gpu.has_value()) << ctx_.no_gpu_reason;
  }
  BenchResult run_one(const std::string& key, Mode mode = Mode::kQuick) {
    const Benchmark* b = registry().find(key);
    EXPECT_NE(b, nullptr) << key;
    if (b == nullptr) return {};
    RunOptions opt;
    opt.mode = mode;
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
  // The host accounting: per sample, the host cannot finish issuing the launches later than the
  // GPU finishes running them (the events' span), and the thread's CPU time fits in the host's.
  ASSERT_TRUE(r.params.contains("host_issue_us"));
  const auto issue = r.params["host_issue_us"].get<std::vector<double>>();
  const auto cpu = r.params["host_thread_cpu_us"].get<std::vector<double>>();
  ASSERT_EQ(issue.size(), r.samples.size());
  ASSERT_EQ(cpu.size(), r.samples.size());
  for (std::size_t i = 0; i < issue.size(); ++i) {
    EXPECT_GT(cpu[i], 0.0) << i;
    EXPECT_LE(cpu[i], issue[i] * 1.01) << i;
    EXPECT_LE(issue[i], r.samples[i] * 1.05) << i;
  }
  std::printf("host: cpu %d, spread note: %s\n", r.params["host_cpu"].get<int>(),
              r.params.contains("host_spread") ? r.params["host_spread"].get<std::string>().c_str() : "(none)");
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

// pcie: pinned reaches PCIe Gen4/Gen5 speeds (the H200 target is >= 54 GB/s each way), pageable
// anything a staged copy gives. Copies dip from outside the process, one way and both ways at once
// (docs/results/bench-h200.md, "PCIe dips that come from outside the process"), so the 2 % CV target
// is a figure the results report, not a test bound: each test catches a measurement that is broken
// (a spread of 10 % or more), not a host that hiccuped. The default mode, as `gpudoc bench` runs.
constexpr double kBrokenPcieCv = 0.10;
TEST_F(BenchLive, PciePinnedHostToDevice) {
  const auto r = run_one("pcie.h2d.pinned", Mode::kDefault);
  EXPECT_GT(r.median, 10.0);
  EXPECT_LT(r.cv, kBrokenPcieCv);
}
TEST_F(BenchLive, PciePinnedDeviceToHost) {
  const auto r = run_one("pcie.d2h.pinned", Mode::kDefault);
  EXPECT_GT(r.median, 10.0);
  EXPECT_LT(r.cv, kBrokenPcieCv);
}
TEST_F(BenchLive, PciePinnedBidirectional) {
  const auto r = run_one("pcie.bidir.pinned", Mode::kDefault);
  EXPECT_GT(r.median, 15.0);
  EXPECT_LT(r.cv, kBrokenPcieCv);
}
TEST_F(BenchLive, PciePageable) {
  for (const char* key : {"pcie.h2d.pageable", "pcie.d2h.pageable", "pcie.bidir.pageable"})
    EXPECT_GT(run_one(key).median, 2.0) << key;
}

// gemm: verified against the host reference, and far above what a broken setup (no tensor cores,
// a wrong algorithm) would give on a Hopper GPU.
TEST_F(BenchLive, GemmHeadlineTypes) {
  const std::pair<const char*, double> floors[] = {
      {"gemm.fp32", 10.0}, {"gemm.tf32", 50.0}, {"gemm.fp16", 100.0}, {"gemm.bf16", 100.0}, {"gemm.fp8", 200.0}};
  for (const auto& [key, floor] : floors) {
    const Benchmark* b = registry().find(key);
    ASSERT_NE(b, nullptr);
    if (auto why = b->applicable(ctx_)) {
      ADD_FAILURE() << key << " " << *why;  // on the GPU machine cuBLASLt must load
      continue;
    }
    // The default mode, as `gpudoc bench` runs: the CV bound is the issue's for the headline
    // figures. --quick's ten 50 ms samples under the power cap spread to 2.5% (H200, 2026-11-30).
    const auto r = run_one(key, Mode::kDefault);
    EXPECT_GT(r.median, floor) << key;
    EXPECT_LE(r.cv, 0.02) << key;
    EXPECT_EQ(r.params["m"], 8192) << key;
    // The winner says where it came from and how cuBLASLt configured it; on Hopper and newer the
    // tensor-core kernels run in thread-block clusters, and the heuristics' first picks have
    // cluster-shape variants to time as well (the fp32 kernels without TF32 have none on the H200).
    EXPECT_EQ(r.params["algo_config"].get<std::string>().rfind("algo ", 0), 0u) << key;
    EXPECT_NE(r.params["algo_origin"].get<std::string>().find("heuristics #"), std::string::npos) << key;
    EXPECT_EQ(r.params["algo_candidates"].size(), r.params["algo_seconds"].size()) << key;
    if (ctx_.gpu->compute_major >= 9 && std::string(key) != "gemm.fp32") {
      EXPECT_GE(r.params["algo_variants"].get<int>(), 1) << key;
    }
    // The winner is the fastest of the final, which held 1 s turns and the heuristics' first pick
    // of each layout (TN and NN; FP8 has only TN).
    const auto final_s = r.params["algo_final_seconds"].get<std::vector<double>>();
    ASSERT_EQ(final_s.size(), r.params["algo_seconds"].size()) << key;
    const auto finalists = std::count_if(final_s.begin(), final_s.end(), [](double x) { return x > 0; });
    EXPECT_GE(finalists, std::string(key) == "gemm.fp8" ? 1 : 2) << key;
    EXPECT_EQ(r.params["algo_final_turn_seconds"].get<double>(), 1.0) << key;
    const auto rank = static_cast<std::size_t>(r.params["algo_rank"].get<int>());
    ASSERT_LT(rank, final_s.size()) << key;
    EXPECT_GT(final_s[rank], 0) << key;
    for (double x : final_s) {
      if (x > 0) {
        EXPECT_LE(final_s[rank], x) << key;
      }
    }
    std::printf("%s: %s, of %lld in the final\n", key, r.params["algo_origin"].get<std::string>().c_str(),
                static_cast<long long>(finalists));
  }
}
TEST_F(BenchLive, GemmSweep) {
  for (const char* key :
       {"gemm.sweep.bf16.1024", "gemm.sweep.bf16.2048", "gemm.sweep.bf16.4096", "gemm.sweep.bf16.16384"})
    EXPECT_GT(run_one(key).median, 20.0) << key;
}

// The NVML context: the benchmarked GPU is found by its CUDA UUID and its clocks are read.
TEST_F(BenchLive, MachineContextFromNvml) {
  auto backend = gpu::open_nvml_backend();
  ASSERT_TRUE(backend.ok()) << backend.error().message();
  auto m = probe_machine(**backend, ctx_.gpu->uuid);
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_FALSE(m->driver_version.empty());
  ASSERT_TRUE(m->sm_clock_max_mhz.has_value());
  EXPECT_GT(*m->sm_clock_max_mhz, 500.0);
  EXPECT_TRUE(m->clock_event_reasons_mask.has_value());
  std::printf("%s\n", to_json(*m).dump().c_str());
}

TEST_F(BenchLive, WholeSuiteRunsAndExitsZero) {
  const Report rep = run_benchmarks(registry().all(), ctx_, RunOptions{Mode::kQuick, 0}, nullptr);
  for (const Outcome& o : rep.outcomes) {
    // p2p.* and nccl.* need 2 GPUs (bench_multi_gpu_test.cpp runs them where there are).
    const bool multi = o.key.rfind("p2p.", 0) == 0 || o.key.rfind("nccl.", 0) == 0;
    if (multi && ctx_.device_count < 2) {
      EXPECT_EQ(o.status, OutcomeStatus::kWaived) << o.key << ": " << o.reason;
      continue;
    }
    EXPECT_EQ(o.status, OutcomeStatus::kOk) << o.key << ": " << o.reason;
  }
  EXPECT_EQ(exit_code(rep), 0);
}

}  // namespace
}  // namespace gpudoc::bench
