#include "health/load.hpp"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <thread>

#include "bench/cuda/hbm.hpp"

namespace gpudoc::health {
namespace {

constexpr auto kSamplePeriod = std::chrono::milliseconds(100);

core::MonoTime after(core::MonoTime t, double seconds) {
  return t + std::chrono::duration_cast<core::Nanos>(std::chrono::duration<double>(seconds));
}

// The loaders, one thread per GPU that is not lost; joined on destruction.
struct Loaders {
  std::vector<std::unique_ptr<std::atomic<bool>>> started;
  std::vector<core::Status> status;
  std::vector<std::thread> threads;
  std::atomic<int> done{0};

  Loaders(const LoadFn& load, const std::vector<GpuInput>& gpus, core::MonoTime deadline, bool run) {
    for (std::size_t k = 0; k < gpus.size(); ++k) {
      started.push_back(std::make_unique<std::atomic<bool>>(false));
      status.emplace_back(core::ok_status());
    }
    if (!run) return;
    for (std::size_t k = 0; k < gpus.size(); ++k)
      if (!gpus[k].lost)
        threads.emplace_back([this, &load, k, gpu = gpus[k].gpu, deadline] {
          status[k] = load(gpu, deadline, *started[k]);
          ++done;
        });
  }
  ~Loaders() { join(); }
  Loaders(const Loaders&) = delete;
  Loaders& operator=(const Loaders&) = delete;

  void join() {
    for (auto& t : threads)
      if (t.joinable()) t.join();
  }
  [[nodiscard]] bool any_started() const {
    return std::any_of(started.begin(), started.end(), [](const auto& s) { return s->load(); });
  }
  // Every load failed to start (no CUDA, no device): idle readings are enough, no need to wait.
  [[nodiscard]] bool all_failed() const {
    return !threads.empty() && done.load() == static_cast<int>(threads.size()) && !any_started();
  }
};

// What each GPU's load telemetry says once the load is over.
void settle(const LoadOptions& options, const Loaders& loaders, const std::vector<double>& started_at,
            std::vector<GpuInput>& gpus) {
  for (std::size_t k = 0; k < gpus.size(); ++k) {
    LoadTelemetry& load = gpus[k].load;
    if (!options.why_not.empty()) {
      load.why_not = options.why_not;
    } else if (!loaders.started[k]->load()) {
      load.why_not = loaders.status[k] ? "the load did not start" : loaders.status[k].error().message();
    } else {
      load.ran = true;
      // Warm-up counts from when the first round finished (allocation and verification excluded).
      load.warmup_s = std::max(0.0, started_at[k]) + 0.5;
    }
    if (!load.ran) load.warmup_s = 0;
  }
}

}  // namespace

core::Result<LoadSample> read_load_sample(gpu::Backend& b, int gpu, double t_s) {
  LoadSample s;
  s.t_s = t_s;
  for (gpu::MetricGroup g : {gpu::MetricGroup::kFast, gpu::MetricGroup::kSlow}) {
    auto r = b.read(gpu, g);
    if (!r) {
      if (r.error().kind() == core::ErrorKind::kGpuLost) return r.error();
      continue;
    }
    for (const auto& m : r->metrics) {
      switch (m.metric) {
        case gpu::Metric::kSmClockMhz: s.sm_clock_mhz = m.value; break;
        case gpu::Metric::kClockEventReasonsMask: s.clock_event_reasons = static_cast<std::uint64_t>(m.value); break;
        case gpu::Metric::kGpuTemperatureCelsius: s.temperature_celsius = m.value; break;
        case gpu::Metric::kMemoryTemperatureCelsius: s.memory_temperature_celsius = m.value; break;
        case gpu::Metric::kPowerWatts: s.power_watts = m.value; break;
        case gpu::Metric::kPcieLinkGeneration: s.pcie_link_generation = static_cast<int>(m.value); break;
        case gpu::Metric::kPcieLinkWidth: s.pcie_link_width = static_cast<int>(m.value); break;
        default: break;
      }
    }
  }
  return s;
}

std::string why_no_load(bool asked_not_to, const std::string& not_this_machine) {
  if (asked_not_to) return "--no-load";
  if (!not_this_machine.empty())
    return "the " + not_this_machine + " backend's GPUs are not this machine's: no load runs on them";
  if (std::getenv("CUDA_VISIBLE_DEVICES") != nullptr)
    return "CUDA_VISIBLE_DEVICES is set, so CUDA's and NVML's GPU numbers may differ";
  return {};
}

LoadFn hbm_copy_load(core::Clock& clock) {
  ::setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0);  // CUDA ordinal i == NVML index i
  return [&clock](int gpu, core::MonoTime deadline, std::atomic<bool>& started) -> core::Status {
    bench::cuda::HbmOptions opt;
    opt.device = gpu;
    opt.buffer_bytes = std::size_t{1} << 30;
    opt.warmup = 1;
    opt.repetitions = 10;
    opt.launches_per_sample = 20;  // ~0.1-0.3 s per round on an H200
    bool ran = false;
    while (clock.now() < deadline) {
      auto r = bench::cuda::run_hbm(bench::cuda::HbmKernel::kCopy, opt);
      if (!r) {
        if (ran) return core::ok_status();
        return r.error();
      }
      ran = true;
      started = true;
    }
    return core::ok_status();
  };
}

double run_load(gpu::Backend& b, core::Clock& clock, const LoadOptions& options, const LoadFn& load,
                std::vector<GpuInput>& gpus) {
  const double seconds = options.why_not.empty() ? std::max(kMinLoadSeconds, options.seconds) : kIdleSeconds;
  const core::MonoTime start = clock.now();
  const core::MonoTime deadline = after(start, seconds);
  Loaders loaders(load, gpus, deadline, options.why_not.empty());
  std::vector<double> started_at(gpus.size(), -1.0);
  while (clock.now() < deadline) {
    if (loaders.all_failed() && !gpus.empty() && gpus.front().load.samples.size() >= 3) break;
    const double t = core::to_seconds(clock.now() - start);
    for (std::size_t k = 0; k < gpus.size(); ++k) {
      GpuInput& in = gpus[k];
      if (in.lost) continue;
      if (loaders.started[k]->load() && started_at[k] < 0) started_at[k] = t;
      auto s = read_load_sample(b, in.gpu, t);
      if (!s) {
        in.lost = s.error();
        continue;
      }
      in.load.samples.push_back(*s);
    }
    clock.sleep_until(clock.now() + kSamplePeriod);
  }
  loaders.join();
  settle(options, loaders, started_at, gpus);
  return seconds;
}

}  // namespace gpudoc::health
