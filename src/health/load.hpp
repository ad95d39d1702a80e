// gpudoc::health load — what the GPUs do under gpudoc's own short load: an HBM copy runs on every
// checked GPU (one thread each) while the GPU backend is read every 100 ms (fast and slow groups:
// SM clock, clock-event reasons, temperatures, power, PCIe link), so clocks and the PCIe link are
// judged under work, not at idle. Without a load (--no-load, no CUDA, a replay or fake backend) the
// same readings are taken at idle for a short while and the checks say so.
//
//   std::vector<health::GpuInput> gpus = ...;          // gpu index and facts filled in
//   health::LoadOptions opt{.seconds = 5};
//   health::run_load(backend, clock, opt, health::hbm_copy_load(clock), gpus);
//   // gpus[k].load: samples, ran, why_not, warmup_s; gpus[k].lost when a GPU went away
//
// The load is injected (LoadFn): tests run a scripted one against the fake backend.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "gpu/backend.hpp"
#include "health/health.hpp"

namespace gpudoc::health {

struct LoadOptions {
  double seconds = 5.0;  // how long the load runs (at least 1.5 s)
  std::string why_not;   // not empty: no load runs, idle readings for 0.3 s, and this is why
};

inline constexpr double kMinLoadSeconds = 1.5;
inline constexpr double kIdleSeconds = 0.3;

// Loads GPU `gpu` (the backend's index) until `deadline` on the load's clock, setting `started`
// once the first round of work finished. Returns the first error when the load could not run at
// all, ok once it ran. Called on a thread of its own per GPU.
using LoadFn = std::function<core::Status(int gpu, core::MonoTime deadline, std::atomic<bool>& started)>;

// The HBM copy kernel (bench/cuda, 1 GiB buffers, ~0.1-0.3 s a round on an H200) on CUDA device
// `gpu`. CUDA's numbering must be NVML's: it sets CUDA_DEVICE_ORDER=PCI_BUS_ID unless already set,
// and the caller runs no load when CUDA_VISIBLE_DEVICES is set. Without CUDA every call fails with
// the reason ("built without CUDA").
[[nodiscard]] LoadFn hbm_copy_load(core::Clock& clock);

// Why no load may run, or "" when it may: --no-load was given (`asked_not_to`); the GPUs are not
// this machine's (`not_this_machine` names the backend, "replay" or "fake"; empty for real GPUs);
// or CUDA_VISIBLE_DEVICES is set, so CUDA's and NVML's GPU numbers may differ. In that order.
[[nodiscard]] std::string why_no_load(bool asked_not_to, const std::string& not_this_machine);

// Runs `load` on every GPU of `gpus` that is not lost (unless options.why_not) and samples them all
// beside it until the load's time is up; fills each GpuInput's load (samples, ran, why_not,
// warmup_s) and `lost` when the backend reported the GPU lost. Returns the seconds the load (or the
// idle readings) lasted.
double run_load(gpu::Backend& backend, core::Clock& clock, const LoadOptions& options, const LoadFn& load,
                std::vector<GpuInput>& gpus);

// One reading of the fast and slow groups of `gpu`, `t_s` seconds into the load. Errors: kGpuLost
// only; any other failed group leaves its fields absent.
[[nodiscard]] core::Result<LoadSample> read_load_sample(gpu::Backend& backend, int gpu, double t_s);

}  // namespace gpudoc::health
