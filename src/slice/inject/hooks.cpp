// The exported hooks: the driver entry points a job's calls reach instead of libcuda's, whether
// bound at link time, looked up with dlsym, or handed out by cuGetProcAddress. Each one returns
// the driver's own result code, or CUDA_ERROR_OUT_OF_MEMORY when an allocation would take the
// slice over its memory cap.
#include <dlfcn.h>

#include <cstring>

#include "slice/inject/hook_export.hpp"

using inject::Kind;

namespace {

// Charges `bytes`, runs `call` (the driver's allocation), and records the new pointer or handle;
// the charge is given back when the driver fails.
template <class Call, class Key>
cu::Result allocate(Kind kind, std::uint64_t bytes, Call&& call, const Key* key) {
  if (!inject::reserve(bytes)) return cu::kErrorOutOfMemory;
  const cu::Result r = call();
  if (r != cu::kSuccess || !inject::track(kind, static_cast<std::uint64_t>(*key), bytes)) inject::release(bytes);
  return r;
}

// Forgets the allocation, runs `call` (the driver's free), and gives its bytes back; when the
// driver refuses, the allocation is remembered again.
template <class Call>
cu::Result deallocate(Kind kind, std::uint64_t key, Call&& call) {
  const auto bytes = inject::untrack(kind, key);
  const cu::Result r = call();
  if (bytes) {
    if (r == cu::kSuccess)
      inject::release(*bytes);
    else if (!inject::track(kind, key, *bytes))
      inject::release(*bytes);
  }
  return r;
}

template <class Fn, class... Args>
cu::Result forward(Hook hook, Args... args) {
  const auto fn = inject::real<Fn>(hook);
  return fn == nullptr ? cu::kErrorNotFound : fn(args...);
}

template <class Size>
void clamp_info(Size* free_bytes, Size* total_bytes) {
  const std::uint64_t cap = inject::memory_cap();
  if (cap == 0) return;
  const std::uint64_t used = inject::slice_used();
  const std::uint64_t left = cap > used ? cap - used : 0;
  if (total_bytes != nullptr && *total_bytes > cap) *total_bytes = static_cast<Size>(cap);
  if (free_bytes != nullptr && *free_bytes > left) *free_bytes = static_cast<Size>(left);
}

}  // namespace

GPUDOC_SLICE_EXPORT cu::Result cuInit(unsigned int flags) {
  const cu::Result r = forward<cu::cuInit_t>(Hook::cuInit, flags);
  if (r == cu::kSuccess) inject::register_self();
  return r;
}

GPUDOC_SLICE_EXPORT cu::Result cuMemAlloc_v2(cu::DevicePtr* dptr, std::size_t bytes) {
  const auto fn = inject::real<cu::cuMemAlloc_v2_t>(Hook::cuMemAlloc_v2);
  if (fn == nullptr || dptr == nullptr) return fn == nullptr ? cu::kErrorNotFound : fn(dptr, bytes);
  return allocate(
      Kind::kPointer, bytes, [&] { return fn(dptr, bytes); }, dptr);
}

GPUDOC_SLICE_EXPORT cu::Result cuMemAlloc(cu::DevicePtrV1* dptr, unsigned int bytes) {
  const auto fn = inject::real<cu::cuMemAlloc_t>(Hook::cuMemAlloc);
  if (fn == nullptr || dptr == nullptr) return fn == nullptr ? cu::kErrorNotFound : fn(dptr, bytes);
  std::uint64_t key = 0;
  return allocate(
      Kind::kPointer, bytes,
      [&] {
        const cu::Result r = fn(dptr, bytes);
        key = *dptr;
        return r;
      },
      &key);
}

GPUDOC_SLICE_EXPORT cu::Result cuMemAllocManaged(cu::DevicePtr* dptr, std::size_t bytes, unsigned int flags) {
  const auto fn = inject::real<cu::cuMemAllocManaged_t>(Hook::cuMemAllocManaged);
  if (fn == nullptr || dptr == nullptr) return fn == nullptr ? cu::kErrorNotFound : fn(dptr, bytes, flags);
  return allocate(
      Kind::kPointer, bytes, [&] { return fn(dptr, bytes, flags); }, dptr);
}

namespace {

cu::Result alloc_async(Hook hook, cu::DevicePtr* dptr, std::size_t bytes, cu::Stream stream) {
  const auto fn = inject::real<cu::cuMemAllocAsync_t>(hook);
  if (fn == nullptr || dptr == nullptr) return fn == nullptr ? cu::kErrorNotFound : fn(dptr, bytes, stream);
  return allocate(
      Kind::kPointer, bytes, [&] { return fn(dptr, bytes, stream); }, dptr);
}

cu::Result alloc_from_pool(Hook hook, cu::DevicePtr* dptr, std::size_t bytes, cu::MemoryPool pool, cu::Stream stream) {
  const auto fn = inject::real<cu::cuMemAllocFromPoolAsync_t>(hook);
  if (fn == nullptr || dptr == nullptr) return fn == nullptr ? cu::kErrorNotFound : fn(dptr, bytes, pool, stream);
  return allocate(
      Kind::kPointer, bytes, [&] { return fn(dptr, bytes, pool, stream); }, dptr);
}

cu::Result free_async(Hook hook, cu::DevicePtr dptr, cu::Stream stream) {
  const auto fn = inject::real<cu::cuMemFreeAsync_t>(hook);
  if (fn == nullptr) return cu::kErrorNotFound;
  // Given back when the free is queued: the stream frees it before any later work on it runs.
  return deallocate(Kind::kPointer, dptr, [&] { return fn(dptr, stream); });
}

// cuMemAllocPitch's size is known only once the driver chose the pitch: charged afterwards, and
// the allocation undone when it takes the slice over its cap.
template <class Ptr, class Size, class Fn, class FreeFn>
cu::Result alloc_pitch(Fn fn, FreeFn free_fn, Ptr* dptr, Size* pitch, Size width, Size height, unsigned int elem) {
  if (fn == nullptr) return cu::kErrorNotFound;
  if (inject::memory_cap() > 0 && static_cast<std::uint64_t>(width) * height > inject::memory_cap())
    return cu::kErrorOutOfMemory;
  const cu::Result r = fn(dptr, pitch, width, height, elem);
  if (r != cu::kSuccess || dptr == nullptr || pitch == nullptr) return r;
  const std::uint64_t bytes = static_cast<std::uint64_t>(*pitch) * height;
  if (!inject::reserve(bytes)) {
    if (free_fn != nullptr) (void)free_fn(*dptr);
    return cu::kErrorOutOfMemory;
  }
  if (!inject::track(Kind::kPointer, *dptr, bytes)) inject::release(bytes);
  return r;
}

}  // namespace

GPUDOC_SLICE_EXPORT cu::Result cuMemAllocAsync(cu::DevicePtr* dptr, std::size_t bytes, cu::Stream stream) {
  return alloc_async(Hook::cuMemAllocAsync, dptr, bytes, stream);
}
GPUDOC_SLICE_EXPORT cu::Result cuMemAllocAsync_ptsz(cu::DevicePtr* dptr, std::size_t bytes, cu::Stream stream) {
  return alloc_async(Hook::cuMemAllocAsync_ptsz, dptr, bytes, stream);
}
GPUDOC_SLICE_EXPORT cu::Result cuMemAllocFromPoolAsync(cu::DevicePtr* dptr, std::size_t bytes, cu::MemoryPool pool,
                                                       cu::Stream stream) {
  return alloc_from_pool(Hook::cuMemAllocFromPoolAsync, dptr, bytes, pool, stream);
}
GPUDOC_SLICE_EXPORT cu::Result cuMemAllocFromPoolAsync_ptsz(cu::DevicePtr* dptr, std::size_t bytes, cu::MemoryPool pool,
                                                            cu::Stream stream) {
  return alloc_from_pool(Hook::cuMemAllocFromPoolAsync_ptsz, dptr, bytes, pool, stream);
}
GPUDOC_SLICE_EXPORT cu::Result cuMemFreeAsync(cu::DevicePtr dptr, cu::Stream stream) {
  return free_async(Hook::cuMemFreeAsync, dptr, stream);
}
GPUDOC_SLICE_EXPORT cu::Result cuMemFreeAsync_ptsz(cu::DevicePtr dptr, cu::Stream stream) {
  return free_async(Hook::cuMemFreeAsync_ptsz, dptr, stream);
}

GPUDOC_SLICE_EXPORT cu::Result cuMemAllocPitch_v2(cu::DevicePtr* dptr, std::size_t* pitch, std::size_t width,
                                                  std::size_t height, unsigned int elem) {
  return alloc_pitch(inject::real<cu::cuMemAllocPitch_v2_t>(Hook::cuMemAllocPitch_v2),
                     inject::real<cu::cuMemFree_v2_t>(Hook::cuMemFree_v2), dptr, pitch, width, height, elem);
}
GPUDOC_SLICE_EXPORT cu::Result cuMemAllocPitch(cu::DevicePtrV1* dptr, unsigned int* pitch, unsigned int width,
                                               unsigned int height, unsigned int elem) {
  return alloc_pitch(inject::real<cu::cuMemAllocPitch_t>(Hook::cuMemAllocPitch),
                     inject::real<cu::cuMemFree_t>(Hook::cuMemFree), dptr, pitch, width, height, elem);
}

GPUDOC_SLICE_EXPORT cu::Result cuMemFree_v2(cu::DevicePtr dptr) {
  const auto fn = inject::real<cu::cuMemFree_v2_t>(Hook::cuMemFree_v2);
  if (fn == nullptr) return cu::kErrorNotFound;
  return deallocate(Kind::kPointer, dptr, [&] { return fn(dptr); });
}
GPUDOC_SLICE_EXPORT cu::Result cuMemFree(cu::DevicePtrV1 dptr) {
  const auto fn = inject::real<cu::cuMemFree_t>(Hook::cuMemFree);
  if (fn == nullptr) return cu::kErrorNotFound;
  return deallocate(Kind::kPointer, dptr, [&] { return fn(dptr); });
}

GPUDOC_SLICE_EXPORT cu::Result cuMemCreate(cu::MemHandle* handle, std::size_t bytes,
                                           const cu::MemAllocationPropHead* prop, unsigned long long flags) {
  const auto fn = inject::real<cu::cuMemCreate_t>(Hook::cuMemCreate);
  if (fn == nullptr || handle == nullptr || prop == nullptr || prop->location.type != cu::kMemLocationTypeDevice)
    return fn == nullptr ? cu::kErrorNotFound : fn(handle, bytes, prop, flags);  // host memory is not capped
  return allocate(
      Kind::kHandle, bytes, [&] { return fn(handle, bytes, prop, flags); }, handle);
}
GPUDOC_SLICE_EXPORT cu::Result cuMemRelease(cu::MemHandle handle) {
  const auto fn = inject::real<cu::cuMemRelease_t>(Hook::cuMemRelease);
  if (fn == nullptr) return cu::kErrorNotFound;
  return deallocate(Kind::kHandle, handle, [&] { return fn(handle); });
}

GPUDOC_SLICE_EXPORT cu::Result cuMemGetInfo_v2(std::size_t* free_bytes, std::size_t* total_bytes) {
  const cu::Result r = forward<cu::cuMemGetInfo_v2_t>(Hook::cuMemGetInfo_v2, free_bytes, total_bytes);
  if (r == cu::kSuccess) clamp_info(free_bytes, total_bytes);
  return r;
}
GPUDOC_SLICE_EXPORT cu::Result cuMemGetInfo(unsigned int* free_bytes, unsigned int* total_bytes) {
  const cu::Result r = forward<cu::cuMemGetInfo_t>(Hook::cuMemGetInfo, free_bytes, total_bytes);
  if (r == cu::kSuccess) clamp_info(free_bytes, total_bytes);
  return r;
}
GPUDOC_SLICE_EXPORT cu::Result cuDeviceTotalMem_v2(std::size_t* bytes, cu::Device device) {
  const cu::Result r = forward<cu::cuDeviceTotalMem_v2_t>(Hook::cuDeviceTotalMem_v2, bytes, device);
  if (r == cu::kSuccess) clamp_info<std::size_t>(nullptr, bytes);
  return r;
}
GPUDOC_SLICE_EXPORT cu::Result cuDeviceTotalMem(unsigned int* bytes, cu::Device device) {
  const cu::Result r = forward<cu::cuDeviceTotalMem_t>(Hook::cuDeviceTotalMem, bytes, device);
  if (r == cu::kSuccess) clamp_info<unsigned int>(nullptr, bytes);
  return r;
}
