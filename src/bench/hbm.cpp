// The hbm.* benchmarks: device-memory bandwidth through cuda/hbm.hpp.
#include <algorithm>

#include "bench/cuda/hbm.hpp"
#include "bench/registry.hpp"

namespace gpudoc::bench {
namespace {

class HbmBenchmark final : public Benchmark {
 public:
  HbmBenchmark(cuda::HbmKernel kernel, std::string key, std::string description)
      : kernel_(kernel), key_(std::move(key)), description_(std::move(description)) {}
  std::string key() const override { return key_; }
  std::string description() const override { return description_; }
  std::optional<std::string> applicable(const Context& ctx) const override { return gpu_waiver(ctx); }

  core::Result<BenchResult> run(const Context& ctx, const RunOptions& options) const override {
    cuda::HbmOptions opt;
    opt.device = ctx.device;
    const int by_mode = options.mode == Mode::kQuick ? 10 : (options.mode == Mode::kFull ? 50 : 20);
    opt.repetitions = options.repetitions > 0 ? options.repetitions : by_mode;
    // 20 launches per sample (~5-10 ms on an H200): a 5-launch sample of ~1.3 ms left launch gaps
    // and clock ramps in the spread (read: CV 2.3%). Warm-up: at least 10 launches and 0.5 s
    // (0.3 s with --quick), so the clocks have left idle before the first sample.
    opt.warmup = 10;
    opt.warmup_seconds = options.mode == Mode::kQuick ? 0.3 : 0.5;
    opt.launches_per_sample = 20;
    // Buffers many times the L2 so no repetition is served from cache (H200: 60 MiB of L2).
    if (ctx.gpu && ctx.gpu->l2_bytes > 0) opt.buffer_bytes = std::max(opt.buffer_bytes, ctx.gpu->l2_bytes * 16);
    auto t = cuda::run_hbm(kernel_, opt);
    if (!t) return t.error().with_context(key_);
    BenchResult r;
    r.key = key_;
    r.unit = "GB/s";
    r.higher_is_better = true;
    for (double s : t->seconds) r.samples.push_back(static_cast<double>(t->bytes_per_launch) / s / 1e9);
    summarize_into(r);
    r.params = {{"buffer_bytes", opt.buffer_bytes},
                {"bytes_per_launch", t->bytes_per_launch},
                {"blocks", t->blocks},
                {"threads_per_block", t->threads_per_block},
                {"warmup_launches", t->warmup_launches},
                {"warmup_seconds", t->warmup_seconds},
                {"repetitions", opt.repetitions},
                {"launches_per_sample", opt.launches_per_sample},
                {"vector_bytes", 16}};
    if (kernel_ == cuda::HbmKernel::kCopy) {
      r.params["shape"] = "one 16-byte vector per thread, one block per 256 vectors, no loop";
      r.params["cache_hint"] = "none";
    } else {
      r.params["shape"] = "resident grid, grid-stride loop, 4 vectors per thread per iteration";
      r.params["cache_hint"] = "streaming (ld.global.cs / st.global.cs)";
    }
    r.verified = t->verified;
    r.verify_detail = t->verify_detail;
    return r;
  }

 private:
  cuda::HbmKernel kernel_;
  std::string key_;
  std::string description_;
};

}  // namespace

void add_hbm_benchmarks(std::vector<std::unique_ptr<Benchmark>>& out) {
  out.push_back(std::make_unique<HbmBenchmark>(
      cuda::HbmKernel::kCopy, "hbm.copy",
      "device-to-device copy kernel, 16-byte vectors: GB/s = 2 x buffer bytes / kernel time / 1e9 (read + write)"));
  out.push_back(std::make_unique<HbmBenchmark>(
      cuda::HbmKernel::kRead, "hbm.read", "read-only kernel (XOR reduction): GB/s = buffer bytes / kernel time / 1e9"));
  out.push_back(
      std::make_unique<HbmBenchmark>(cuda::HbmKernel::kWrite, "hbm.write",
                                     "write-only kernel (index pattern): GB/s = buffer bytes / kernel time / 1e9"));
}

}  // namespace gpudoc::bench
