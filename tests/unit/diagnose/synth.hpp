// Synthetic traces for the diagnosis tests: metrics as functions of time at their native periods.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>

#include "telemetry/trace.hpp"

namespace gpudoc::diagnose::testing {

inline telemetry::Trace make_trace(int ngpu) {
  telemetry::Trace t;
  for (int g = 0; g < ngpu; ++g) {
    gpu::DeviceInfo d;
    d.index = g;
    d.name = "NVIDIA H200";
    d.memory_total_bytes = 150754820096ULL;
    d.sm_clock_max_mhz = 1980;
    d.power_limit_default_watts = 700;
    t.header.gpus.push_back(d);
  }
  t.gpus.resize(static_cast<std::size_t>(ngpu));
  return t;
}

// Fills metric m of GPU g from t0 to t1 every period_s with f(t).
inline void fill(telemetry::Trace& tr, int g, gpu::Metric m, double t0, double t1, double period_s,
                 const std::function<double(double)>& f) {
  auto& s = tr.gpus[static_cast<std::size_t>(g)].metric(m);
  for (double t = t0; t < t1; t += period_s) {
    s.t.push_back(t);
    s.v.push_back(f(t));
  }
  tr.duration_s = std::max(tr.duration_s, t1);
}

inline std::function<double(double)> constant(double v) {
  return [v](double) { return v; };
}

// A square wave: `high` for duty*period at the start of each period, else `low`.
inline std::function<double(double)> square(double period, double duty, double high, double low) {
  return [=](double t) { return std::fmod(t, period) < duty * period ? high : low; };
}

// A GPU with util/SM/tensor/DRAM/power following these functions at native rates.
struct Shape {
  std::function<double(double)> util = constant(0), sm = constant(0), tensor = constant(0), dram = constant(0),
                                power = constant(80), mutil = constant(0);
  bool gpm = true;
};

inline void fill_gpu(telemetry::Trace& tr, int g, double t0, double t1, const Shape& s) {
  using gpu::Metric;
  fill(tr, g, Metric::kGpuUtilizationPercent, t0, t1, 0.2, s.util);
  fill(tr, g, Metric::kMemoryUtilizationPercent, t0, t1, 0.2, s.mutil);
  fill(tr, g, Metric::kPowerWatts, t0, t1, 0.1, s.power);
  if (s.gpm) {
    fill(tr, g, Metric::kGpmSmActivityPercent, t0, t1, 0.2, s.sm);
    fill(tr, g, Metric::kGpmTensorActivityPercent, t0, t1, 0.2, s.tensor);
    fill(tr, g, Metric::kGpmDramActivityPercent, t0, t1, 0.2, s.dram);
  }
}

}  // namespace gpudoc::diagnose::testing
