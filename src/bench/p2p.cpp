// The p2p.* benchmarks: GPU-to-GPU bandwidth and latency for every pair of GPUs, through
// cuda/p2p.hpp. Each result's headline is pooled over the pairs; the matrix of per-pair medians
// is in params["matrix"] (rendered by details_text) and every pair's samples in params["pairs"].
#include <fmt/format.h>

#include "bench/cuda/p2p.hpp"
#include "bench/multi_gpu.hpp"
#include "bench/registry.hpp"
#include "bench/stats.hpp"

namespace gpudoc::bench {
namespace {

enum class P2pKind { kBandwidth, kBidirectional, kLatency };

bool has_peer(const Context& ctx, int i, int j) {
  return static_cast<std::size_t>(i) < ctx.peer_access.size() &&
         static_cast<std::size_t>(j) < ctx.peer_access[static_cast<std::size_t>(i)].size() &&
         ctx.peer_access[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
}

// What one pair measured, in the result's unit.
struct PairRun {
  std::vector<double> samples;
  bool verified = false;
  std::string verify_detail;
};

class P2pBenchmark final : public Benchmark {
 public:
  P2pBenchmark(P2pKind kind, std::string key, std::string description)
      : kind_(kind), key_(std::move(key)), description_(std::move(description)) {}
  std::string key() const override { return key_; }
  std::string description() const override { return description_; }

  std::optional<std::string> applicable(const Context& ctx) const override {
    if (auto w = multi_gpu_waiver(ctx)) return w;
    for (const GpuPair& p : ordered_pairs(ctx.device_count))
      if (has_peer(ctx, p.first, p.second)) return std::nullopt;
    return fmt::format("waived: no pair of the {} GPUs has peer access (cudaDeviceCanAccessPeer)", ctx.device_count);
  }

  core::Result<BenchResult> run(const Context& ctx, const RunOptions& options) const override {
    const int by_mode = options.mode == Mode::kQuick ? 10 : (options.mode == Mode::kFull ? 50 : 20);
    const int repetitions = options.repetitions > 0 ? options.repetitions : by_mode;
    cuda::P2pCopyOptions copy;
    copy.repetitions = repetitions;
    cuda::P2pLatencyOptions latency;
    latency.repetitions = repetitions;

    const int n = ctx.device_count;
    const std::vector<GpuPair> pairs = kind_ == P2pKind::kBidirectional ? unordered_pairs(n) : ordered_pairs(n);
    std::vector<std::vector<std::optional<double>>> matrix(
        static_cast<std::size_t>(n), std::vector<std::optional<double>>(static_cast<std::size_t>(n)));
    BenchResult r;
    r.key = key_;
    r.unit = kind_ == P2pKind::kLatency ? "us" : "GB/s";
    r.higher_is_better = kind_ != P2pKind::kLatency;
    r.verified = true;
    nlohmann::json pair_list = nlohmann::json::array();
    std::size_t measured = 0;
    for (const GpuPair& p : pairs) {
      const bool peer =
          has_peer(ctx, p.first, p.second) && (kind_ != P2pKind::kBidirectional || has_peer(ctx, p.second, p.first));
      nlohmann::json pj = {{"first", p.first}, {"second", p.second}};
      if (!peer) {
        pj["skipped"] = "no peer access";
        pair_list.push_back(std::move(pj));
        continue;
      }
      auto run = run_pair(p, copy, latency);
      if (!run) return run.error().with_context(fmt::format("{} GPU {} {} GPU {}", key_, p.first, arrow(), p.second));
      const Stats s = summarize(run->samples);
      matrix[static_cast<std::size_t>(p.first)][static_cast<std::size_t>(p.second)] = s.median;
      if (kind_ == P2pKind::kBidirectional)
        matrix[static_cast<std::size_t>(p.second)][static_cast<std::size_t>(p.first)] = s.median;
      pj.update({{"median", s.median},
                 {"min", s.min},
                 {"max", s.max},
                 {"cv", s.cv},
                 {"samples", run->samples},
                 {"verified", run->verified},
                 {"verify_detail", run->verify_detail}});
      pair_list.push_back(std::move(pj));
      r.samples.insert(r.samples.end(), run->samples.begin(), run->samples.end());
      if (!run->verified && r.verified) {
        r.verified = false;
        r.verify_detail = fmt::format("GPU {} {} GPU {}: {}", p.first, arrow(), p.second, run->verify_detail);
      }
      ++measured;
    }
    summarize_into(r);
    if (r.verified) r.verify_detail = fmt::format("{} pair(s): {}", measured, verified_text());

    nlohmann::json values = nlohmann::json::array();
    for (const auto& row : matrix) {
      nlohmann::json jr = nlohmann::json::array();
      for (const auto& v : row) jr.push_back(v ? nlohmann::json(*v) : nlohmann::json(nullptr));
      values.push_back(std::move(jr));
    }
    r.params = {
        {"gpus", n},
        {"repetitions", repetitions},
        {"headline", "median of every sample of every measured pair (per-pair figures in matrix and pairs)"},
        {"matrix",
         {{"rows", kind_ == P2pKind::kLatency ? "reader" : (kind_ == P2pKind::kBidirectional ? "gpu" : "src")},
          {"columns", kind_ == P2pKind::kLatency ? "owner" : (kind_ == P2pKind::kBidirectional ? "gpu" : "dst")},
          {"unit", r.unit},
          {"values", std::move(values)}}},
        {"pairs", std::move(pair_list)}};
    if (kind_ == P2pKind::kLatency) {
      r.params.update({{"method",
                        "one thread on the reader follows a pointer chain in the owner's memory; each load "
                        "depends on the previous one and bypasses the reader's caches (ld.global.cv)"},
                       {"buffer_bytes", latency.buffer_bytes},
                       {"stride_bytes", latency.stride_bytes},
                       {"accesses_per_sample", latency.accesses},
                       {"warmup", latency.warmup}});
    } else {
      r.params.update({{"method", kind_ == P2pKind::kBidirectional
                                      ? "cudaMemcpyPeerAsync both ways at once, each on its source GPU's stream "
                                        "(copy engines), peer access enabled"
                                      : "cudaMemcpyPeerAsync on the source GPU's stream (its copy engine pushes), "
                                        "peer access enabled"},
                       {"buffer_bytes", copy.buffer_bytes},
                       {"copies_per_sample", copy.copies_per_sample},
                       {"warmup", copy.warmup}});
    }
    add_datasheet(ctx, r);
    return r;
  }

 private:
  const char* arrow() const {
    switch (kind_) {
      case P2pKind::kBandwidth: return "->";
      case P2pKind::kBidirectional: return "<->";
      case P2pKind::kLatency: return "reads";
    }
    return "?";
  }
  const char* verified_text() const {
    return kind_ == P2pKind::kLatency ? "every chase ended on the node the chain predicts"
                                      : "every destination word matched its source after poisoning";
  }

  core::Result<PairRun> run_pair(const GpuPair& p, const cuda::P2pCopyOptions& copy,
                                 const cuda::P2pLatencyOptions& latency) const {
    PairRun out;
    if (kind_ == P2pKind::kLatency) {
      auto t = cuda::run_p2p_latency(p.first, p.second, latency);
      if (!t) return t.error();
      for (double s : t->seconds) out.samples.push_back(s * 1e6);
      out.verified = t->verified;
      out.verify_detail = t->verify_detail;
      return out;
    }
    const bool both = kind_ == P2pKind::kBidirectional;
    auto t = cuda::run_p2p_copy(p.first, p.second, both, copy);
    if (!t) return t.error();
    const double bytes = static_cast<double>(t->bytes_per_copy) * (both ? 2 : 1);
    for (double s : t->seconds) out.samples.push_back(bytes / s / 1e9);
    out.verified = t->verified;
    out.verify_detail = t->verify_detail;
    return out;
  }

  void add_datasheet(const Context& ctx, BenchResult& r) const {
    const auto d = ctx.gpu ? nvlink_datasheet(ctx.gpu->name) : std::nullopt;
    if (!d) {
      r.params["datasheet"] = nullptr;
      return;
    }
    const double ceiling = kind_ == P2pKind::kBidirectional ? d->bidirectional_gb_per_s : d->per_direction_gb_per_s;
    r.params["datasheet"] = {{"link", d->link},
                             {"per_direction_gb_per_s", d->per_direction_gb_per_s},
                             {"bidirectional_gb_per_s", d->bidirectional_gb_per_s},
                             {"source", d->source}};
    if (kind_ == P2pKind::kLatency) {
      r.params["note"] = d->link;
      return;
    }
    r.params["fraction_of_datasheet"] = ceiling > 0 ? r.median / ceiling : 0.0;
    r.params["note"] = fmt::format("{:.0f}% of {} datasheet {:.0f} GB/s {}", 100 * r.median / ceiling, d->link, ceiling,
                                   kind_ == P2pKind::kBidirectional ? "both directions" : "per direction");
  }

  P2pKind kind_;
  std::string key_;
  std::string description_;
};

}  // namespace

std::optional<std::string> multi_gpu_waiver(const Context& ctx) {
  if (auto w = gpu_waiver(ctx)) return w;
  if (ctx.device_count < 2) return fmt::format("waived: needs 2 or more GPUs ({} visible)", ctx.device_count);
  return std::nullopt;
}

void add_p2p_benchmarks(std::vector<std::unique_ptr<Benchmark>>& out) {
  out.push_back(std::make_unique<P2pBenchmark>(
      P2pKind::kBandwidth, "p2p.bandwidth",
      "GPU-to-GPU copy per ordered pair (cudaMemcpyPeerAsync, 256 MiB, peer access): GB/s = bytes / time per copy "
      "/ 1e9; median over every pair's samples"));
  out.push_back(std::make_unique<P2pBenchmark>(
      P2pKind::kBidirectional, "p2p.bidirectional",
      "the same copy both ways at once per GPU pair: GB/s = 2 x bytes / time / 1e9 (sum of both directions)"));
  out.push_back(std::make_unique<P2pBenchmark>(
      P2pKind::kLatency, "p2p.latency",
      "one thread chasing pointers in a peer GPU's memory per ordered pair: us = kernel time / dependent loads"));
}

}  // namespace gpudoc::bench
