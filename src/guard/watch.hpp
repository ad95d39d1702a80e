// gpudoc::guard watch — one GPU as the guard sees it: the sampler's records in, the forecasts and the
// escalation decision out. Pure: no I/O, no clock (times come with the records and the ticks).
//
//   guard::GpuWatch w(gpu, device_info, policy, {.fatal_xid = is_fatal});
//   for (auto& rec : sampler.drain(...)) w.add(rec);        // samples, process lists, events
//   w.add_health(facts);                                      // ECC / row-remap counters, when read
//   if (auto d = w.tick(now_s)) act(*d, w.input());            // a level change (or a resume) to act on
//
// Times are seconds on the sampler's time base (time_unix_ns / 1e9). The newest readings are kept in
// a telemetry::LiveState, the live state the other live commands keep. The forecast is made at the
// policy's horizon from the newest samples; memory headroom from memory_used over the last 30 s.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gpu/backend.hpp"
#include "guard/escalation.hpp"
#include "guard/forecast.hpp"
#include "guard/policy.hpp"
#include "telemetry/live_state.hpp"
#include "telemetry/sampler.hpp"

namespace gpudoc::guard {

struct WatchOptions {
  // Whether an XID is fatal for the job (the caller's catalog: reset or reboot class). Absent: none.
  std::function<bool(std::uint64_t)> fatal_xid;
  ForecastConfig forecast;
};

class GpuWatch {
 public:
  GpuWatch(int gpu, gpu::DeviceInfo info, Policy policy, WatchOptions options = {});

  // One sampler record of this GPU (records of other GPUs are ignored).
  void add(const telemetry::SamplerRecord& r);
  // The health counters: an uncorrectable ECC count that rises while watched, or a failed row
  // remap, is fatal.
  void add_health(const gpu::HealthFacts& facts);
  // Builds this tick's input from the newest samples and feeds the Escalator.
  [[nodiscard]] std::optional<Decision> tick(double t);

  [[nodiscard]] int gpu() const { return gpu_; }
  [[nodiscard]] const gpu::DeviceInfo& info() const { return info_; }
  [[nodiscard]] const Escalator& escalator() const { return escalator_; }
  [[nodiscard]] const GpuForecaster& forecaster() const { return forecaster_; }
  // The input of the last tick (what a decision was made from).
  [[nodiscard]] const EscalationInput& input() const { return input_; }
  // Time of the newest sample (seconds), the one a decision of this tick rests on.
  [[nodiscard]] std::optional<double> newest_sample_t() const;
  // What made a fatal flag rise, for the log ("XID 79: GPU has fallen off the bus").
  [[nodiscard]] const std::vector<std::string>& fatal_reasons() const { return fatal_reasons_; }

 private:
  int gpu_;
  gpu::DeviceInfo info_;
  WatchOptions options_;
  Escalator escalator_;
  GpuForecaster forecaster_;
  MemoryHeadroom memory_;
  FatalFlags fatal_;
  std::vector<std::string> fatal_reasons_;
  std::optional<std::uint64_t> ecc_uncorrected_at_start_;
  telemetry::LiveState latest_;  // the GPU's newest readings, kept as every live command keeps them
  EscalationInput input_;
};

}  // namespace gpudoc::guard
