// Internal to the .cu files that use several GPUs at once (p2p.cu, nccl.cu): device memory that
// remembers its GPU and is freed there, whatever the current device is at destruction.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "bench/cuda/check.cuh"

namespace gpudoc::bench::cuda {

struct GpuBuffer {
  int device = -1;
  void* ptr = nullptr;
  GpuBuffer() = default;
  GpuBuffer(const GpuBuffer&) = delete;
  GpuBuffer& operator=(const GpuBuffer&) = delete;
  GpuBuffer(GpuBuffer&& o) noexcept : device(o.device), ptr(o.ptr) { o.ptr = nullptr; }
  GpuBuffer& operator=(GpuBuffer&&) = delete;
  ~GpuBuffer() {
    if (ptr != nullptr) {
      (void)cudaSetDevice(device);
      (void)cudaFree(ptr);
    }
  }
};

// cudaMalloc of `bytes` on `device` (which becomes the current device).
inline core::Status allocate(GpuBuffer& b, int device, std::size_t bytes) {
  GPUDOC_CUDA_TRY(cudaSetDevice(device));
  GPUDOC_CUDA_TRY(cudaMalloc(&b.ptr, bytes));
  b.device = device;
  return core::ok_status();
}

}  // namespace gpudoc::bench::cuda
