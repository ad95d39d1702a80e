#include "gpu/fake/fake_backend.hpp"

#include <fmt/format.h>

#include <cmath>
#include <thread>

namespace gpudoc::gpu {
namespace {

double default_value(int gpu, Metric m, double t) {
  double wave = 0.5 + 0.5 * std::sin(t * 2.0 * M_PI / 10.0 + gpu);  // 10 s period, 0..1
  switch (m) {
    case Metric::kGpuUtilizationPercent: return std::round(100.0 * wave);
    case Metric::kMemoryUtilizationPercent: return std::round(40.0 * wave);
    case Metric::kPowerWatts: return 80.0 + 600.0 * wave;
    case Metric::kSmClockMhz: return 1980.0;
    case Metric::kMemoryClockMhz: return 3201.0;
    case Metric::kGpuTemperatureCelsius: return 30.0 + 40.0 * wave;
    case Metric::kClockEventReasonsMask: return wave < 0.05 ? 1.0 : 0.0;
    case Metric::kMemoryUsedBytes: return 1024.0 * 1024.0 * 1024.0 * (1.0 + gpu);
    case Metric::kMemoryFreeBytes: return 1024.0 * 1024.0 * 1024.0 * (140.0 - gpu);
    case Metric::kMemoryTemperatureCelsius: return 35.0 + 30.0 * wave;
    case Metric::kPcieLinkGeneration: return 5.0;
    case Metric::kPcieLinkWidth: return 16.0;
    case Metric::kPowerLimitWatts: return 700.0;
    case Metric::kEnergyJoules: return 1000.0 + 400.0 * t;
    case Metric::kGpmPcieRxBytesPerSecond:
    case Metric::kGpmPcieTxBytesPerSecond:
    case Metric::kGpmNvlinkRxBytesPerSecond:
    case Metric::kGpmNvlinkTxBytesPerSecond: return 1.0e9 * wave;
    default: return 90.0 * wave;  // GPM activities, percent
  }
}

double steady_load_value(int gpu, Metric m, double t) {
  const double wave = std::sin(t * 2.0 * M_PI / 20.0 + 0.7 * gpu);  // -1..1, 20 s period
  const double ripple = std::sin(t * 2.0 * M_PI / 1.3 + gpu);       // small, fast
  switch (m) {
    case Metric::kGpuUtilizationPercent: return std::round(97.0 + 2.0 * ripple);
    case Metric::kMemoryUtilizationPercent: return std::round(38.0 + 4.0 * wave);
    case Metric::kPowerWatts: return 600.0 + 40.0 * wave + 5.0 * ripple;
    case Metric::kSmClockMhz: return 1980.0;
    case Metric::kMemoryClockMhz: return 3201.0;
    case Metric::kGpuTemperatureCelsius: return std::round(63.0 + 3.0 * wave);
    case Metric::kClockEventReasonsMask: return 0.0;
    case Metric::kMemoryUsedBytes: return 80.0 * 1024.0 * 1024.0 * 1024.0;
    case Metric::kMemoryFreeBytes: return 60.0 * 1024.0 * 1024.0 * 1024.0;
    case Metric::kGpmGraphicsActivityPercent: return 99.0;
    case Metric::kGpmSmActivityPercent: return 80.0 + 3.0 * ripple;
    case Metric::kGpmSmOccupancyPercent: return 45.0 + 2.0 * ripple;
    case Metric::kGpmTensorActivityPercent: return 55.0 + 4.0 * ripple;
    case Metric::kGpmDramActivityPercent: return 35.0 + 3.0 * wave;
    case Metric::kMemoryTemperatureCelsius: return std::round(70.0 + 2.0 * wave);
    case Metric::kPcieLinkGeneration: return 5.0;
    case Metric::kPcieLinkWidth: return 16.0;
    case Metric::kPowerLimitWatts: return 700.0;
    case Metric::kEnergyJoules: return 1.0e6 + 600.0 * t;
    case Metric::kGpmPcieRxBytesPerSecond:
    case Metric::kGpmPcieTxBytesPerSecond: return 2.0e9 + 0.5e9 * wave;
    case Metric::kGpmNvlinkRxBytesPerSecond:
    case Metric::kGpmNvlinkTxBytesPerSecond: return 40.0e9 + 10.0e9 * wave;
    // The error counters come from the GPU's health facts (FakeBackend::read), not a waveform.
    case Metric::kEccCorrectedVolatileErrors:
    case Metric::kEccUncorrectedVolatileErrors:
    case Metric::kEccCorrectedAggregateErrors:
    case Metric::kEccUncorrectedAggregateErrors:
    case Metric::kRemappedRowsCorrectable:
    case Metric::kRemappedRowsUncorrectable:
    case Metric::kRowRemapPending:
    case Metric::kRowRemapFailure:
    case Metric::kPcieReplayErrors:
    case Metric::kNvlinkCrcFlitErrors:
    case Metric::kNvlinkCrcDataErrors:
    case Metric::kNvlinkReplayErrors:
    case Metric::kNvlinkRecoveryErrors: return 0.0;
  }
  return 0.0;
}

}  // namespace

FakeBackend::ValueFn FakeBackend::steady_load() { return steady_load_value; }

FakeBackend::FakeBackend(core::Clock& clock, int gpu_count)
    : clock_(clock), created_(clock.now()), created_unix_ns_(clock.unix_now_ns()), value_fn_(default_value) {
  for (int i = 0; i < gpu_count; ++i) {
    auto g = std::make_unique<Gpu>();
    g->supported.set();
    g->last_util_sample_ns = created_unix_ns_ - created_unix_ns_ % kUtilizationSampleNs;
    gpus_.push_back(std::move(g));
  }
}

void FakeBackend::set_value_fn(ValueFn fn) {
  std::lock_guard lock(mu_);
  value_fn_ = std::move(fn);
}

void FakeBackend::set_supported(int gpu, MetricSet supported) {
  std::lock_guard lock(mu_);
  gpus_.at(static_cast<std::size_t>(gpu))->supported = supported;
}

void FakeBackend::set_processes(int gpu, std::vector<ProcessSample> processes) {
  std::lock_guard lock(mu_);
  gpus_.at(static_cast<std::size_t>(gpu))->processes = std::move(processes);
}

void FakeBackend::lose_gpu(int gpu, core::MonoTime at) {
  std::lock_guard lock(mu_);
  gpus_.at(static_cast<std::size_t>(gpu))->lost_at = at;
}

void FakeBackend::inject_error(int gpu, MetricGroup group, core::ErrorKind kind, int count) {
  std::lock_guard lock(mu_);
  gpus_.at(static_cast<std::size_t>(gpu))->errors[index(group)] = Injected{kind, count};
}

void FakeBackend::set_hang(int gpu, MetricGroup group, core::Nanos duration) {
  std::lock_guard lock(mu_);
  gpus_.at(static_cast<std::size_t>(gpu))->hang[index(group)] = duration;
}

void FakeBackend::set_device_count_error(std::optional<core::Error> error) {
  std::lock_guard lock(mu_);
  count_error_ = std::move(error);
}

void FakeBackend::push_event(DeviceEvent event) {
  std::lock_guard lock(mu_);
  events_.push_back(std::move(event));
}

void FakeBackend::set_health_facts(int gpu, HealthFacts facts) {
  std::lock_guard lock(mu_);
  gpus_.at(static_cast<std::size_t>(gpu))->health = std::move(facts);
}

void FakeBackend::inject_health_error(int gpu, core::ErrorKind kind, int count) {
  std::lock_guard lock(mu_);
  gpus_.at(static_cast<std::size_t>(gpu))->health_error = Injected{kind, count};
}

HealthFacts FakeBackend::default_health_facts() {
  HealthFacts f;
  f.persistence_mode = true;
  f.compute_mode = ComputeMode::kDefault;
  f.mig_current = false;
  f.mig_pending = false;
  f.ecc_current = true;
  f.ecc_pending = true;
  f.ecc_volatile_corrected = 0;
  f.ecc_volatile_uncorrected = 0;
  f.ecc_aggregate_corrected = 0;
  f.ecc_aggregate_uncorrected = 0;
  f.remapped_rows_corrected = 0;
  f.remapped_rows_uncorrected = 0;
  f.remap_pending = false;
  f.remap_failed = false;
  f.power_limit_watts = 700;
  f.power_limit_enforced_watts = 700;
  f.power_limit_default_watts = 700;
  f.temperature_slowdown_celsius = 89;
  f.temperature_shutdown_celsius = 95;
  f.temperature_gpu_max_celsius = 87;
  f.temperature_memory_max_celsius = 95;
  f.pcie_link_generation_max = 5;
  f.pcie_link_width_max = 16;
  f.pcie_replay_errors = 0;
  for (int i = 0; i < 18; ++i) f.nvlinks.push_back(NvlinkFacts{i, true, "4.0", 6, 0, 0, 0, 0});
  return f;
}

core::Result<HealthFacts> FakeBackend::health_facts(int gpu) {
  std::lock_guard lock(mu_);
  if (auto s = check_index(gpu); !s) return s.error();
  Gpu& g = *gpus_[static_cast<std::size_t>(gpu)];
  if (g.health_error && g.health_error->remaining > 0) {
    const core::ErrorKind kind = g.health_error->kind;
    if (--g.health_error->remaining == 0) g.health_error.reset();
    return core::Error(kind, fmt::format("injected {} on GPU {}", core::to_string(kind), gpu));
  }
  return g.health;
}

std::uint64_t FakeBackend::read_count(int gpu, MetricGroup group) const {
  return gpus_.at(static_cast<std::size_t>(gpu))->reads[index(group)].load();
}

core::Result<SystemInfo> FakeBackend::system_info() { return SystemInfo{"fake", "999.99.99", "13.0", "fake"}; }

core::Result<int> FakeBackend::device_count() {
  std::lock_guard lock(mu_);
  if (count_error_) return *count_error_;
  return static_cast<int>(gpus_.size());
}

core::Status FakeBackend::check_index(int gpu) const {
  if (gpu < 0 || static_cast<std::size_t>(gpu) >= gpus_.size())
    return core::Error(core::ErrorKind::kBadInput, fmt::format("no GPU {} (this machine has {})", gpu, gpus_.size()));
  const Gpu& g = *gpus_[static_cast<std::size_t>(gpu)];
  if (g.lost_at && clock_.now() >= *g.lost_at)
    return core::Error(core::ErrorKind::kGpuLost, fmt::format("GPU {} is lost (fell off the bus)", gpu));
  return {};
}

core::Result<DeviceInfo> FakeBackend::device_info(int gpu) {
  std::lock_guard lock(mu_);
  if (auto s = check_index(gpu); !s) return s.error();
  DeviceInfo d;
  d.index = gpu;
  d.name = "Fake H200";
  d.uuid = fmt::format("GPU-fake-{:04d}", gpu);
  d.pci_bus_id = fmt::format("00000000:{:02X}:00.0", 0x18 + gpu);
  d.memory_total_bytes = 143771ULL << 20;
  d.sm_clock_max_mhz = 1980;
  d.memory_clock_max_mhz = 3201;
  d.pcie_link_generation_max = 5;
  d.pcie_link_width_max = 16;
  d.power_limit_default_watts = 700;
  d.temperature_slowdown_celsius = 89;
  d.temperature_shutdown_celsius = 95;
  d.temperature_gpu_max_celsius = 87;
  d.temperature_memory_max_celsius = 95;
  d.compute_capability_major = 9;
  d.compute_capability_minor = 0;
  d.mig_enabled = false;
  return d;
}

core::Result<MetricSet> FakeBackend::capabilities(int gpu) {
  std::lock_guard lock(mu_);
  if (auto s = check_index(gpu); !s) return s.error();
  return gpus_[static_cast<std::size_t>(gpu)]->supported;
}

core::Result<GroupReading> FakeBackend::read(int gpu, MetricGroup group) {
  core::Nanos hang{0};
  {
    std::lock_guard lock(mu_);
    if (auto s = check_index(gpu); !s) return s.error();
    Gpu& g = *gpus_[static_cast<std::size_t>(gpu)];
    g.reads[index(group)]++;
    hang = g.hang[index(group)];
    g.hang[index(group)] = core::Nanos(0);
  }
  if (hang.count() > 0) std::this_thread::sleep_for(hang);

  std::lock_guard lock(mu_);
  if (auto s = check_index(gpu); !s) return s.error();
  Gpu& g = *gpus_[static_cast<std::size_t>(gpu)];
  auto& inj = g.errors[index(group)];
  if (inj && inj->remaining > 0) {
    if (--inj->remaining == 0) {
      auto kind = inj->kind;
      inj.reset();
      return core::Error(kind, fmt::format("injected {} on GPU {}", core::to_string(kind), gpu));
    }
    return core::Error(inj->kind, fmt::format("injected {} on GPU {}", core::to_string(inj->kind), gpu));
  }
  MetricSet in_group = metrics_in(group) & g.supported;
  if (group != MetricGroup::kProcesses && in_group.none())
    return core::Error(core::ErrorKind::kNotSupported,
                       fmt::format("GPU {} supports nothing in group {}", gpu, info(group).name));

  GroupReading r;
  std::int64_t now_unix = clock_.unix_now_ns();
  auto t_of = [&](std::int64_t unix_ns) { return static_cast<double>(unix_ns - created_unix_ns_) * 1e-9; };
  if (group == MetricGroup::kUtilization) {
    // The driver's buffer: one sample at every 200 ms boundary, each handed out once.
    for (std::int64_t ts = g.last_util_sample_ns + kUtilizationSampleNs; ts <= now_unix; ts += kUtilizationSampleNs) {
      for (Metric m : {Metric::kGpuUtilizationPercent, Metric::kMemoryUtilizationPercent})
        if (in_group.test(index(m))) r.metrics.push_back({m, value_fn_(gpu, m, t_of(ts)), ts});
      g.last_util_sample_ns = ts;
    }
  } else if (group == MetricGroup::kErrors) {
    // The counters of the GPU's health facts (set_health_facts scripts both), as NVML's read gives them.
    for (const auto& sample : error_counter_samples(g.health, now_unix))
      if (in_group.test(index(sample.metric))) r.metrics.push_back(sample);
  } else if (group == MetricGroup::kProcesses) {
    for (auto p : g.processes) {
      p.time_unix_ns = now_unix;
      r.processes.push_back(std::move(p));
    }
  } else {
    for (Metric m : all_metrics())
      if (in_group.test(index(m))) r.metrics.push_back({m, value_fn_(gpu, m, t_of(now_unix)), now_unix});
  }
  return r;
}

core::Result<std::vector<DeviceEvent>> FakeBackend::wait_events(core::Nanos timeout) {
  {
    std::lock_guard lock(mu_);
    if (!events_.empty()) {
      std::vector<DeviceEvent> out;
      out.swap(events_);
      return out;
    }
  }
  clock_.sleep_until(clock_.now() + timeout);
  return std::vector<DeviceEvent>{};
}

}  // namespace gpudoc::gpu
