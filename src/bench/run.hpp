// gpudoc::bench run — one benchmark run as `gpudoc bench` makes it, and as a hardware baseline
// (`gpudoc baseline --bench`) stores it: the selection and mode (a Plan), CUDA's view of the
// machine, and an observer that samples the benchmarked GPU's clocks, power, temperature and
// clock-event (throttle) reasons through the injected gpu::Backend while the benchmarks run. Every
// caller gets the same Report, so stored figures carry the same machine context as printed ones.
//
//   auto plan = bench::make_plan({.only = {"hbm", "launch"}, .mode = bench::Mode::kQuick});
//   if (!plan) return plan.error();                       // kUsage: unknown key, bad device
//   bench::Report rep = bench::run(*plan, [&] { return bench::Observer{backend, clock, why_not}; }, progress);
//   int code = bench::exit_code(rep);
//
// The observer source is called only when a CUDA GPU can run benchmarks, so a machine without one
// never opens the backend. Not thread-safe (CUDA device state).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "bench/engine.hpp"
#include "core/clock.hpp"
#include "core/number_input.hpp"
#include "core/result.hpp"
#include "gpu/backend.hpp"
#include "telemetry/backend_source.hpp"

namespace gpudoc::bench {

struct PlanRequest {
  std::vector<std::string> only;  // keys or groups ("hbm", "launch.latency"); empty: every benchmark
  Mode mode = Mode::kDefault;
  int device = 0;  // CUDA device index (CUDA_VISIBLE_DEVICES applies)
};
// What --device accepts (bench, baseline record --bench): a CUDA device index.
inline constexpr core::NumberRange kDeviceRange{.min = 0, .max = 1023, .whole = true};

struct Plan {
  std::vector<const Benchmark*> selected;  // registry order
  RunOptions options;
  int device = 0;
};

// Checks the request against the registry and CUDA's device count. Errors: kUsage for a negative
// device, a device past the last CUDA device, or an unknown key (the registry's message).
[[nodiscard]] core::Result<Plan> make_plan(const PlanRequest& request);

// The GPU backend the run is observed through: null with the reason when there is none.
struct Observer {
  gpu::Backend* backend = nullptr;
  core::Clock* clock = nullptr;  // timestamps the samples; the system clock when null
  std::string why_not;           // set when backend is null: it becomes the context's machine_reason
};
using ObserverSource = std::function<Observer()>;
// The observer of `gpudoc bench`: the CUDA benchmarks run on a real GPU whatever the backend; the
// clocks and throttle reasons beside them are read through `source`, the backend chosen for the run,
// opened only when asked (a machine without a CUDA GPU never opens it). Without one, why_not is "no
// GPU telemetry: " and the source's reason. `source` must outlive the run.
[[nodiscard]] ObserverSource observe_through(telemetry::BackendSource& source);

// A saved `gpudoc bench --json` output, read whole for `bench --from`: a few hundred KiB (a --full
// run on one H200, tests/data/bench_h200_full.json: 250 KiB), refused past 32 MiB. Errors:
// core::read_file's, kBadInput naming the file and "a saved bench run" past the limit.
[[nodiscard]] core::Result<std::string> read_saved_run(const std::string& path);

// Probes CUDA, asks `observe` for the backend (only when a CUDA GPU exists), samples the benchmarked
// GPU's fast metric group (every 100 ms) through it while the plan runs, and attaches the machine
// facts (Context::machine, or machine_reason) and the conditions seen to the report. `progress` may
// be empty.
[[nodiscard]] Report run(const Plan& plan, const ObserverSource& observe, const Progress& progress);

}  // namespace gpudoc::bench
