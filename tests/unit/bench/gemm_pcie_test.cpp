// The gemm and pcie benchmarks' registration and waivers (their CUDA side runs in tests/gpu).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "bench/cuda/gemm.hpp"
#include "bench/registry.hpp"

namespace gpudoc::bench {
namespace {

Context gpu_context(int major, int minor) {
  Context ctx;
  ctx.cuda_built = true;
  ctx.gpu = cuda::DeviceInfo{};
  ctx.gpu->compute_major = major;
  ctx.gpu->compute_minor = minor;
  return ctx;
}

TEST(BenchGemm, DescriptionsStateTheFormula) {
  for (const char* key : {"gemm.fp32", "gemm.tf32", "gemm.fp16", "gemm.bf16", "gemm.fp8", "gemm.sweep.bf16.16384"}) {
    const Benchmark* b = registry().find(key);
    ASSERT_NE(b, nullptr) << key;
    EXPECT_THAT(b->description(), ::testing::HasSubstr("TFLOP/s = 2*M*N*K / time per matmul / 1e12")) << key;
  }
}

TEST(BenchGemm, Fp8NeedsAdaOrHopper) {
  const Context ampere = gpu_context(8, 0);
  auto why = registry().find("gemm.fp8")->applicable(ampere);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(*why, "waived: fp8 GEMM needs compute capability 8.9 or newer (this GPU: 8.0)");
  // On Ampere bf16 and TF32 have tensor cores: waived only if cuBLASLt is missing.
  auto bf16 = registry().find("gemm.bf16")->applicable(ampere);
  if (bf16) {
    EXPECT_THAT(*bf16, ::testing::AnyOf(::testing::StartsWith("waived: cuBLASLt"),
                                        ::testing::StartsWith("waived: built without CUDA")));
  }
}

TEST(BenchGemm, Tf32AndBf16NeedAmpere) {
  const Context volta = gpu_context(7, 0);
  for (const char* key : {"gemm.tf32", "gemm.bf16", "gemm.sweep.bf16.1024"}) {
    auto why = registry().find(key)->applicable(volta);
    ASSERT_TRUE(why.has_value()) << key;
    EXPECT_THAT(*why, ::testing::HasSubstr("needs compute capability 8.0 or newer (this GPU: 7.0)")) << key;
  }
}

TEST(BenchGemm, WaivedWithAClearReasonWhenCublasLtCannotLoad) {
  const Context hopper = gpu_context(9, 0);
  auto lib = cuda::load_cublaslt();
  for (const char* key : {"gemm.fp32", "gemm.fp8"}) {
    auto why = registry().find(key)->applicable(hopper);
    if (lib.ok()) {
      EXPECT_FALSE(why.has_value()) << key << ": " << why.value_or("");
      EXPECT_THAT(*lib, ::testing::HasSubstr("libcublasLt.so"));
    } else if (cuda::built_with_cuda()) {
      ASSERT_TRUE(why.has_value());
      EXPECT_THAT(*why, ::testing::StartsWith("waived: "));
      EXPECT_THAT(*why, ::testing::HasSubstr("cuBLASLt"));
    } else {
      EXPECT_EQ(lib.error().kind(), core::ErrorKind::kNotSupported);
    }
  }
}

// In a fresh process (the loader caches its first outcome): a library that cannot be loaded gives
// the waiver's reason, not a crash.
TEST(BenchGemmDeathTest, MissingCublasLtIsAnEnvironmentError) {
  if (!cuda::built_with_cuda()) GTEST_SKIP() << "built without CUDA";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ::setenv("GPUDOC_CUBLASLT", "/nonexistent/libcublasLt.so.13", 1);
        auto lib = cuda::load_cublaslt();
        if (lib.ok()) std::_Exit(1);
        std::fprintf(stderr, "%s|%s\n", core::to_string(lib.error().kind()), lib.error().message().c_str());
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0),
      ::testing::HasSubstr("environment|cannot load cuBLASLt from GPUDOC_CUBLASLT=/nonexistent/libcublasLt.so.13 ("));
}

TEST(BenchPcie, KeysNameDirectionAndHostMemory) {
  for (const char* key : {"pcie.h2d.pinned", "pcie.d2h.pinned", "pcie.bidir.pinned", "pcie.h2d.pageable",
                          "pcie.d2h.pageable", "pcie.bidir.pageable"}) {
    const Benchmark* b = registry().find(key);
    ASSERT_NE(b, nullptr) << key;
    EXPECT_THAT(b->description(), ::testing::HasSubstr("/ 1e9")) << key;
  }
  EXPECT_THAT(registry().find("pcie.bidir.pinned")->description(), ::testing::HasSubstr("(bytes in + bytes out)"));
}

}  // namespace
}  // namespace gpudoc::bench
