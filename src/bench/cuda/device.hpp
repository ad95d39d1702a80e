// gpudoc::bench::cuda device — which GPU a benchmark runs on, read through the CUDA runtime.
// Plain C++: no CUDA header is included, so any translation unit may use it. Without CUDA
// (GPUDOC_HAVE_CUDA off) every call returns a kNotSupported "built without CUDA" error.
//
//   auto n = cuda::device_count();            // Result<int>; 0 or an error: no GPU
//   auto info = cuda::device_info(0);         // name, UUID, driver and runtime versions
#pragma once

#include <cstddef>
#include <string>

#include "core/result.hpp"

namespace gpudoc::bench::cuda {

// True when the CUDA kernels were compiled into this binary.
[[nodiscard]] bool built_with_cuda() noexcept;

struct DeviceInfo {
  int index = 0;
  std::string name;             // "NVIDIA H200"
  std::string uuid;             // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
  int compute_major = 0;
  int compute_minor = 0;
  int sm_count = 0;
  std::size_t l2_bytes = 0;
  std::size_t memory_bytes = 0;
  int driver_version = 0;       // cudaDriverGetVersion: 13000 = CUDA 13.0
  int runtime_version = 0;      // cudaRuntimeGetVersion
};

// Number of CUDA devices visible (CUDA_VISIBLE_DEVICES applies). Errors: kNotSupported without
// CUDA; kEnvironment when the driver is missing or reports no device (the message names the call).
[[nodiscard]] core::Result<int> device_count();

// Properties of `device`. Errors as device_count(), kUsage for an index out of range.
[[nodiscard]] core::Result<DeviceInfo> device_info(int device);

}  // namespace gpudoc::bench::cuda
