// CUDA runtime queries behind cuda/device.hpp.
#include <cstdio>

#include "bench/cuda/check.cuh"
#include "bench/cuda/device.hpp"
#include "core/dynamic_library.hpp"

namespace gpudoc::bench::cuda {
namespace {

DeviceCountFailure failure_of(cudaError_t e) {
  switch (e) {
    case cudaErrorInsufficientDriver: return DeviceCountFailure::kInsufficientDriver;
    case cudaErrorNoDevice: return DeviceCountFailure::kNoDevice;
    default: return DeviceCountFailure::kOther;
  }
}

// Asked only after a failure: whether the driver's library is there, and both versions.
DriverFacts driver_facts() {
  DriverFacts f;
  auto lib = core::open_library({"the NVIDIA driver's CUDA library", {kLibcudaName}, "", ""});
  f.libcuda_loaded = lib.ok();
  if (!lib) f.libcuda_error = lib.error().message();
  if (cudaDriverGetVersion(&f.driver_version) != cudaSuccess) f.driver_version = 0;
  if (cudaRuntimeGetVersion(&f.runtime_version) != cudaSuccess) f.runtime_version = 0;
  (void)cudaGetLastError();
  return f;
}

}  // namespace

bool built_with_cuda() noexcept { return true; }

core::Result<int> device_count() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return explain_device_count_failure(failure_of(e), driver_facts(), cuda_error("cudaGetDeviceCount", e).message());
  }
  return n;
}

core::Result<DeviceInfo> device_info(int device) {
  auto n = device_count();
  if (!n) return n.error();
  if (device < 0 || device >= *n)
    return core::Error(core::ErrorKind::kUsage,
                       "device " + std::to_string(device) + " does not exist (" + std::to_string(*n) + " visible)");
  cudaDeviceProp p{};
  GPUDOC_CUDA_TRY(cudaGetDeviceProperties(&p, device));
  DeviceInfo d;
  d.index = device;
  d.name = p.name;
  char uuid[64];
  const auto* b = reinterpret_cast<const unsigned char*>(p.uuid.bytes);
  std::snprintf(uuid, sizeof uuid, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  d.uuid = uuid;
  d.compute_major = p.major;
  d.compute_minor = p.minor;
  d.sm_count = p.multiProcessorCount;
  d.l2_bytes = static_cast<std::size_t>(p.l2CacheSize);
  d.memory_bytes = p.totalGlobalMem;
  GPUDOC_CUDA_TRY(cudaDriverGetVersion(&d.driver_version));
  GPUDOC_CUDA_TRY(cudaRuntimeGetVersion(&d.runtime_version));
  return d;
}

}  // namespace gpudoc::bench::cuda
