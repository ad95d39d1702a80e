// The nccl.* benchmarks: all-reduce, all-gather and reduce-scatter across every GPU of the machine
// through the NCCL loaded at run time (nccl_api.hpp) and cuda/nccl.hpp. The headline is the bus
// bandwidth at the largest size; the whole size curve is in params["curve"].
#include <fmt/format.h>

#include "bench/cuda/nccl.hpp"
#include "bench/multi_gpu.hpp"
#include "bench/nccl_api.hpp"
#include "bench/registry.hpp"
#include "bench/stats.hpp"

namespace gpudoc::bench {
namespace {

constexpr std::size_t kMinBytes = 8;
constexpr std::size_t kMaxBytes = std::size_t{1} << 30;

const char* formula(Collective c) {
  switch (c) {
    case Collective::kAllReduce: return "algbw = S / t, S = count x 4 B; busbw = algbw x 2(n-1)/n";
    case Collective::kAllGather:
      return "algbw = S / t, S = n x sendcount x 4 B (the gathered output); busbw = algbw x (n-1)/n";
    case Collective::kReduceScatter:
      return "algbw = S / t, S = n x recvcount x 4 B (the whole input); busbw = algbw x (n-1)/n";
  }
  return "";
}

class NcclBenchmark final : public Benchmark {
 public:
  NcclBenchmark(Collective kind, std::string description) : kind_(kind), description_(std::move(description)) {}
  std::string key() const override { return std::string("nccl.") + to_string(kind_); }
  std::string description() const override { return description_; }

  std::optional<std::string> applicable(const Context& ctx) const override {
    if (auto w = gpu_waiver(ctx)) return w;
    // One GPU: a collective over one rank moves nothing between GPUs; its "bandwidth" would be a
    // device-local copy, already measured by hbm.copy.
    if (ctx.device_count < 2)
      return fmt::format(
          "waived: needs 2 or more GPUs ({} visible): a collective over one GPU moves no data between GPUs",
          ctx.device_count);
    const auto& lib = nccl::shared_nccl_library();
    if (!lib) return "waived: NCCL not available (" + lib.error().message() + ")";
    return std::nullopt;
  }

  core::Result<BenchResult> run(const Context& ctx, const RunOptions& options) const override {
    const auto& lib = nccl::shared_nccl_library();
    if (!lib) return lib.error().with_context(key());
    const nccl::NcclApi& api = lib.value()->api();
    int version = 0;
    if (const auto rc = api.ncclGetVersion(&version); rc != nccl::ncclSuccess)
      return nccl::nccl_error(api, rc, "ncclGetVersion").with_context(key());

    cuda::CollectiveOptions opt;
    opt.gpus = ctx.device_count;
    const bool quick = options.mode == Mode::kQuick;
    // --quick keeps the 1 GiB headline size (so quick and full headlines compare) with 4x steps.
    const std::size_t factor = quick ? 4 : 2;
    opt.sizes = size_schedule(kMinBytes, kMaxBytes, factor);
    const int by_mode = quick ? 10 : (options.mode == Mode::kFull ? 50 : 20);
    opt.repetitions = options.repetitions > 0 ? options.repetitions : by_mode;

    // NVLS (NVLink multicast) must stay off on the shared machines and changes NCCL's algorithm:
    // set NCCL_NVLS_ENABLE=0 before the first communicator unless the user chose otherwise.
    const nccl::NvlsSetting nvls = nccl::ensure_nvls_disabled_unless_user_set();

    auto t = cuda::run_collective(api, kind_, opt);
    if (!t) return t.error().with_context(key());
    if (t->points.empty()) return core::Error(core::ErrorKind::kInternal, key() + ": no size was measured");

    const double factor_bus = bus_bandwidth_factor(kind_, t->ranks);
    BenchResult r;
    r.key = key();
    r.unit = "GB/s";
    r.higher_is_better = true;
    r.verified = true;
    nlohmann::json curve = nlohmann::json::array();
    for (const cuda::CollectivePoint& p : t->points) {
      const Stats s = summarize(p.seconds);
      const double algbw = s.median > 0 ? static_cast<double>(p.bytes) / s.median / 1e9 : 0.0;
      std::vector<double> time_us;
      for (double sec : p.seconds) time_us.push_back(sec * 1e6);
      curve.push_back({{"bytes", p.bytes},
                       {"count", p.count},
                       {"time_us", s.median * 1e6},
                       {"time_cv", s.cv},
                       {"algbw_gb_per_s", algbw},
                       {"busbw_gb_per_s", algbw * factor_bus},
                       {"time_us_samples", std::move(time_us)},
                       {"verified", p.verified}});
      if (!p.verified && r.verified) {
        r.verified = false;
        r.verify_detail = fmt::format("{} B: {}", p.bytes, p.verify_detail);
      }
    }
    // The headline: bus bandwidth of every sample at the largest size.
    const cuda::CollectivePoint& top = t->points.back();
    for (double sec : top.seconds) r.samples.push_back(static_cast<double>(top.bytes) / sec / 1e9 * factor_bus);
    summarize_into(r);
    if (r.verified)
      r.verify_detail =
          fmt::format("{} sizes: every output element on every GPU equals the closed-form result", t->points.size());

    r.params = {
        {"ranks", t->ranks},
        {"headline", fmt::format("bus bandwidth at {} (the largest size)", format_bytes(top.bytes))},
        {"headline_bytes", top.bytes},
        {"formula", formula(kind_)},
        {"bus_bandwidth_factor", factor_bus},
        {"datatype", "float32"},
        {"op", kind_ == Collective::kAllGather ? "none" : "sum"},
        {"in_place", false},
        {"size_factor", factor},
        {"min_bytes", kMinBytes},
        {"max_bytes", kMaxBytes},
        {"warmup", opt.warmup},
        {"iterations_per_sample", opt.iterations},
        {"repetitions", opt.repetitions},
        {"timing", "per GPU: CUDA events around the iterations on its stream; sample = slowest GPU / iterations"},
        {"nccl_version", nccl::version_string(version)},
        {"nccl_library", lib.value()->path()},
        {"nccl_init_seconds", t->init_seconds},
        {"nvls",
         {{"NCCL_NVLS_ENABLE", nvls.value},
          {"set_by_gpudoc", nvls.set_by_gpudoc},
          {"why",
           "NVLink multicast (NVLS) is forbidden on the shared machines and changes NCCL's algorithm; "
           "gpudoc sets NCCL_NVLS_ENABLE=0 unless the user set it"}}},
        {"curve", std::move(curve)}};
    const auto d = ctx.gpu ? nvlink_datasheet(ctx.gpu->name) : std::nullopt;
    if (d) {
      r.params["datasheet"] = {{"link", d->link},
                               {"per_direction_gb_per_s", d->per_direction_gb_per_s},
                               {"bidirectional_gb_per_s", d->bidirectional_gb_per_s},
                               {"source", d->source}};
      r.params["note"] = fmt::format("{} GPUs, NCCL {}{}; {:.0f}% of {} {:.0f} GB/s per direction", t->ranks,
                                     nccl::version_string(version), nvls.value == "0" ? ", NVLS off" : "",
                                     100 * r.median / d->per_direction_gb_per_s, d->link, d->per_direction_gb_per_s);
    } else {
      r.params["datasheet"] = nullptr;
      r.params["note"] = fmt::format("{} GPUs, NCCL {}{}", t->ranks, nccl::version_string(version),
                                     nvls.value == "0" ? ", NVLS off" : "");
    }
    return r;
  }

 private:
  Collective kind_;
  std::string description_;
};

}  // namespace

void add_nccl_benchmarks(std::vector<std::unique_ptr<Benchmark>>& out) {
  out.push_back(std::make_unique<NcclBenchmark>(
      Collective::kAllReduce,
      "NCCL all-reduce (float32 sum) across all GPUs, 8 B to 1 GiB: busbw = S / t x 2(n-1)/n / 1e9 at 1 GiB"));
  out.push_back(std::make_unique<NcclBenchmark>(
      Collective::kAllGather,
      "NCCL all-gather across all GPUs, 8 B to 1 GiB gathered: busbw = S / t x (n-1)/n / 1e9 at 1 GiB"));
  out.push_back(std::make_unique<NcclBenchmark>(
      Collective::kReduceScatter,
      "NCCL reduce-scatter (float32 sum) across all GPUs, 8 B to 1 GiB input: busbw = S / t x (n-1)/n / 1e9 at 1 GiB"));
}

}  // namespace gpudoc::bench
