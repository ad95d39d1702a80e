#include "bench/registry.hpp"

#include <fmt/format.h>

#include "bench/cuda/p2p.hpp"
#include "bench/stats.hpp"

namespace gpudoc::bench {

Context probe_context(int device) {
  Context ctx;
  ctx.device = device;
  ctx.cuda_built = cuda::built_with_cuda();
  if (!ctx.cuda_built) {
    ctx.no_gpu_reason = "built without CUDA";
    return ctx;
  }
  auto count = cuda::device_count();
  if (!count) {
    ctx.no_gpu_reason = count.error().message();
    return ctx;
  }
  if (*count == 0) {
    ctx.no_gpu_reason = "the CUDA runtime reports no device";
    return ctx;
  }
  auto info = cuda::device_info(device);
  if (!info) {
    ctx.no_gpu_reason = info.error().message();
    return ctx;
  }
  ctx.gpu = *info;
  // Every GPU and which pairs can map each other's memory, for p2p.* and nccl.*.
  ctx.device_count = *count;
  for (int d = 0; d < *count; ++d)
    if (auto other = cuda::device_info(d)) ctx.gpus.push_back(*other);
  ctx.peer_access.assign(static_cast<std::size_t>(*count), std::vector<bool>(static_cast<std::size_t>(*count), false));
  for (int i = 0; i < *count; ++i)
    for (int j = 0; j < *count; ++j)
      if (i != j) {
        auto can = cuda::can_access_peer(i, j);
        ctx.peer_access[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] = can && *can;
      }
  return ctx;
}

nlohmann::json to_json(const Context& ctx) {
  nlohmann::json j = {{"device", ctx.device}, {"cuda_built", ctx.cuda_built}};
  if (ctx.gpu) {
    const auto& g = *ctx.gpu;
    j["gpu"] = {{"name", g.name},
                {"uuid", g.uuid},
                {"compute_capability", fmt::format("{}.{}", g.compute_major, g.compute_minor)},
                {"sm_count", g.sm_count},
                {"l2_bytes", g.l2_bytes},
                {"memory_bytes", g.memory_bytes},
                {"driver_version", g.driver_version},
                {"runtime_version", g.runtime_version}};
  } else {
    j["gpu"] = nullptr;
    j["no_gpu_reason"] = ctx.no_gpu_reason;
  }
  j["device_count"] = ctx.device_count;
  if (ctx.device_count > 1) {
    nlohmann::json gpus = nlohmann::json::array();
    for (const auto& g : ctx.gpus) gpus.push_back({{"index", g.index}, {"name", g.name}, {"uuid", g.uuid}});
    j["gpus"] = std::move(gpus);
    j["peer_access"] = ctx.peer_access;
  }
  if (ctx.machine) {
    j["nvml"] = to_json(*ctx.machine);
  } else {
    j["nvml"] = nullptr;
    j["nvml_unavailable_reason"] = ctx.machine_reason;
  }
  return j;
}

const char* to_string(Mode mode) noexcept {
  switch (mode) {
    case Mode::kQuick: return "quick";
    case Mode::kDefault: return "default";
    case Mode::kFull: return "full";
  }
  return "?";
}

void summarize_into(BenchResult& r) {
  const Stats s = summarize(r.samples);
  r.median = s.median;
  r.min = s.min;
  r.max = s.max;
  r.mean = s.mean;
  r.cv = s.cv;
}

nlohmann::json to_json(const BenchResult& r) {
  return {{"key", r.key},
          {"unit", r.unit},
          {"higher_is_better", r.higher_is_better},
          {"median", r.median},
          {"min", r.min},
          {"max", r.max},
          {"mean", r.mean},
          {"cv", r.cv},
          {"samples", r.samples},
          {"params", r.params},
          {"verified", {{"ok", r.verified}, {"detail", r.verify_detail}}}};
}

std::optional<std::string> gpu_waiver(const Context& ctx) {
  if (!ctx.cuda_built) return std::string("waived: built without CUDA");
  if (!ctx.gpu) return "waived: no GPU (" + ctx.no_gpu_reason + ")";
  return std::nullopt;
}

std::vector<const Benchmark*> Registry::all() const {
  std::vector<const Benchmark*> out;
  out.reserve(benchmarks_.size());
  for (const auto& b : benchmarks_) out.push_back(b.get());
  return out;
}

const Benchmark* Registry::find(std::string_view key) const {
  for (const auto& b : benchmarks_)
    if (b->key() == key) return b.get();
  return nullptr;
}

core::Result<std::vector<const Benchmark*>> Registry::select(const std::vector<std::string>& items) const {
  std::vector<const Benchmark*> out;
  auto add = [&](const Benchmark* b) {
    for (const Benchmark* have : out)
      if (have == b) return;
    out.push_back(b);
  };
  for (const std::string& item : items) {
    bool matched = false;
    for (const auto& b : benchmarks_) {
      const std::string key = b->key();
      if (key == item ||
          (key.size() > item.size() && key.compare(0, item.size(), item) == 0 && key[item.size()] == '.')) {
        add(b.get());
        matched = true;
      }
    }
    if (!matched) {
      std::string valid;
      for (const auto& b : benchmarks_) valid += (valid.empty() ? "" : ", ") + b->key();
      return core::Error(core::ErrorKind::kUsage,
                         fmt::format("unknown benchmark '{}'; valid keys: {} (or a group such as 'hbm')", item, valid));
    }
  }
  // Registry order, whatever order the items came in.
  std::vector<const Benchmark*> ordered;
  for (const auto& b : benchmarks_)
    for (const Benchmark* s : out)
      if (s == b.get()) ordered.push_back(s);
  return ordered;
}

const Registry& registry() {
  static const Registry r = [] {
    std::vector<std::unique_ptr<Benchmark>> list;
    add_hbm_benchmarks(list);
    add_pcie_benchmarks(list);
    add_gemm_benchmarks(list);
    add_launch_benchmarks(list);
    add_p2p_benchmarks(list);
    add_nccl_benchmarks(list);
    return Registry(std::move(list));
  }();
  return r;
}

}  // namespace gpudoc::bench
