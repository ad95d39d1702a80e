// The pcie.* benchmarks: host <-> device copy bandwidth through cuda/pcie.hpp.
#include <fmt/format.h>

#include "bench/cuda/pcie.hpp"
#include "bench/formulas.hpp"
#include "bench/registry.hpp"

namespace gpudoc::bench {
namespace {

class PcieBenchmark final : public Benchmark {
 public:
  PcieBenchmark(PcieDirection direction, cuda::HostMemory memory, std::string description)
      : direction_(direction),
        memory_(memory),
        key_(fmt::format("pcie.{}.{}", to_string(direction), cuda::to_string(memory))),
        description_(std::move(description)) {}
  std::string key() const override { return key_; }
  std::string description() const override { return description_; }
  std::optional<std::string> applicable(const Context& ctx) const override { return gpu_waiver(ctx); }

  core::Result<BenchResult> run(const Context& ctx, const RunOptions& options) const override {
    cuda::PcieOptions opt;
    opt.device = ctx.device;
    opt.repetitions = options.mode == Mode::kQuick ? 10 : (options.mode == Mode::kFull ? 50 : 20);
    if (options.repetitions > 0) opt.repetitions = options.repetitions;
    // About 20 ms per sample at the expected rates (pinned ~55 GB/s, pageable ~20 GB/s); pinned
    // bidirectional ~90 ms (16 per direction): with two streams and two issuing threads its start
    // skew is a larger share of a short sample (CV 4.4% at 4 per direction on an H200).
    opt.transfers_per_sample =
        memory_ == cuda::HostMemory::kPinned ? (direction_ == PcieDirection::kBidirectional ? 16 : 4) : 2;
    auto t = cuda::run_pcie(direction_, memory_, opt);
    if (!t) return t.error().with_context(key_);
    BenchResult r;
    r.key = key_;
    r.unit = "GB/s";
    r.higher_is_better = true;
    for (double s : t->seconds) r.samples.push_back(gigabytes_per_second(t->bytes_per_sample, s));
    summarize_into(r);
    r.params = {
        {"direction", to_string(direction_)},      {"host_memory", cuda::to_string(memory_)},
        {"bytes_per_transfer", opt.bytes},         {"transfers_per_sample", opt.transfers_per_sample},
        {"bytes_per_sample", t->bytes_per_sample}, {"streams", direction_ == PcieDirection::kBidirectional ? 2 : 1},
        {"warmup_transfers", opt.warmup},          {"repetitions", opt.repetitions}};
    r.verified = t->verified;
    r.verify_detail = t->verify_detail;
    return r;
  }

 private:
  PcieDirection direction_;
  cuda::HostMemory memory_;
  std::string key_;
  std::string description_;
};

}  // namespace

void add_pcie_benchmarks(std::vector<std::unique_ptr<Benchmark>>& out) {
  for (cuda::HostMemory m : {cuda::HostMemory::kPinned, cuda::HostMemory::kPageable}) {
    const char* mem = cuda::to_string(m);
    out.push_back(std::make_unique<PcieBenchmark>(
        PcieDirection::kHostToDevice, m,
        fmt::format("host-to-device cudaMemcpyAsync, {} host memory, 256 MiB: GB/s = bytes / time / 1e9", mem)));
    out.push_back(std::make_unique<PcieBenchmark>(
        PcieDirection::kDeviceToHost, m,
        fmt::format("device-to-host cudaMemcpyAsync, {} host memory, 256 MiB: GB/s = bytes / time / 1e9", mem)));
    out.push_back(std::make_unique<PcieBenchmark>(
        PcieDirection::kBidirectional, m,
        fmt::format(
            "both directions at once on two streams, {} host memory: GB/s = (bytes in + bytes out) / time / 1e9",
            mem)));
  }
}

}  // namespace gpudoc::bench
