// The gemm.* benchmarks: cuBLASLt matrix-multiply throughput through cuda/gemm.hpp.
#include <fmt/format.h>

#include "bench/cuda/gemm.hpp"
#include "bench/formulas.hpp"
#include "bench/registry.hpp"

namespace gpudoc::bench {
namespace {

constexpr std::uint64_t kHeadlineSize = 8192;  // the size PyTorch's reference figures use; fills an H200

const char* compute_name(GemmType t) {
  switch (t) {
    case GemmType::kFp32: return "CUBLAS_COMPUTE_32F";
    case GemmType::kTf32: return "CUBLAS_COMPUTE_32F_FAST_TF32";
    default: return "CUBLAS_COMPUTE_32F";
  }
}
const char* input_name(GemmType t) {
  switch (t) {
    case GemmType::kFp32:
    case GemmType::kTf32: return "fp32";
    case GemmType::kFp16: return "fp16";
    case GemmType::kBf16: return "bf16";
    case GemmType::kFp8E4m3: return "fp8_e4m3";
  }
  return "?";
}
const char* output_name(GemmType t) {
  switch (t) {
    case GemmType::kFp32:
    case GemmType::kTf32: return "fp32";
    case GemmType::kFp16: return "fp16";
    case GemmType::kBf16:
    case GemmType::kFp8E4m3: return "bf16";
  }
  return "?";
}
// The compute capability a type's tensor-core path needs (major * 10 + minor).
int min_compute_capability(GemmType t) {
  switch (t) {
    case GemmType::kFp32:
    case GemmType::kFp16: return 0;
    case GemmType::kTf32:
    case GemmType::kBf16: return 80;
    case GemmType::kFp8E4m3: return 89;
  }
  return 0;
}

class GemmBenchmark final : public Benchmark {
 public:
  GemmBenchmark(GemmType type, std::uint64_t size, std::string key, std::string description)
      : type_(type), size_(size), key_(std::move(key)), description_(std::move(description)) {}
  std::string key() const override { return key_; }
  std::string description() const override { return description_; }

  std::optional<std::string> applicable(const Context& ctx) const override {
    if (auto w = gpu_waiver(ctx)) return w;
    const int cc = ctx.gpu->compute_major * 10 + ctx.gpu->compute_minor;
    if (cc < min_compute_capability(type_))
      return fmt::format("waived: {} GEMM needs compute capability {}.{} or newer (this GPU: {}.{})", to_string(type_),
                         min_compute_capability(type_) / 10, min_compute_capability(type_) % 10, ctx.gpu->compute_major,
                         ctx.gpu->compute_minor);
    if (auto lib = cuda::load_cublaslt(); !lib) return "waived: " + lib.error().message();
    return std::nullopt;
  }

  core::Result<BenchResult> run(const Context& ctx, const RunOptions& options) const override {
    cuda::GemmOptions opt;
    opt.device = ctx.device;
    opt.type = type_;
    opt.m = opt.n = opt.k = size_;
    // fp32 and TF32: the heuristics' first picks are often not the fastest, and each candidate's
    // probe is cheap next to the run, so more of them are timed.
    const bool fp32_data = type_ == GemmType::kFp32 || type_ == GemmType::kTf32;
    switch (options.mode) {
      case Mode::kQuick:
        opt.repetitions = 10;
        opt.warmup_seconds = 0.3;
        opt.algo_probe_seconds = 0.04;
        opt.algo_final_rounds = 1;
        opt.algo_final_seconds = 0.2;
        break;
      case Mode::kDefault:
        opt.repetitions = 20;
        opt.warmup_seconds = 1.0;
        // 100 ms samples outside --quick: under the power cap the clock moves on a ~100 ms scale,
        // and shorter samples of an FP8 GEMM spread too widely for the CV bound (docs/methodology.md).
        opt.sample_seconds = 0.1;
        opt.algo_candidates = fp32_data ? 16 : 8;
        break;
      case Mode::kFull:
        opt.repetitions = 50;
        opt.warmup_seconds = 2.0;
        opt.algo_candidates = fp32_data ? 32 : 16;
        opt.algo_probe_seconds = 0.1;
        opt.algo_probe_passes = 3;  // 35 TF32 candidates: ~10 s
        opt.algo_finalists = 4;
        opt.sample_seconds = 0.1;
        break;
    }
    if (options.repetitions > 0) opt.repetitions = options.repetitions;
    auto t = cuda::run_gemm(opt);
    if (!t) return t.error().with_context(key_);
    BenchResult r;
    r.key = key_;
    r.unit = "TFLOP/s";
    r.higher_is_better = true;
    for (double s : t->seconds) r.samples.push_back(gemm_tflops(opt.m, opt.n, opt.k, s));
    summarize_into(r);
    r.params = {{"m", opt.m},
                {"n", opt.n},
                {"k", opt.k},
                {"flops_per_matmul", gemm_flops(opt.m, opt.n, opt.k)},
                {"input_type", input_name(type_)},
                {"output_type", output_name(type_)},
                {"compute_type", compute_name(type_)},
                {"scale_type", "fp32"},
                {"layout", t->layout == "TN" ? "TN: column-major, A transposed (stored K x M), B not (K x N), D M x N"
                                             : "NN: column-major, A stored M x K, B K x N, D M x N (PyTorch's a @ b)"},
                {"layouts_tried", type_ == GemmType::kFp8E4m3 ? "TN (FP8 accepts only TN)" : "TN, then NN"},
                {"c_matrix", type_ == GemmType::kFp8E4m3 ? "C apart from D (zeroed), beta = 0" : "C = D, beta = 0"},
                {"library", t->library},
                {"workspace_bytes", opt.workspace_bytes},
                {"algos_returned", t->algos_returned},
                {"algos_timed", t->algos_timed},
                {"algo_variants", t->algo_variants},
                {"algo_rank", t->algo_rank},
                {"algo_origin", t->algo_origin},
                {"algo_id", t->algo_id},
                {"algo_config", t->algo_config},
                {"algo_workspace_bytes", t->algo_workspace_bytes},
                {"algo_candidates", t->algo_candidates},
                {"algo_seconds", t->algo_seconds},
                {"algo_probe_seconds", opt.algo_probe_seconds},
                {"algo_probe_passes", opt.algo_probe_passes},
                {"algo_final_seconds", t->algo_final_seconds},
                {"algo_finalists", opt.algo_finalists},
                {"algo_final_margin", opt.algo_final_margin},
                {"algo_final_turn_seconds", opt.algo_final_seconds},
                {"algo_final_rounds", opt.algo_final_rounds},
                {"warmup_seconds", opt.warmup_seconds},
                {"warmup_matmuls", t->warmup_matmuls},
                {"busy_seconds_before_samples", t->seconds_before_samples},
                {"repetitions", opt.repetitions},
                {"matmuls_per_sample", t->matmuls_per_sample},
                {"sample_seconds_target", opt.sample_seconds},
                {"verify_elements", opt.verify_elements},
                {"worst_error_ratio", t->worst_error_ratio}};
    if (type_ == GemmType::kFp8E4m3) {
      r.params["scale_a"] = 0.5;
      r.params["scale_b"] = 0.25;
      r.params["fast_accumulation"] = false;
    }
    r.verified = t->verified;
    r.verify_detail = t->verify_detail;
    return r;
  }

 private:
  GemmType type_;
  std::uint64_t size_;
  std::string key_;
  std::string description_;
};

}  // namespace

void add_gemm_benchmarks(std::vector<std::unique_ptr<Benchmark>>& out) {
  const std::string formula = "TFLOP/s = 2*M*N*K / time per matmul / 1e12";
  auto headline = [&](GemmType t, const char* what) {
    out.push_back(std::make_unique<GemmBenchmark>(t, kHeadlineSize, fmt::format("gemm.{}", to_string(t)),
                                                  fmt::format("cuBLASLt {} GEMM 8192^3: {}", what, formula)));
  };
  headline(GemmType::kFp32, "fp32 (no TF32)");
  headline(GemmType::kTf32, "TF32 (fp32 data)");
  headline(GemmType::kFp16, "fp16 (fp32 accumulate)");
  headline(GemmType::kBf16, "bf16 (fp32 accumulate)");
  headline(GemmType::kFp8E4m3, "fp8 e4m3 (scaled, bf16 out)");
  // The size sweep (bf16): how the throughput grows with the problem; 8192 is gemm.bf16.
  for (std::uint64_t n : {1024u, 2048u, 4096u, 16384u})
    out.push_back(std::make_unique<GemmBenchmark>(GemmType::kBf16, n, fmt::format("gemm.sweep.bf16.{}", n),
                                                  fmt::format("cuBLASLt bf16 GEMM {}^3: {}", n, formula)));
}

}  // namespace gpudoc::bench
