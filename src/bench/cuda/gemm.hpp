// gpudoc::bench::cuda gemm — matrix-multiply throughput through cuBLASLt, which is loaded at run
// time (dlopen): a gpudoc binary starts, and every other benchmark runs, where cuBLASLt is missing.
// Plain C++ interface over gemm.cu; no CUDA header is included.
//
//   if (auto lib = cuda::load_cublaslt(); !lib) waive(lib.error().message());
//   cuda::GemmOptions opt;
//   opt.type = bench::GemmType::kBf16;             // 8192^3 by default
//   auto t = cuda::run_gemm(opt);                  // t->seconds[i]: per matmul, sample i
//
// Layout: column-major. The candidates of two layouts compete: "TN" (A transposed, stored K x M,
// lda = K; the only one cuBLASLt accepts for FP8) and, except for FP8, "NN", the layout PyTorch's
// row-major `a @ b` reaches cuBLAS with (A stored M x K, lda = M). B is K x N (ldb = K), D M x N
// (ldd = M), D = alpha * op(A) * B with beta = 0; C = D in place, except FP8 (a zeroed bf16 C of
// its own). The candidates: the heuristics' picks and cluster-shape variants of each layout's first;
// the choice: a round-robin probe, then a steady-state final (docs/methodology.md).
// Not thread-safe (current device; the loader itself is). Errors: every CUDA and cuBLASLt failure
// as a core::Error naming the call; kEnvironment when cuBLASLt cannot be loaded; kNotSupported
// without CUDA or when cuBLASLt has no algorithm for the type on this GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/formulas.hpp"
#include "core/result.hpp"

namespace gpudoc::bench::cuda {

// Loads cuBLASLt once per process through core::open_library (thread-safe; later calls return the
// first outcome): the library $GPUDOC_CUBLASLT names, if set; else libcublasLt.so.13 on the loader
// path, in /usr/local/cuda-13.0 and /usr/local/cuda, then libcublasLt.so.12. Returns
// "libcublasLt.so.13 (cuBLASLt 130100)". Errors: kEnvironment "cannot load cuBLASLt from ...", the
// library lacks a function gpudoc uses ("<file> lacks required cuBLASLt functions (...)"), or it is
// older than 12.0.
[[nodiscard]] core::Result<std::string> load_cublaslt();

struct GemmOptions {
  int device = 0;
  GemmType type = GemmType::kBf16;
  std::uint64_t m = 8192;
  std::uint64_t n = 8192;
  std::uint64_t k = 8192;
  int repetitions = 20;                                 // samples
  double warmup_seconds = 1.0;                          // matmuls run before the samples (clocks and power settle)
  double sample_seconds = 0.05;                         // each sample holds matmuls for at least this long
  int algo_candidates = 8;                              // algorithms asked of the heuristics and timed
  double algo_probe_seconds = 0.1;                      // each candidate's turn per probe pass (half untimed)
  int algo_probe_passes = 2;                            // round-robin passes over the candidates (mean)
  int algo_finalists = 3;                               // candidates compared again in the steady state
  double algo_final_margin = 0.03;                      // ... those within 3 % of the best probe
  double algo_final_seconds = 1.0;                      // each finalist's turn: half settling, half timed
  int algo_final_rounds = 2;                            // turns per finalist (order reversed each round)
  std::size_t workspace_bytes = std::size_t{64} << 20;  // workspace offered to cuBLASLt
  int verify_elements = 64;                             // output elements checked against the host reference
};

struct GemmTiming {
  std::vector<double> seconds;  // per matmul, one entry per sample
  int matmuls_per_sample = 0;
  int warmup_matmuls = 0;
  double seconds_before_samples = 0;  // GPU time from the first matmul to the first sample (warm-up,
                                      // probes, final): how long the GPU had been at work, and warming
  std::string library;                // what load_cublaslt() returned
  int algos_returned = 0;             // by cublasLtMatmulAlgoGetHeuristic
  int algo_variants = 0;              // cluster-shape variants added to them (accepted by cublasLtMatmulAlgoCheck)
  int algos_timed = 0;
  int algo_rank = -1;                        // the chosen one's place among the candidates (0 = first)
  std::string layout;                        // the chosen one's: "TN" (A stored K x M, transposed) or "NN"
  int algo_id = -1;                          // CUBLASLT_ALGO_CONFIG_ID of the chosen one
  std::string algo_origin;                   // "heuristics #0 (TN)", "cluster 2x1x1 of heuristics #0 (TN)"
  std::string algo_config;                   // "algo 43, tile id 23, stages id 34, cluster 2x1x1, ..."
  std::size_t algo_workspace_bytes = 0;      // workspace the chosen one needs
  std::vector<double> algo_seconds;          // per matmul, each candidate timed (0: not usable): the TN
                                             // layout's in heuristic order, then NN's (not for FP8), then
                                             // the cluster variants
  std::vector<std::string> algo_candidates;  // "origin: configuration" of each candidate, same order
  std::vector<double> algo_final_seconds;    // per matmul in the steady-state final, same order (0: not a finalist)
  bool verified = false;
  std::string verify_detail;     // what was checked, or the worst element
  double worst_error_ratio = 0;  // max |got - reference| / bound over the checked elements
};

[[nodiscard]] core::Result<GemmTiming> run_gemm(const GemmOptions& options);

}  // namespace gpudoc::bench::cuda
