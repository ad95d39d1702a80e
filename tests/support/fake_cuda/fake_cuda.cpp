// A stand-in for libcuda.so.1 in CI: the entry points gpudoc's slice library intercepts, plus
// cuInit and device queries, on a pretend GPU whose memory is only counted (nothing is allocated).
// cuGetProcAddress hands out this library's own addresses by CUDA's rules (the _v2 variant from
// CUDA 3.2, _ptsz for the per-thread-stream flag), as the real driver does; linked with
// -Bsymbolic-functions so those are never the preloaded hooks. GPUDOC_FAKE_CUDA_TOTAL_BYTES sets
// the GPU's memory (default 80 GiB). gpudoc_fake_cuda_used_bytes() and
// gpudoc_fake_cuda_launches() and gpudoc_fake_cuda_copied_bytes() let a test see what reached the
// "driver". Copies copy nothing; cuPointerGetAttribute calls this library's allocations device
// memory and anything else not a CUDA pointer (pageable host memory), as the driver does.
#include <pthread.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>

#include "slice/inject/driver_api.hpp"

namespace cu = gpudoc::slice::cu;

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
std::unordered_map<std::uint64_t, std::uint64_t> g_allocations;  // pointer or handle -> bytes
std::uint64_t g_used = 0;
std::uint64_t g_next = 0x10000000ULL;  // low enough for the 32-bit (v1) entry points in tests
std::uint64_t g_launches = 0;
std::uint64_t g_copied = 0;
bool g_initialised = false;

std::uint64_t total_bytes() {
  const char* env = std::getenv("GPUDOC_FAKE_CUDA_TOTAL_BYTES");
  return env != nullptr ? std::strtoull(env, nullptr, 10) : 80ULL << 30;
}

cu::Result fake_alloc(std::uint64_t* out, std::uint64_t bytes) {
  if (!g_initialised) return cu::kErrorNotInitialized;
  if (out == nullptr || bytes == 0) return cu::kErrorInvalidValue;
  pthread_mutex_lock(&g_mutex);
  cu::Result r = cu::kErrorOutOfMemory;
  if (g_used + bytes <= total_bytes()) {
    *out = g_next;
    g_next += (bytes + 0xfffff) & ~0xfffffULL;
    g_allocations[*out] = bytes;
    g_used += bytes;
    r = cu::kSuccess;
  }
  pthread_mutex_unlock(&g_mutex);
  return r;
}

cu::Result fake_free(std::uint64_t key) {
  pthread_mutex_lock(&g_mutex);
  auto it = g_allocations.find(key);
  cu::Result r = cu::kErrorInvalidValue;
  if (it != g_allocations.end()) {
    g_used -= it->second;
    g_allocations.erase(it);
    r = cu::kSuccess;
  }
  pthread_mutex_unlock(&g_mutex);
  return r;
}

template <class Ptr>
cu::Result alloc_into(Ptr* dptr, std::uint64_t bytes) {
  std::uint64_t p = 0;
  const cu::Result r = fake_alloc(&p, bytes);
  if (r == cu::kSuccess) *dptr = static_cast<Ptr>(p);
  return r;
}

}  // namespace

FAKE_EXPORT cu::Result cuInit(unsigned int flags) {
  if (flags != 0) return cu::kErrorInvalidValue;
  g_initialised = true;
  return cu::kSuccess;
}
FAKE_EXPORT cu::Result cuDriverGetVersion(int* version) {
  if (version == nullptr) return cu::kErrorInvalidValue;
  *version = 13000;
  return cu::kSuccess;
}
FAKE_EXPORT cu::Result cuDeviceGetCount(int* count) {
  if (!g_initialised) return cu::kErrorNotInitialized;
  *count = 1;
  return cu::kSuccess;
}
FAKE_EXPORT cu::Result cuDeviceGet(cu::Device* device, int ordinal) {
  if (!g_initialised) return cu::kErrorNotInitialized;
  if (ordinal != 0) return cu::kErrorInvalidValue;
  *device = 0;
  return cu::kSuccess;
}

FAKE_EXPORT cu::Result cuMemAlloc(cu::DevicePtrV1* dptr, unsigned int bytes) { return alloc_into(dptr, bytes); }
FAKE_EXPORT cu::Result cuMemAlloc_v2(cu::DevicePtr* dptr, std::size_t bytes) { return alloc_into(dptr, bytes); }
FAKE_EXPORT cu::Result cuMemAllocManaged(cu::DevicePtr* dptr, std::size_t bytes, unsigned int) {
  return alloc_into(dptr, bytes);
}
FAKE_EXPORT cu::Result cuMemAllocAsync(cu::DevicePtr* dptr, std::size_t bytes, cu::Stream) {
  return alloc_into(dptr, bytes);
}
FAKE_EXPORT cu::Result cuMemAllocAsync_ptsz(cu::DevicePtr* dptr, std::size_t bytes, cu::Stream) {
  return alloc_into(dptr, bytes);
}
FAKE_EXPORT cu::Result cuMemAllocFromPoolAsync(cu::DevicePtr* dptr, std::size_t bytes, cu::MemoryPool, cu::Stream) {
  return alloc_into(dptr, bytes);
}
FAKE_EXPORT cu::Result cuMemAllocFromPoolAsync_ptsz(cu::DevicePtr* dptr, std::size_t bytes, cu::MemoryPool,
                                                    cu::Stream) {
  return alloc_into(dptr, bytes);
}
FAKE_EXPORT cu::Result cuMemAllocPitch_v2(cu::DevicePtr* dptr, std::size_t* pitch, std::size_t width,
                                          std::size_t height, unsigned int) {
  if (pitch == nullptr) return cu::kErrorInvalidValue;
  *pitch = (width + 511) & ~std::size_t{511};
  return alloc_into(dptr, *pitch * height);
}
FAKE_EXPORT cu::Result cuMemAllocPitch(cu::DevicePtrV1* dptr, unsigned int* pitch, unsigned int width,
                                       unsigned int height, unsigned int) {
  if (pitch == nullptr) return cu::kErrorInvalidValue;
  *pitch = (width + 511U) & ~511U;
  return alloc_into(dptr, static_cast<std::uint64_t>(*pitch) * height);
}
FAKE_EXPORT cu::Result cuMemCreate(cu::MemHandle* handle, std::size_t bytes, const cu::MemAllocationPropHead* prop,
                                   unsigned long long) {
  if (prop == nullptr) return cu::kErrorInvalidValue;
  return alloc_into(handle, bytes);
}
FAKE_EXPORT cu::Result cuMemRelease(cu::MemHandle handle) { return fake_free(handle); }
FAKE_EXPORT cu::Result cuMemFree(cu::DevicePtrV1 dptr) { return fake_free(dptr); }
FAKE_EXPORT cu::Result cuMemFree_v2(cu::DevicePtr dptr) { return fake_free(dptr); }
FAKE_EXPORT cu::Result cuMemFreeAsync(cu::DevicePtr dptr, cu::Stream) { return fake_free(dptr); }
FAKE_EXPORT cu::Result cuMemFreeAsync_ptsz(cu::DevicePtr dptr, cu::Stream) { return fake_free(dptr); }

FAKE_EXPORT cu::Result cuMemGetInfo_v2(std::size_t* free_bytes, std::size_t* total) {
  if (!g_initialised) return cu::kErrorNotInitialized;
  pthread_mutex_lock(&g_mutex);
  *total = total_bytes();
  *free_bytes = *total - g_used;
  pthread_mutex_unlock(&g_mutex);
  return cu::kSuccess;
}
FAKE_EXPORT cu::Result cuMemGetInfo(unsigned int* free_bytes, unsigned int* total) {
  std::size_t f = 0, t = 0;
  const cu::Result r = cuMemGetInfo_v2(&f, &t);
  *free_bytes = f > 0xffffffffULL ? 0xffffffffU : static_cast<unsigned int>(f);
  *total = t > 0xffffffffULL ? 0xffffffffU : static_cast<unsigned int>(t);
  return r;
}
FAKE_EXPORT cu::Result cuDeviceTotalMem_v2(std::size_t* bytes, cu::Device) {
  *bytes = total_bytes();
  return cu::kSuccess;
}
FAKE_EXPORT cu::Result cuDeviceTotalMem(unsigned int* bytes, cu::Device) {
  const std::uint64_t t = total_bytes();
  *bytes = t > 0xffffffffULL ? 0xffffffffU : static_cast<unsigned int>(t);
  return cu::kSuccess;
}

namespace {
cu::Result count_launch() {
  __atomic_add_fetch(&g_launches, 1, __ATOMIC_RELAXED);
  return cu::kSuccess;
}
}  // namespace

FAKE_EXPORT cu::Result cuLaunchKernel(cu::Function, unsigned int, unsigned int, unsigned int, unsigned int,
                                      unsigned int, unsigned int, unsigned int, cu::Stream, void**, void**) {
  return count_launch();
}
FAKE_EXPORT cu::Result cuLaunchKernel_ptsz(cu::Function, unsigned int, unsigned int, unsigned int, unsigned int,
                                           unsigned int, unsigned int, unsigned int, cu::Stream, void**, void**) {
  return count_launch();
}
FAKE_EXPORT cu::Result cuLaunchKernelEx(const cu::LaunchConfig*, cu::Function, void**, void**) {
  return count_launch();
}
FAKE_EXPORT cu::Result cuLaunchKernelEx_ptsz(const cu::LaunchConfig*, cu::Function, void**, void**) {
  return count_launch();
}
FAKE_EXPORT cu::Result cuGraphLaunch(cu::GraphExec, cu::Stream) { return count_launch(); }
FAKE_EXPORT cu::Result cuGraphLaunch_ptsz(cu::GraphExec, cu::Stream) { return count_launch(); }

namespace {
cu::Result count_copy(std::uint64_t bytes) {
  __atomic_add_fetch(&g_copied, bytes, __ATOMIC_RELAXED);
  return cu::kSuccess;
}
}  // namespace

FAKE_EXPORT cu::Result cuMemcpyHtoD(cu::DevicePtrV1, const void*, unsigned int n) { return count_copy(n); }
FAKE_EXPORT cu::Result cuMemcpyHtoD_v2(cu::DevicePtr, const void*, std::size_t n) { return count_copy(n); }
FAKE_EXPORT cu::Result cuMemcpyHtoD_v2_ptds(cu::DevicePtr, const void*, std::size_t n) { return count_copy(n); }
FAKE_EXPORT cu::Result cuMemcpyDtoH(void*, cu::DevicePtrV1, unsigned int n) { return count_copy(n); }
FAKE_EXPORT cu::Result cuMemcpyDtoH_v2(void*, cu::DevicePtr, std::size_t n) { return count_copy(n); }
FAKE_EXPORT cu::Result cuMemcpyDtoH_v2_ptds(void*, cu::DevicePtr, std::size_t n) { return count_copy(n); }
FAKE_EXPORT cu::Result cuMemcpyHtoDAsync(cu::DevicePtrV1, const void*, unsigned int n, cu::Stream) {
  return count_copy(n);
}
FAKE_EXPORT cu::Result cuMemcpyHtoDAsync_v2(cu::DevicePtr, const void*, std::size_t n, cu::Stream) {
  return count_copy(n);
}
FAKE_EXPORT cu::Result cuMemcpyHtoDAsync_v2_ptsz(cu::DevicePtr, const void*, std::size_t n, cu::Stream) {
  return count_copy(n);
}
FAKE_EXPORT cu::Result cuMemcpyDtoHAsync(void*, cu::DevicePtrV1, unsigned int n, cu::Stream) { return count_copy(n); }
FAKE_EXPORT cu::Result cuMemcpyDtoHAsync_v2(void*, cu::DevicePtr, std::size_t n, cu::Stream) { return count_copy(n); }
FAKE_EXPORT cu::Result cuMemcpyDtoHAsync_v2_ptsz(void*, cu::DevicePtr, std::size_t n, cu::Stream) {
  return count_copy(n);
}
FAKE_EXPORT cu::Result cuMemcpy(cu::DevicePtr, cu::DevicePtr, std::size_t n) { return count_copy(n); }
FAKE_EXPORT cu::Result cuMemcpy_ptds(cu::DevicePtr, cu::DevicePtr, std::size_t n) { return count_copy(n); }
FAKE_EXPORT cu::Result cuMemcpyAsync(cu::DevicePtr, cu::DevicePtr, std::size_t n, cu::Stream) { return count_copy(n); }
FAKE_EXPORT cu::Result cuMemcpyAsync_ptsz(cu::DevicePtr, cu::DevicePtr, std::size_t n, cu::Stream) {
  return count_copy(n);
}
FAKE_EXPORT cu::Result cuPointerGetAttribute(void* data, int attribute, cu::DevicePtr ptr) {
  if (data == nullptr || attribute != cu::kPointerAttributeMemoryType) return cu::kErrorInvalidValue;
  pthread_mutex_lock(&g_mutex);
  const bool device = ptr >= 0x10000000ULL && ptr < g_next;
  pthread_mutex_unlock(&g_mutex);
  if (!device) return cu::kErrorInvalidValue;  // not a CUDA pointer: pageable host memory
  *static_cast<unsigned int*>(data) = 2;       // CU_MEMORYTYPE_DEVICE
  return cu::kSuccess;
}
FAKE_EXPORT std::uint64_t gpudoc_fake_cuda_copied_bytes() { return __atomic_load_n(&g_copied, __ATOMIC_RELAXED); }

FAKE_EXPORT std::uint64_t gpudoc_fake_cuda_used_bytes() {
  pthread_mutex_lock(&g_mutex);
  const std::uint64_t used = g_used;
  pthread_mutex_unlock(&g_mutex);
  return used;
}
FAKE_EXPORT std::uint64_t gpudoc_fake_cuda_launches() { return __atomic_load_n(&g_launches, __ATOMIC_RELAXED); }

FAKE_EXPORT cu::Result cuGetProcAddress_v2(const char* symbol, void** pfn, int version, unsigned long long flags,
                                           int* status);
FAKE_EXPORT cu::Result cuGetProcAddress(const char* symbol, void** pfn, int version, unsigned long long flags);

namespace {

struct Exported {
  const char* name;
  void* fn;
};

#define FAKE_FN(name) \
  { #name, reinterpret_cast < void*>(&name) }
const Exported kExported[] = {
    FAKE_FN(cuInit),
    FAKE_FN(cuDriverGetVersion),
    FAKE_FN(cuDeviceGetCount),
    FAKE_FN(cuDeviceGet),
    FAKE_FN(cuMemAlloc),
    FAKE_FN(cuMemAlloc_v2),
    FAKE_FN(cuMemAllocManaged),
    FAKE_FN(cuMemAllocAsync),
    FAKE_FN(cuMemAllocAsync_ptsz),
    FAKE_FN(cuMemAllocFromPoolAsync),
    FAKE_FN(cuMemAllocFromPoolAsync_ptsz),
    FAKE_FN(cuMemAllocPitch),
    FAKE_FN(cuMemAllocPitch_v2),
    FAKE_FN(cuMemCreate),
    FAKE_FN(cuMemRelease),
    FAKE_FN(cuMemFree),
    FAKE_FN(cuMemFree_v2),
    FAKE_FN(cuMemFreeAsync),
    FAKE_FN(cuMemFreeAsync_ptsz),
    FAKE_FN(cuMemGetInfo),
    FAKE_FN(cuMemGetInfo_v2),
    FAKE_FN(cuDeviceTotalMem),
    FAKE_FN(cuDeviceTotalMem_v2),
    FAKE_FN(cuLaunchKernel),
    FAKE_FN(cuLaunchKernel_ptsz),
    FAKE_FN(cuLaunchKernelEx),
    FAKE_FN(cuLaunchKernelEx_ptsz),
    FAKE_FN(cuGraphLaunch),
    FAKE_FN(cuGraphLaunch_ptsz),
    FAKE_FN(cuMemcpyHtoD),
    FAKE_FN(cuMemcpyHtoD_v2),
    FAKE_FN(cuMemcpyHtoD_v2_ptds),
    FAKE_FN(cuMemcpyDtoH),
    FAKE_FN(cuMemcpyDtoH_v2),
    FAKE_FN(cuMemcpyDtoH_v2_ptds),
    FAKE_FN(cuMemcpyHtoDAsync),
    FAKE_FN(cuMemcpyHtoDAsync_v2),
    FAKE_FN(cuMemcpyHtoDAsync_v2_ptsz),
    FAKE_FN(cuMemcpyDtoHAsync),
    FAKE_FN(cuMemcpyDtoHAsync_v2),
    FAKE_FN(cuMemcpyDtoHAsync_v2_ptsz),
    FAKE_FN(cuMemcpy),
    FAKE_FN(cuMemcpy_ptds),
    FAKE_FN(cuMemcpyAsync),
    FAKE_FN(cuMemcpyAsync_ptsz),
    FAKE_FN(cuPointerGetAttribute),
    FAKE_FN(cuGetProcAddress),
    FAKE_FN(cuGetProcAddress_v2),
};
#undef FAKE_FN

void* find(const std::string& name) {
  for (const Exported& e : kExported)
    if (name == e.name) return e.fn;
  return nullptr;
}

// CUDA's rules: a _v2 variant replaces the plain name from CUDA 3.2 (cuGetProcAddress_v2 from
// 12.0); the per-thread-stream flag selects the _ptsz variant (asynchronous calls) or the _ptds one
// (synchronous calls) where there is one.
void* lookup(const char* symbol, int version, unsigned long long flags) {
  std::string name = symbol;
  const bool proc = name == "cuGetProcAddress";
  if ((proc && version >= 12000) || (!proc && version >= 3020 && find(name + "_v2") != nullptr)) name += "_v2";
  if ((flags & cu::kProcAddressPerThreadDefaultStream) != 0) {
    if (find(name + "_ptsz") != nullptr)
      name += "_ptsz";
    else if (find(name + "_ptds") != nullptr)
      name += "_ptds";
  }
  return find(name);
}

}  // namespace

FAKE_EXPORT cu::Result cuGetProcAddress_v2(const char* symbol, void** pfn, int version, unsigned long long flags,
                                           int* status) {
  if (symbol == nullptr || pfn == nullptr) return cu::kErrorInvalidValue;
  *pfn = lookup(symbol, version, flags);
  if (status != nullptr) *status = *pfn != nullptr ? cu::kProcAddressSuccess : 1;
  return *pfn != nullptr ? cu::kSuccess : cu::kErrorNotFound;
}
FAKE_EXPORT cu::Result cuGetProcAddress(const char* symbol, void** pfn, int version, unsigned long long flags) {
  return cuGetProcAddress_v2(symbol, pfn, version, flags, nullptr);
}
