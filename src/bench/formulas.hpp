// gpudoc::bench formulas — the arithmetic behind the gemm and pcie figures, kept apart from the CUDA
// code so it is unit-tested on machines without a GPU: FLOP counts, how many operations one timed
// sample holds, the bytes a transfer pattern moves, the decoding of 16- and 8-bit floats, and the
// error bound a sampled GEMM output element must meet.
//
//   double tflops = bench::gemm_tflops(8192, 8192, 8192, seconds_per_matmul);   // 2*M*N*K / t / 1e12
//   double bound = bench::gemm_error_bound(bench::GemmType::kBf16, sum_abs_products, reference);
//   bool ok = std::abs(got - reference) <= bound;
//
// Pure functions, thread-safe. C++17 (included by the .cu files).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpudoc::bench {

// The GEMM data types gpudoc measures. Inputs/output/compute per type: docs/methodology.md.
enum class GemmType {
  kFp32,     // fp32 in/out, fp32 compute (no TF32)
  kTf32,     // fp32 in/out, TF32 tensor cores (CUBLAS_COMPUTE_32F_FAST_TF32)
  kFp16,     // fp16 in/out, fp32 accumulate
  kBf16,     // bf16 in/out, fp32 accumulate
  kFp8E4m3,  // fp8 e4m3 in (per-tensor scales), bf16 out, fp32 accumulate
};

// "fp32", "tf32", "fp16", "bf16", "fp8" (the key suffix: gemm.<name>).
[[nodiscard]] const char* to_string(GemmType type) noexcept;
// Bytes of one input element (A and B) and of one output element (C and D).
[[nodiscard]] std::size_t gemm_input_bytes(GemmType type) noexcept;
[[nodiscard]] std::size_t gemm_output_bytes(GemmType type) noexcept;

// Floating-point operations of one M x N x K matrix multiply: 2*M*N*K (one multiply and one add
// per term), the convention of cuBLAS, PyTorch and the datasheets.
[[nodiscard]] double gemm_flops(std::uint64_t m, std::uint64_t n, std::uint64_t k) noexcept;
// TFLOP/s = 2*M*N*K / seconds / 1e12; 0 when seconds <= 0.
[[nodiscard]] double gemm_tflops(std::uint64_t m, std::uint64_t n, std::uint64_t k, double seconds) noexcept;

// How many operations of `seconds_each` one timed sample holds so that it lasts at least
// `target_seconds` (an event pair resolves ~0.5 us and a clock or power-limit wobble lasts
// milliseconds: long samples keep the CV low). Clamped to [1, max_ops]; 1 when seconds_each <= 0.
[[nodiscard]] int ops_per_sample(double seconds_each, double target_seconds, int max_ops = 100000) noexcept;

// The GEMM candidates that go on to the steady-state final, from each one's mean probe time per
// matmul (0 or less: did not run): those within `margin` (0.03 = 3 %) of the fastest, fastest
// first, at most `max_count`; then each of `always` (indices into `probe_seconds`: the heuristics'
// first pick of each layout) that ran and is not among them yet, in the order given. A probe of a
// few tens of ms judges a kernel at the clock its predecessor left; the heuristics' favourites are
// often the ones that hold up in the steady state under a power cap. Empty when none ran.
[[nodiscard]] std::vector<int> gemm_finalists(const std::vector<double>& probe_seconds, const std::vector<int>& always,
                                              int max_count, double margin);

// Decoding of the stored bit patterns (host-side reference of the verification).
[[nodiscard]] float bf16_to_float(std::uint16_t bits) noexcept;
[[nodiscard]] float fp16_to_float(std::uint16_t bits) noexcept;     // IEEE binary16, subnormals, inf, NaN
[[nodiscard]] float fp8_e4m3_to_float(std::uint8_t bits) noexcept;  // OCP E4M3: no inf, S.1111.111 is NaN

// The error a sampled output element may show against the double-precision reference:
//   bound = (input_rel + accumulate_rel) * sum_abs + output_rel * |reference| + 1e-6
// where sum_abs = |scale| * sum_k |a_ik * b_kj| (the scale of the terms, not of their sum, which
// cancels) and
//   input_rel:      rounding of the inputs inside the multiply (TF32 keeps 10 mantissa bits of
//                   each fp32 operand: 2 * 2^-10; the other types multiply the stored values exactly)
//   accumulate_rel: fp32 accumulation over K terms (4e-6 in fp32 SIMT, 1e-4 on tensor cores, whose
//                   adders truncate; 1e-3 for fp8, whose accumulator keeps fewer bits between
//                   promotions)
//   output_rel:     one unit in the last place of the output type (fp32 2^-23, fp16 2^-10, bf16 2^-7)
// A wrong layout or a missed scale gives errors of the order of the reference itself, hundreds of
// times these bounds. fp32 is tight enough that TF32 taking its place would fail it.
struct GemmTolerance {
  double input_rel = 0;
  double accumulate_rel = 0;
  double output_rel = 0;
};
[[nodiscard]] GemmTolerance gemm_tolerance(GemmType type) noexcept;
[[nodiscard]] double gemm_error_bound(GemmType type, double sum_abs, double reference) noexcept;

// The pcie transfer patterns and the bytes one sample moves.
enum class PcieDirection {
  kHostToDevice,
  kDeviceToHost,
  kBidirectional,  // one host-to-device and one device-to-host transfer at once, on two streams
};
[[nodiscard]] const char* to_string(PcieDirection direction) noexcept;  // "h2d", "d2h", "bidir"
// Bytes crossing the link in one sample of `transfers` transfers of `bytes` each: bidirectional
// counts both directions (2 * bytes * transfers), as the figure is their sum.
[[nodiscard]] std::uint64_t pcie_bytes_per_sample(PcieDirection direction, std::uint64_t bytes, int transfers) noexcept;
// GB/s = bytes / seconds / 1e9; 0 when seconds <= 0.
[[nodiscard]] double gigabytes_per_second(std::uint64_t bytes, double seconds) noexcept;

}  // namespace gpudoc::bench
