// gpudoc::health node — `gpudoc health` as one call: gathers every input of the checks through the
// GPU backend and the host (each GPU's DeviceInfo and HealthFacts, what it did under a short load,
// XIDs seen through the backend's events and in the kernel log, versions, host settings), runs all
// the checks, and says what it found. The backend, the host and the load are injected, so the whole
// node check runs against the fake backend and host fixtures in tests.
//
//   health::SystemHostReader host;
//   health::NodeOptions opt{.gpus = {0, 1}, .load = {.seconds = 5}};
//   auto node = health::check_node(backend, clock, host, opt, health::hbm_copy_load(clock));
//   if (!node) return node.error();                          // kUsage: --gpus names a missing GPU
//   bool failed = health::any_failed(node->results);          // exit 1
//   nlohmann::json j = health::to_json(*node);
//
// Nothing here changes a setting.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "gpu/backend.hpp"
#include "health/health.hpp"
#include "health/host.hpp"
#include "health/load.hpp"

namespace gpudoc::health {

struct NodeOptions {
  std::vector<int> gpus;  // backend indices to check; empty: all
  LoadOptions load;
  bool with_torch = true;  // read torch's versions through python3 (seconds: beside the load)
};

struct NodeReport {
  gpu::SystemInfo system;
  int gpu_count = 0;           // GPUs the backend has (checked or not)
  std::vector<GpuInput> gpus;  // the checked ones, in --gpus order
  std::vector<CheckResult> results;
  double load_seconds = 0;  // how long the load (or the idle readings) lasted
  double wall_seconds = 0;
};

// Errors: kUsage for a GPU in options.gpus the backend does not have; the backend's when it cannot
// count its GPUs. A GPU lost during the check yields its gpu_lost result, not an error.
[[nodiscard]] core::Result<NodeReport> check_node(gpu::Backend& backend, core::Clock& clock, HostReader& host,
                                                  const NodeOptions& options, const LoadFn& load);

// The checks that need no GPU (versions as far as the host tells them, host settings): what
// `gpudoc health` still says on a machine without one.
[[nodiscard]] std::vector<CheckResult> check_host_only(HostReader& host);

// {"status", "gpudoc_version", "wall_seconds", "driver_version", "cuda_driver_version",
//  "gpus": [{gpu, name, uuid, pci_bus_id, load_ran, load_why_not, samples}], "checks": [...]}
[[nodiscard]] nlohmann::json to_json(const NodeReport& node);

}  // namespace gpudoc::health
