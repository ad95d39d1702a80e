// gpudoc::gpu::open_nvml_backend — the Backend that reads real NVIDIA GPUs through NVML.
//
// libnvidia-ml.so.1 is loaded with dlopen when the backend opens (no link-time dependency), so a
// gpudoc binary runs on machines without a driver and only this call fails there. Each metric is
// probed once per GPU on first use; what answers NOT_SUPPORTED is never polled again. Buffered
// sensors (the 200 ms utilization buffer, per-process utilization) are drained incrementally by
// timestamp, so each driver sample is returned exactly once.
//
//   auto backend = gpu::open_nvml_backend();
//   if (!backend) return backend.error();            // kEnvironment: no driver / no library
//   for (int g = 0; g < *(*backend)->device_count(); ++g) {
//     auto fast = (*backend)->read(g, gpu::MetricGroup::kFast);   // power, clocks, temperature...
//   }
//
// No NVML type appears here: tests pass a function table through the opaque NvmlApi pointer.
#pragma once

#include <memory>
#include <string>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "gpu/backend.hpp"

namespace gpudoc::gpu {

namespace nvml {
struct NvmlApi;  // gpu/nvml/nvml_api.hpp, private to the backend and its tests
}

struct NvmlBackendOptions {
  // Where to load NVML from; empty: "libnvidia-ml.so.1" through the loader's search path.
  std::string library_path;
  // Time source for read timestamps, GPM spacing and the "newer than open" cut of buffered
  // samples. Null: a SystemClock owned by the backend. Must outlive the backend.
  core::Clock* clock = nullptr;
  // Tests: use this function table instead of loading a library (library_path is then ignored).
  // A null entry is a missing symbol. Must outlive the backend.
  const nvml::NvmlApi* api = nullptr;
};

// Loads NVML, initializes it and takes a handle to every GPU. Zero GPUs is not an error
// (device_count() == 0).
// Errors: kEnvironment when the library is missing or lacks required functions (the message says
// what is missing and that replaying traces still works), or when nvmlInit fails (driver not
// loaded, no permission, driver/library version mismatch: NVML's reason is in the message).
// Thread-safety of the returned backend: as Backend documents — calls for different GPUs may run
// concurrently, wait_events() may run concurrently with read(). The destructor calls nvmlShutdown.
[[nodiscard]] core::Result<std::unique_ptr<Backend>> open_nvml_backend(const NvmlBackendOptions& options = {});

}  // namespace gpudoc::gpu
