// CUDA runtime queries behind cuda/device.hpp.
#include <cstdio>

#include "bench/cuda/check.cuh"
#include "bench/cuda/device.hpp"

namespace gpudoc::bench::cuda {

bool built_with_cuda() noexcept { return true; }

core::Result<int> device_count() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    auto err = cuda_error("cudaGetDeviceCount", e);
    return core::Error(core::ErrorKind::kEnvironment, err.message());
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
  std::snprintf(uuid, sizeof uuid, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
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
