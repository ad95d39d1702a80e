// Internal to the .cu files: turns a CUDA return code into a core::Error naming the call.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "core/result.hpp"

namespace gpudoc::bench::cuda {

// The one conversion of CUDA errors: "cudaMalloc: out of memory (cudaErrorMemoryAllocation)".
// No device or driver is an environment problem (exit 3); anything else is reported as internal.
inline core::Error cuda_error(const char* call, cudaError_t e) {
  core::ErrorKind kind = core::ErrorKind::kInternal;
  switch (e) {
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInvalidDevice:
    case cudaErrorDevicesUnavailable:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice: kind = core::ErrorKind::kEnvironment; break;
    case cudaErrorMemoryAllocation: kind = core::ErrorKind::kEnvironment; break;
    default: break;
  }
  return core::Error(kind, std::string(call) + ": " + cudaGetErrorString(e) + " (" + cudaGetErrorName(e) + ")");
}

}  // namespace gpudoc::bench::cuda

// Evaluates a CUDA call; on failure returns its core::Error from the enclosing function.
#define GPUDOC_CUDA_TRY(call)                                          \
  do {                                                                 \
    const cudaError_t gpudoc_cuda_e_ = (call);                         \
    if (gpudoc_cuda_e_ != cudaSuccess) {                               \
      (void)cudaGetLastError();                                        \
      return ::gpudoc::bench::cuda::cuda_error(#call, gpudoc_cuda_e_); \
    }                                                                  \
  } while (0)
