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
  std::string name;  // "NVIDIA H200"
  std::string uuid;  // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
  int compute_major = 0;
  int compute_minor = 0;
  int sm_count = 0;
  std::size_t l2_bytes = 0;
  std::size_t memory_bytes = 0;
  int driver_version = 0;   // cudaDriverGetVersion: 13000 = CUDA 13.0
  int runtime_version = 0;  // cudaRuntimeGetVersion
};

// Number of CUDA devices visible (CUDA_VISIBLE_DEVICES applies). Errors: kNotSupported without
// CUDA; kEnvironment when the driver is missing, too old, or reports no device, in the words of
// explain_device_count_failure ("no NVIDIA driver is installed (libcuda.so.1 not found)").
[[nodiscard]] core::Result<int> device_count();

// The driver's CUDA library, which the CUDA runtime loads at its first call.
inline constexpr const char* kLibcudaName = "libcuda.so.1";

// How cudaGetDeviceCount failed.
enum class DeviceCountFailure {
  kInsufficientDriver,  // cudaErrorInsufficientDriver: no driver at all, or one older than the runtime
  kNoDevice,            // cudaErrorNoDevice
  kOther,
};

// What was found out about the driver after a failure.
struct DriverFacts {
  bool libcuda_loaded = false;  // kLibcudaName could be opened
  std::string libcuda_error;    // why not, when it could not ("... No such file or directory")
  int driver_version = 0;       // cudaDriverGetVersion: 12080 = CUDA 12.8; 0 without a driver
  int runtime_version = 0;      // cudaRuntimeGetVersion: the CUDA runtime gpudoc was built with
};

// THE explanation of a failed cudaGetDeviceCount, so that "no driver" is not shown as CUDA's
// "CUDA driver version is insufficient for CUDA runtime version" (what the runtime says when it
// finds no libcuda at all). kEnvironment, one of:
//   "no NVIDIA driver is installed (libcuda.so.1 not found)"     no libcuda, whatever CUDA said
//   "the NVIDIA driver's libcuda.so.1 cannot be loaded: <why>"   present but unloadable
//   "the NVIDIA driver is older than gpudoc's CUDA runtime: the driver supports CUDA 12.2, the runtime is
//    CUDA 13.0; install a newer driver (<cuda_message>)"          kInsufficientDriver, driver < runtime
//   "no NVIDIA GPU is visible (<cuda_message>)"                   kNoDevice with a driver
//   <cuda_message>                                                anything else
// `cuda_message` is the conversion of the CUDA error ("cudaGetDeviceCount: ... (cudaError...)").
// Thread-safe (pure).
[[nodiscard]] core::Error explain_device_count_failure(DeviceCountFailure failure, const DriverFacts& facts,
                                                       const std::string& cuda_message);

// "13.0" from a CUDA version code (13000; 12020 -> "12.2"); "none" for 0.
[[nodiscard]] std::string cuda_version_string(int code);

// Properties of `device`. Errors as device_count(), kUsage for an index out of range.
[[nodiscard]] core::Result<DeviceInfo> device_info(int device);

}  // namespace gpudoc::bench::cuda
