// Internal to the .cu files: owners of device memory, events and streams, freed on every path.
#pragma once

#include <cuda_runtime.h>

namespace gpudoc::bench::cuda {

struct DeviceBuffer {
  void* ptr = nullptr;
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr != nullptr) (void)cudaFree(ptr);
  }
};

struct Event {
  cudaEvent_t e = nullptr;
  Event() = default;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event() {
    if (e != nullptr) (void)cudaEventDestroy(e);
  }
};

struct Stream {
  cudaStream_t s = nullptr;
  Stream() = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() {
    if (s != nullptr) (void)cudaStreamDestroy(s);
  }
};

}  // namespace gpudoc::bench::cuda
