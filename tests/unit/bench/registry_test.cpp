#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "bench/cuda/gemm.hpp"
#include "bench/registry.hpp"

namespace gpudoc::bench {
namespace {

std::vector<std::string> keys(const std::vector<const Benchmark*>& list) {
  std::vector<std::string> out;
  for (const Benchmark* b : list) out.push_back(b->key());
  return out;
}

TEST(BenchRegistry, KeysAreStableAndInOrder) {
  // These keys name stored baselines: changing one orphans every baseline taken under it.
  // (The single-GPU groups; the multi-GPU groups that follow them have their own test.)
  std::vector<std::string> single_gpu;
  for (const std::string& k : keys(registry().all()))
    for (const char* group : {"hbm.", "pcie.", "gemm.", "launch."})
      if (k.rfind(group, 0) == 0) single_gpu.push_back(k);
  EXPECT_THAT(single_gpu, ::testing::ElementsAre(
                              "hbm.copy", "hbm.read", "hbm.write", "pcie.h2d.pinned", "pcie.d2h.pinned",
                              "pcie.bidir.pinned", "pcie.h2d.pageable", "pcie.d2h.pageable", "pcie.bidir.pageable",
                              "gemm.fp32", "gemm.tf32", "gemm.fp16", "gemm.bf16", "gemm.fp8", "gemm.sweep.bf16.1024",
                              "gemm.sweep.bf16.2048", "gemm.sweep.bf16.4096", "gemm.sweep.bf16.16384",
                              "launch.throughput", "launch.latency", "launch.graph_node"));
}

TEST(BenchRegistry, KeysAreUniqueAndDescribed) {
  std::set<std::string> seen;
  for (const Benchmark* b : registry().all()) {
    EXPECT_TRUE(seen.insert(b->key()).second) << b->key();
    EXPECT_FALSE(b->description().empty()) << b->key();
    EXPECT_NE(b->description().find('='), std::string::npos) << b->key() << ": the description states the formula";
  }
}

TEST(BenchRegistry, SelectByKeyAndGroupInRegistryOrder) {
  auto sel = registry().select({"launch.latency", "hbm"});
  ASSERT_TRUE(sel.ok()) << sel.error().message();
  EXPECT_THAT(keys(*sel), ::testing::ElementsAre("hbm.copy", "hbm.read", "hbm.write", "launch.latency"));
  auto dup = registry().select({"hbm.copy", "hbm"});
  ASSERT_TRUE(dup.ok());
  EXPECT_EQ(dup->size(), 3u);
}

TEST(BenchRegistry, UnknownKeyIsUsageErrorListingValidKeys) {
  auto sel = registry().select({"nope"});
  ASSERT_FALSE(sel.ok());
  EXPECT_EQ(sel.error().kind(), core::ErrorKind::kUsage);
  EXPECT_THAT(sel.error().message(), ::testing::HasSubstr("unknown benchmark 'nope'"));
  EXPECT_THAT(sel.error().message(), ::testing::HasSubstr("hbm.copy"));
  // A prefix that is not a whole group name is not a group.
  EXPECT_FALSE(registry().select({"hb"}).ok());
}

TEST(BenchRegistry, WaivedWithoutCuda) {
  Context ctx;
  ctx.cuda_built = false;
  ctx.no_gpu_reason = "built without CUDA";
  for (const Benchmark* b : registry().all()) {
    auto why = b->applicable(ctx);
    ASSERT_TRUE(why.has_value()) << b->key();
    EXPECT_EQ(*why, "waived: built without CUDA");
  }
}

TEST(BenchRegistry, WaivedWithoutGpu) {
  Context ctx;
  ctx.cuda_built = true;
  ctx.no_gpu_reason = "cudaGetDeviceCount: no CUDA-capable device is detected (cudaErrorNoDevice)";
  for (const Benchmark* b : registry().all()) {
    auto why = b->applicable(ctx);
    ASSERT_TRUE(why.has_value()) << b->key();
    EXPECT_THAT(*why, ::testing::StartsWith("waived: no GPU (cudaGetDeviceCount"));
  }
}

TEST(BenchRegistry, ApplicableWithGpu) {
  Context ctx;
  ctx.cuda_built = true;
  ctx.gpu = cuda::DeviceInfo{};
  ctx.gpu->compute_major = 9;  // Hopper: every GEMM type has a tensor-core path
  // gemm.* also needs libcublasLt, which this machine may lack: gemm_test.cpp covers its waiver.
  const bool have_cublaslt = cuda::load_cublaslt().ok();
  // Two GPUs with peer access, so p2p.* can run too. nccl.* also needs libnccl.so.2, which this
  // machine may lack: multi_gpu_test.cpp covers its waivers.
  ctx.device_count = 2;
  ctx.peer_access = {{false, true}, {true, false}};
  for (const Benchmark* b : registry().all()) {
    if (b->key().rfind("nccl.", 0) == 0) continue;
    if (b->key().rfind("gemm.", 0) == 0 && !have_cublaslt) continue;
    EXPECT_FALSE(b->applicable(ctx).has_value()) << b->key();
  }
}

TEST(BenchRegistry, ProbeNeverFailsAndExplainsAMissingGpu) {
  const Context ctx = probe_context(0);
  EXPECT_EQ(ctx.cuda_built, cuda::built_with_cuda());
  if (!ctx.gpu) {
    EXPECT_FALSE(ctx.no_gpu_reason.empty());
  }
  const auto j = to_json(ctx);
  EXPECT_TRUE(j.contains("gpu"));
}

TEST(BenchRegistry, ResultJsonKeepsSamplesAndVerification) {
  BenchResult r;
  r.key = "hbm.copy";
  r.unit = "GB/s";
  r.samples = {3, 1, 2};
  r.verified = true;
  r.verify_detail = "ok";
  summarize_into(r);
  const auto j = to_json(r);
  EXPECT_DOUBLE_EQ(j["median"].get<double>(), 2);
  EXPECT_EQ(j["samples"].size(), 3u);
  EXPECT_DOUBLE_EQ(j["samples"][0].get<double>(), 3);
  EXPECT_TRUE(j["verified"]["ok"].get<bool>());
}

}  // namespace
}  // namespace gpudoc::bench
