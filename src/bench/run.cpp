#include "bench/run.hpp"

#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <optional>

#include "core/file.hpp"
#include "telemetry/sampler.hpp"

namespace gpudoc::bench {
namespace {

// Samples the benchmarked GPU's fast group (clocks, power, temperature, clock-event reasons) every
// 100 ms while the benchmarks run, and fills the context's machine facts from the backend.
class RunObserver {
 public:
  RunObserver(Context& ctx, const ObserverSource& observe) {
    if (!ctx.gpu) {
      ctx.machine_reason = "no GPU";
      return;
    }
    Observer o = observe ? observe() : Observer{nullptr, nullptr, "no GPU backend"};
    if (o.backend == nullptr) {
      ctx.machine_reason = o.why_not;
      return;
    }
    auto m = probe_machine(*o.backend, ctx.gpu->uuid);
    if (!m) {
      ctx.machine_reason = m.error().message();
      return;
    }
    ctx.machine = *m;
    telemetry::SamplerConfig config;
    config.periods.fill(std::chrono::milliseconds(0));
    config.periods[gpu::index(gpu::MetricGroup::kFast)] = std::chrono::milliseconds(100);
    config.gpus = {m->nvml_index};
    config.read_events = false;
    index_ = m->nvml_index;
    sampler_ = std::make_unique<telemetry::Sampler>(*o.backend, o.clock != nullptr ? *o.clock : system_clock_, config);
    if (auto st = sampler_->start(); !st) {
      ctx.machine_reason = "sampling the GPU: " + st.error().message();
      sampler_.reset();
    }
  }
  ~RunObserver() {
    if (sampler_) sampler_->stop();
  }
  RunObserver(const RunObserver&) = delete;
  RunObserver& operator=(const RunObserver&) = delete;

  // Stops sampling and attaches what was seen to the report.
  void finish(Report& report) {
    if (!sampler_) return;
    sampler_->stop();
    std::vector<gpu::MetricSample> samples;
    for (auto& rec : sampler_->drain(std::chrono::milliseconds(0)))
      if (rec.kind == telemetry::SamplerRecord::Kind::kSamples && rec.gpu == index_)
        samples.insert(samples.end(), rec.samples.begin(), rec.samples.end());
    sampler_.reset();
    attach_conditions(report, samples);
  }

 private:
  core::SystemClock system_clock_;
  std::unique_ptr<telemetry::Sampler> sampler_;
  int index_ = 0;
};

}  // namespace

ObserverSource observe_through(telemetry::BackendSource& source) {
  return [&source] {
    auto b = source.open_or_reason();
    return Observer{b.backend, b.clock, b.backend != nullptr ? "" : "no GPU telemetry: " + b.why_not};
  };
}

core::Result<std::string> read_saved_run(const std::string& path) {
  return core::read_file(path, {.max_bytes = 32 << 20, .what = "a saved bench run"});
}

core::Result<Plan> make_plan(const PlanRequest& request) {
  if (request.device < 0) return core::Error(core::ErrorKind::kUsage, "--device must be >= 0");
  Plan plan;
  plan.device = request.device;
  plan.options.mode = request.mode;
  plan.selected = registry().all();
  if (!request.only.empty()) {
    auto sel = registry().select(request.only);
    if (!sel) return sel.error();
    plan.selected = *sel;
  }
  if (auto n = cuda::device_count(); n && *n > 0 && request.device >= *n)
    return core::Error(core::ErrorKind::kUsage,
                       fmt::format("--device {}: there are {} CUDA devices (0 to {})", request.device, *n, *n - 1));
  return plan;
}

Report run(const Plan& plan, const ObserverSource& observe, const Progress& progress) {
  Context ctx = probe_context(plan.device);
  RunObserver observer(ctx, observe);
  Report report = run_benchmarks(plan.selected, ctx, plan.options, progress);
  observer.finish(report);
  return report;
}

}  // namespace gpudoc::bench
