#include "guard/watch.hpp"

#include <fmt/format.h>

#include <utility>

namespace gpudoc::guard {

namespace {

// The one GPU a watch keeps, under the number the sampler's records give it.
gpu::DeviceInfo as_index(gpu::DeviceInfo info, int gpu) {
  info.index = gpu;
  return info;
}

}  // namespace

GpuWatch::GpuWatch(int gpu, gpu::DeviceInfo info, Policy policy, WatchOptions options)
    : gpu_(gpu),
      info_(std::move(info)),
      options_(std::move(options)),
      escalator_(std::move(policy), info_),
      forecaster_(options_.forecast),
      latest_({as_index(info_, gpu)}, telemetry::SamplerConfig::default_periods(), {.width = 0}) {}

std::optional<double> GpuWatch::newest_sample_t() const {
  const auto ns = latest_.newest_sample_unix_ns(0);
  if (!ns) return std::nullopt;
  return static_cast<double>(*ns) * 1e-9;
}

void GpuWatch::add(const telemetry::SamplerRecord& r) {
  if (r.gpu != gpu_) return;
  if (r.kind == telemetry::SamplerRecord::Kind::kEvent) {
    if (r.event_kind == "gpu_lost") {
      fatal_.gpu_lost = true;
      fatal_reasons_.push_back("the GPU was lost (the driver no longer answers for it)");
    } else if (r.event_kind == "xid") {
      const auto code = r.event_fields.value("code", std::uint64_t{0});
      if (options_.fatal_xid && options_.fatal_xid(code)) {
        fatal_.xid = true;
        fatal_reasons_.push_back(fmt::format("XID {}", code));
      }
    }
    return;
  }
  if (r.kind != telemetry::SamplerRecord::Kind::kSamples) return;
  latest_.add(r);
  ThermalSample s;
  std::optional<double> t;
  for (const gpu::MetricSample& m : r.samples) {
    const double ts = static_cast<double>(m.time_unix_ns) * 1e-9;
    if (!t || ts > *t) t = ts;
    switch (m.metric) {
      case gpu::Metric::kPowerWatts: s.power_watts = m.value; break;
      case gpu::Metric::kGpuTemperatureCelsius: s.gpu_temperature_celsius = m.value; break;
      case gpu::Metric::kMemoryTemperatureCelsius: s.memory_temperature_celsius = m.value; break;
      case gpu::Metric::kMemoryUsedBytes: memory_.add(ts, m.value); break;
      default: break;
    }
  }
  if (!t) return;
  if (s.power_watts || s.gpu_temperature_celsius || s.memory_temperature_celsius) {
    s.t = *t;
    forecaster_.add(s);
  }
}

void GpuWatch::add_health(const gpu::HealthFacts& facts) {
  if (facts.ecc_volatile_uncorrected) {
    if (!ecc_uncorrected_at_start_) {
      ecc_uncorrected_at_start_ = facts.ecc_volatile_uncorrected;
    } else if (*facts.ecc_volatile_uncorrected > *ecc_uncorrected_at_start_ && !fatal_.ecc_uncorrectable) {
      fatal_.ecc_uncorrectable = true;
      fatal_reasons_.push_back(fmt::format("uncorrectable ECC errors rose from {} to {} while watched",
                                           *ecc_uncorrected_at_start_, *facts.ecc_volatile_uncorrected));
    }
  }
  if (facts.remap_failed.value_or(false) && !fatal_.row_remap_failure) {
    fatal_.row_remap_failure = true;
    fatal_reasons_.push_back("a row remap failed: the memory cannot be repaired");
  }
}

std::optional<Decision> GpuWatch::tick(double t) {
  const double horizon = escalator_.policy().horizon_s;
  EscalationInput in;
  in.t = t;
  in.fatal = fatal_;
  const auto value = [this](gpu::Metric m) -> std::optional<double> {
    const auto& v = latest_.newest(0, m);
    return v ? std::optional<double>(v->value) : std::nullopt;
  };
  in.power_watts = value(gpu::Metric::kPowerWatts);
  in.gpu_temp_now = value(gpu::Metric::kGpuTemperatureCelsius);
  if (forecaster_.gpu().has_temperature()) {
    const Forecast f = forecaster_.gpu().forecast(horizon);
    in.gpu_temp_forecast = f.temperature_celsius;
    in.gpu_forecast_error = f.error_celsius;
  }
  if (forecaster_.memory().has_temperature())
    in.memory_temp_forecast = forecaster_.memory().forecast(horizon).temperature_celsius;
  if (info_.memory_total_bytes)
    in.seconds_to_oom = memory_.seconds_to_full(static_cast<double>(*info_.memory_total_bytes));
  input_ = in;
  return escalator_.tick(in);
}

}  // namespace gpudoc::guard
