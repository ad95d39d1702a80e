#include "bench/registry.hpp"

#include <fmt/format.h>

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
  return {{"key", r.key},       {"unit", r.unit}, {"higher_is_better", r.higher_is_better},
          {"median", r.median}, {"min", r.min},   {"max", r.max},
          {"mean", r.mean},     {"cv", r.cv},     {"samples", r.samples},
          {"params", r.params}, {"verified", {{"ok", r.verified}, {"detail", r.verify_detail}}}};
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
      if (key == item || (key.size() > item.size() && key.compare(0, item.size(), item) == 0 && key[item.size()] == '.')) {
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
    add_launch_benchmarks(list);
    return Registry(std::move(list));
  }();
  return r;
}

}  // namespace gpudoc::bench
