// The arithmetic behind the gemm and pcie figures: FLOP counts, samples' sizes, byte accounting,
// the decoding of stored 16- and 8-bit floats, and the error bound of the GEMM verification.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "bench/formulas.hpp"

namespace gpudoc::bench {
namespace {

TEST(GemmFormulas, FlopsAreTwoMnk) {
  EXPECT_DOUBLE_EQ(gemm_flops(2, 3, 4), 48.0);
  EXPECT_DOUBLE_EQ(gemm_flops(8192, 8192, 8192), 2.0 * 8192.0 * 8192.0 * 8192.0);
  // 8192^3 in 1.4114 ms is PyTorch's 779 TFLOP/s bf16 figure on the H200.
  EXPECT_NEAR(gemm_tflops(8192, 8192, 8192, 1.4114e-3), 779.0, 0.1);
  EXPECT_DOUBLE_EQ(gemm_tflops(8192, 8192, 8192, 0), 0.0);
  EXPECT_DOUBLE_EQ(gemm_tflops(8192, 8192, 8192, -1), 0.0);
}

TEST(GemmFormulas, NoOverflowAtLargeSizes) {
  // 65536^3 * 2 overflows 64-bit integers' comfort zone in some formulations; doubles hold it.
  EXPECT_DOUBLE_EQ(gemm_flops(65536, 65536, 65536), 2.0 * std::pow(65536.0, 3));
}

TEST(GemmFormulas, OpsPerSampleReachesTheTargetDuration) {
  EXPECT_EQ(ops_per_sample(1.4e-3, 0.05), 36);        // ceil(0.05 / 0.0014)
  EXPECT_EQ(ops_per_sample(21e-3, 0.05), 3);          // fp32 at 8192: a few per sample
  EXPECT_EQ(ops_per_sample(0.2, 0.05), 1);            // longer than the target: one
  EXPECT_EQ(ops_per_sample(1e-9, 0.05, 1000), 1000);  // clamped
  EXPECT_EQ(ops_per_sample(0, 0.05), 1);
  EXPECT_EQ(ops_per_sample(1e-3, 0), 1);
}

TEST(GemmFormulas, FinalistsAreTheFastestWithinTheMarginPlusTheHeuristicsFirstPicks) {
  using V = std::vector<int>;
  // The H200's FP8 probe of 2026-11-30 (seconds per matmul, relative): rank 2 fastest, rank 0 0.8 % behind.
  const std::vector<double> fp8{1.008, 1.0134, 1.0, 1.0113, 1.0349, 1.0628, 1.1015, 1.0668};
  EXPECT_EQ(gemm_finalists(fp8, {0}, 3, 0.03), (V{2, 0, 3}));
  EXPECT_EQ(gemm_finalists(fp8, {0}, 2, 0.03), (V{2, 0}));
  // Its TF32 probe (TN rank 0, NN ranks 1-8): the NN layout's first pick, 3.1 % behind, joins the final.
  const std::vector<double> tf32{1.017, 1.031, 1.226, 1.0, 1.222, 1.186, 1.277, 1.333, 1.135};
  EXPECT_EQ(gemm_finalists(tf32, {0, 1}, 3, 0.03), (V{3, 0, 1}));
  // First picks outside the margin, or beyond max_count, are added after the others.
  const std::vector<double> far{1.05, 1.0, 1.001, 1.002};
  EXPECT_EQ(gemm_finalists(far, {0}, 3, 0.03), (V{1, 2, 3, 0}));
  EXPECT_EQ(gemm_finalists(far, {0, 1}, 1, 0.03), (V{1, 0}));
  // Candidates that did not run (0) never go, first picks included; so do indices out of range.
  EXPECT_EQ(gemm_finalists({0, 2.0, 0, 2.01}, {0}, 3, 0.03), (V{1, 3}));
  EXPECT_EQ(gemm_finalists({0, 2.0, 0, 2.01}, {2, -1, 9}, 3, 0.03), (V{1, 3}));
  // The margin: 3 % of the fastest, inclusive.
  EXPECT_EQ(gemm_finalists({1.0, 1.03, 1.031}, {}, 3, 0.03), (V{0, 1}));
  // Ties keep the heuristics' order.
  EXPECT_EQ(gemm_finalists({1.0, 1.0, 1.0}, {}, 2, 0.0), (V{0, 1}));
  EXPECT_TRUE(gemm_finalists({}, {0}, 3, 0.03).empty());
  EXPECT_TRUE(gemm_finalists({0, 0}, {0}, 3, 0.03).empty());
  EXPECT_EQ(gemm_finalists({1.0, 1.2}, {1}, 0, 0.03), (V{1}));
}

TEST(GemmFormulas, TypeNamesAndSizes) {
  EXPECT_STREQ(to_string(GemmType::kFp8E4m3), "fp8");
  EXPECT_STREQ(to_string(GemmType::kTf32), "tf32");
  EXPECT_EQ(gemm_input_bytes(GemmType::kFp32), 4u);
  EXPECT_EQ(gemm_input_bytes(GemmType::kTf32), 4u);
  EXPECT_EQ(gemm_input_bytes(GemmType::kBf16), 2u);
  EXPECT_EQ(gemm_input_bytes(GemmType::kFp8E4m3), 1u);
  EXPECT_EQ(gemm_output_bytes(GemmType::kFp8E4m3), 2u);  // bf16 output
}

TEST(FloatDecoding, Bf16) {
  EXPECT_EQ(bf16_to_float(0x3F80), 1.0f);
  EXPECT_EQ(bf16_to_float(0xBFC0), -1.5f);
  EXPECT_EQ(bf16_to_float(0x0000), 0.0f);
  EXPECT_TRUE(std::isinf(bf16_to_float(0x7F80)));
  EXPECT_TRUE(std::isnan(bf16_to_float(0xFFFF)));  // the verification's poison
}

TEST(FloatDecoding, Fp16) {
  EXPECT_EQ(fp16_to_float(0x3C00), 1.0f);
  EXPECT_EQ(fp16_to_float(0xC000), -2.0f);
  EXPECT_EQ(fp16_to_float(0x3555), 0.333251953125f);
  EXPECT_EQ(fp16_to_float(0x7BFF), 65504.0f);               // largest finite
  EXPECT_EQ(fp16_to_float(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(fp16_to_float(0x0400), std::ldexp(1.0f, -14));  // smallest normal
  EXPECT_TRUE(std::isinf(fp16_to_float(0x7C00)));
  EXPECT_TRUE(std::isnan(fp16_to_float(0xFFFF)));
}

TEST(FloatDecoding, Fp8E4m3) {
  EXPECT_EQ(fp8_e4m3_to_float(0x38), 1.0f);  // 0 0111 000
  EXPECT_EQ(fp8_e4m3_to_float(0xB8), -1.0f);
  EXPECT_EQ(fp8_e4m3_to_float(0x7E), 448.0f);                // 0 1111 110: largest finite
  EXPECT_EQ(fp8_e4m3_to_float(0x01), std::ldexp(1.0f, -9));  // smallest subnormal
  EXPECT_EQ(fp8_e4m3_to_float(0x08), std::ldexp(1.0f, -6));  // smallest normal
  EXPECT_EQ(fp8_e4m3_to_float(0x3C), 1.5f);                  // 0 0111 100
  EXPECT_TRUE(std::isnan(fp8_e4m3_to_float(0x7F)));
  EXPECT_TRUE(std::isnan(fp8_e4m3_to_float(0xFF)));
  EXPECT_EQ(fp8_e4m3_to_float(0x78), 256.0f);  // 0 1111 000: no infinity in E4M3
}

TEST(GemmTolerance, BoundGrowsWithTermScaleAndOutputRounding) {
  const double sum_abs = 2048;  // K = 8192 products of uniform [-1, 1) values: ~K/4
  // fp32: tight (a TF32 result, off by ~1e-5 of sum_abs, must fail it).
  EXPECT_LT(gemm_error_bound(GemmType::kFp32, sum_abs, 30), 0.01);
  EXPECT_GT(gemm_error_bound(GemmType::kFp32, sum_abs, 30), 0.005);
  // TF32 allows the rounding of both inputs to 10 mantissa bits.
  EXPECT_NEAR(gemm_error_bound(GemmType::kTf32, sum_abs, 0), (2.0 / 1024 + 1e-4) * sum_abs + 1e-6, 1e-9);
  // bf16 output: one ulp (2^-7) of the reference on top.
  EXPECT_NEAR(gemm_error_bound(GemmType::kBf16, sum_abs, 32), 1e-4 * sum_abs + 32.0 / 128 + 1e-6, 1e-9);
  EXPECT_NEAR(gemm_error_bound(GemmType::kFp16, sum_abs, -32), 1e-4 * sum_abs + 32.0 / 1024 + 1e-6, 1e-9);
  EXPECT_NEAR(gemm_error_bound(GemmType::kFp8E4m3, 256, 4), 1e-3 * 256 + 4.0 / 128 + 1e-6, 1e-9);
}

TEST(GemmTolerance, AWrongResultFailsEveryType) {
  // A transposed operand or an ignored scale gives an unrelated dot product: an error of the
  // order of the reference itself (~sqrt(K)/3 = 30 for K = 8192), far outside every bound.
  for (GemmType t : {GemmType::kFp32, GemmType::kTf32, GemmType::kFp16, GemmType::kBf16, GemmType::kFp8E4m3})
    EXPECT_LT(gemm_error_bound(t, 2048, 30), 30.0 / 3) << to_string(t);
}

TEST(PcieFormulas, BytesPerSample) {
  const std::uint64_t mib256 = 256ull << 20;
  EXPECT_EQ(pcie_bytes_per_sample(PcieDirection::kHostToDevice, mib256, 4), 4 * mib256);
  EXPECT_EQ(pcie_bytes_per_sample(PcieDirection::kDeviceToHost, mib256, 4), 4 * mib256);
  EXPECT_EQ(pcie_bytes_per_sample(PcieDirection::kBidirectional, mib256, 4), 8 * mib256);  // both directions summed
  EXPECT_EQ(pcie_bytes_per_sample(PcieDirection::kHostToDevice, mib256, 0), 0u);
  EXPECT_STREQ(to_string(PcieDirection::kBidirectional), "bidir");
}

TEST(PcieFormulas, GigabytesPerSecondAreDecimal) {
  // 1 GiB in 19.35 ms is PyTorch's 55.5 GB/s pinned host-to-device figure on the H200.
  EXPECT_NEAR(gigabytes_per_second(1ull << 30, 19.346e-3), 55.5, 0.01);
  EXPECT_DOUBLE_EQ(gigabytes_per_second(1000000000ull, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(gigabytes_per_second(1, 0), 0.0);
}

}  // namespace
}  // namespace gpudoc::bench
