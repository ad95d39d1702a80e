// The subset of the CUDA driver API that the slice library intercepts, declared here so that
// nothing outside src/slice/inject (and tests/support/fake_cuda) sees cuda.h's types. The
// signatures follow cuda.h of CUDA 13.0; the v1 forms (32-bit sizes) are the ones a program built
// against CUDA < 3.2 still binds to, and cuGetProcAddress hands out when asked for an old version.
//
//   slice::cu::Result r = real.cuMemAlloc_v2(&ptr, bytes);   // 0 is CUDA_SUCCESS
//
// Internal to the interception library and its fake driver: not a public header of gpudoc.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpudoc::slice::cu {

using Result = int;                    // CUresult
using DevicePtr = unsigned long long;  // CUdeviceptr (64-bit)
using DevicePtrV1 = unsigned int;      // CUdeviceptr_v1
using Device = int;                    // CUdevice
using Stream = void*;                  // CUstream
using MemoryPool = void*;              // CUmemoryPool
using Function = void*;                // CUfunction
using GraphExec = void*;               // CUgraphExec
using MemHandle = unsigned long long;  // CUmemGenericAllocationHandle

inline constexpr Result kSuccess = 0;
inline constexpr Result kErrorInvalidValue = 1;
inline constexpr Result kErrorOutOfMemory = 2;
inline constexpr Result kErrorNotInitialized = 3;
inline constexpr Result kErrorNotFound = 500;

// CUdriverProcAddress_flags
inline constexpr unsigned long long kProcAddressPerThreadDefaultStream = 1ULL << 1;
// CUdriverProcAddressQueryResult
inline constexpr int kProcAddressSuccess = 0;

// The leading members of CUmemAllocationProp: enough to tell a device allocation from a host one.
struct MemLocation {
  int type;  // CUmemLocationType: 1 device, 2 host, 3 host NUMA, 4 host NUMA current
  int id;
};
inline constexpr int kMemLocationTypeDevice = 1;
struct MemAllocationPropHead {
  int type;                    // CUmemAllocationType
  int requested_handle_types;  // CUmemAllocationHandleType
  MemLocation location;
};

struct LaunchConfig;  // CUlaunchConfig: passed through untouched

// One typedef per intercepted entry point, named after the exported symbol.
using cuInit_t = Result (*)(unsigned int);
using cuMemAlloc_t = Result (*)(DevicePtrV1*, unsigned int);
using cuMemAlloc_v2_t = Result (*)(DevicePtr*, std::size_t);
using cuMemAllocPitch_t = Result (*)(DevicePtrV1*, unsigned int*, unsigned int, unsigned int, unsigned int);
using cuMemAllocPitch_v2_t = Result (*)(DevicePtr*, std::size_t*, std::size_t, std::size_t, unsigned int);
using cuMemAllocManaged_t = Result (*)(DevicePtr*, std::size_t, unsigned int);
using cuMemAllocAsync_t = Result (*)(DevicePtr*, std::size_t, Stream);
using cuMemAllocFromPoolAsync_t = Result (*)(DevicePtr*, std::size_t, MemoryPool, Stream);
using cuMemCreate_t = Result (*)(MemHandle*, std::size_t, const MemAllocationPropHead*, unsigned long long);
using cuMemRelease_t = Result (*)(MemHandle);
using cuMemFree_t = Result (*)(DevicePtrV1);
using cuMemFree_v2_t = Result (*)(DevicePtr);
using cuMemFreeAsync_t = Result (*)(DevicePtr, Stream);
using cuMemGetInfo_t = Result (*)(unsigned int*, unsigned int*);
using cuMemGetInfo_v2_t = Result (*)(std::size_t*, std::size_t*);
using cuDeviceTotalMem_t = Result (*)(unsigned int*, Device);
using cuDeviceTotalMem_v2_t = Result (*)(std::size_t*, Device);
using cuLaunchKernel_t = Result (*)(Function, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
                                    unsigned int, unsigned int, Stream, void**, void**);
using cuLaunchKernelEx_t = Result (*)(const LaunchConfig*, Function, void**, void**);
using cuGraphLaunch_t = Result (*)(GraphExec, Stream);
// Copies (the copy-rate cap). The direction-explicit ones, then the unified ones, whose direction
// cuPointerGetAttribute tells.
using cuMemcpyHtoD_t = Result (*)(DevicePtrV1, const void*, unsigned int);
using cuMemcpyHtoD_v2_t = Result (*)(DevicePtr, const void*, std::size_t);
using cuMemcpyDtoH_t = Result (*)(void*, DevicePtrV1, unsigned int);
using cuMemcpyDtoH_v2_t = Result (*)(void*, DevicePtr, std::size_t);
using cuMemcpyHtoDAsync_t = Result (*)(DevicePtrV1, const void*, unsigned int, Stream);
using cuMemcpyHtoDAsync_v2_t = Result (*)(DevicePtr, const void*, std::size_t, Stream);
using cuMemcpyDtoHAsync_t = Result (*)(void*, DevicePtrV1, unsigned int, Stream);
using cuMemcpyDtoHAsync_v2_t = Result (*)(void*, DevicePtr, std::size_t, Stream);
using cuMemcpy_t = Result (*)(DevicePtr, DevicePtr, std::size_t);
using cuMemcpyAsync_t = Result (*)(DevicePtr, DevicePtr, std::size_t, Stream);
using cuPointerGetAttribute_t = Result (*)(void*, int, DevicePtr);
inline constexpr int kPointerAttributeMemoryType = 2;  // CU_POINTER_ATTRIBUTE_MEMORY_TYPE
inline constexpr unsigned int kMemoryTypeHost = 1;     // CU_MEMORYTYPE_HOST (pinned or registered)
using cuGetProcAddress_t = Result (*)(const char*, void**, int, unsigned long long);
using cuGetProcAddress_v2_t = Result (*)(const char*, void**, int, unsigned long long, int*);

}  // namespace gpudoc::slice::cu
