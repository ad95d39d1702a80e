// The copy hooks: host<->device copies counted against the slice's copy rate (--pcie) before they
// reach the driver; device-to-device copies and everything without the cap pass straight through.
// Best effort by construction: an asynchronous copy is held back when it is issued, not while it
// runs, so the rate holds on average over a window longer than the gate's burst (50 ms), not
// within one large copy. 2D/3D and peer copies are not counted (docs/slice.md).

#include "slice/inject/hook_export.hpp"

namespace {

// A copy of `bytes` in a known direction: waits at the gate, then calls the driver.
template <class Fn, class... Args>
cu::Result host_copy(Hook hook, std::uint64_t bytes, Args... args) {
  const auto fn = inject::real<Fn>(hook);
  if (fn == nullptr) return cu::kErrorNotFound;
  inject::before_copy(bytes);
  return fn(args...);
}

// A unified copy: counted when exactly one side is host memory, as the driver says.
template <class Fn, class... Args>
cu::Result unified_copy(Hook hook, cu::DevicePtr dst, cu::DevicePtr src, std::size_t bytes, Args... args) {
  const auto fn = inject::real<Fn>(hook);
  if (fn == nullptr) return cu::kErrorNotFound;
  if (inject::copy_cap_on() && inject::is_host_pointer(dst) != inject::is_host_pointer(src)) inject::before_copy(bytes);
  return fn(dst, src, bytes, args...);
}

}  // namespace

GPUDOC_SLICE_EXPORT cu::Result cuMemcpyHtoD(cu::DevicePtrV1 dst, const void* src, unsigned int bytes) {
  return host_copy<cu::cuMemcpyHtoD_t>(Hook::cuMemcpyHtoD, bytes, dst, src, bytes);
}
GPUDOC_SLICE_EXPORT cu::Result cuMemcpyHtoD_v2(cu::DevicePtr dst, const void* src, std::size_t bytes) {
  return host_copy<cu::cuMemcpyHtoD_v2_t>(Hook::cuMemcpyHtoD_v2, bytes, dst, src, bytes);
}
GPUDOC_SLICE_EXPORT cu::Result cuMemcpyHtoD_v2_ptds(cu::DevicePtr dst, const void* src, std::size_t bytes) {
  return host_copy<cu::cuMemcpyHtoD_v2_t>(Hook::cuMemcpyHtoD_v2_ptds, bytes, dst, src, bytes);
}
GPUDOC_SLICE_EXPORT cu::Result cuMemcpyDtoH(void* dst, cu::DevicePtrV1 src, unsigned int bytes) {
  return host_copy<cu::cuMemcpyDtoH_t>(Hook::cuMemcpyDtoH, bytes, dst, src, bytes);
}
GPUDOC_SLICE_EXPORT cu::Result cuMemcpyDtoH_v2(void* dst, cu::DevicePtr src, std::size_t bytes) {
  return host_copy<cu::cuMemcpyDtoH_v2_t>(Hook::cuMemcpyDtoH_v2, bytes, dst, src, bytes);
}
GPUDOC_SLICE_EXPORT cu::Result cuMemcpyDtoH_v2_ptds(void* dst, cu::DevicePtr src, std::size_t bytes) {
  return host_copy<cu::cuMemcpyDtoH_v2_t>(Hook::cuMemcpyDtoH_v2_ptds, bytes, dst, src, bytes);
}
GPUDOC_SLICE_EXPORT cu::Result cuMemcpyHtoDAsync(cu::DevicePtrV1 dst, const void* src, unsigned int bytes,
                                                 cu::Stream stream) {
  return host_copy<cu::cuMemcpyHtoDAsync_t>(Hook::cuMemcpyHtoDAsync, bytes, dst, src, bytes, stream);
}
GPUDOC_SLICE_EXPORT cu::Result cuMemcpyHtoDAsync_v2(cu::DevicePtr dst, const void* src, std::size_t bytes,
                                                    cu::Stream stream) {
  return host_copy<cu::cuMemcpyHtoDAsync_v2_t>(Hook::cuMemcpyHtoDAsync_v2, bytes, dst, src, bytes, stream);
}
GPUDOC_SLICE_EXPORT cu::Result cuMemcpyHtoDAsync_v2_ptsz(cu::DevicePtr dst, const void* src, std::size_t bytes,
                                                         cu::Stream stream) {
  return host_copy<cu::cuMemcpyHtoDAsync_v2_t>(Hook::cuMemcpyHtoDAsync_v2_ptsz, bytes, dst, src, bytes, stream);
}
GPUDOC_SLICE_EXPORT cu::Result cuMemcpyDtoHAsync(void* dst, cu::DevicePtrV1 src, unsigned int bytes,
                                                 cu::Stream stream) {
  return host_copy<cu::cuMemcpyDtoHAsync_t>(Hook::cuMemcpyDtoHAsync, bytes, dst, src, bytes, stream);
}
GPUDOC_SLICE_EXPORT cu::Result cuMemcpyDtoHAsync_v2(void* dst, cu::DevicePtr src, std::size_t bytes,
                                                    cu::Stream stream) {
  return host_copy<cu::cuMemcpyDtoHAsync_v2_t>(Hook::cuMemcpyDtoHAsync_v2, bytes, dst, src, bytes, stream);
}
GPUDOC_SLICE_EXPORT cu::Result cuMemcpyDtoHAsync_v2_ptsz(void* dst, cu::DevicePtr src, std::size_t bytes,
                                                         cu::Stream stream) {
  return host_copy<cu::cuMemcpyDtoHAsync_v2_t>(Hook::cuMemcpyDtoHAsync_v2_ptsz, bytes, dst, src, bytes, stream);
}
GPUDOC_SLICE_EXPORT cu::Result cuMemcpy(cu::DevicePtr dst, cu::DevicePtr src, std::size_t bytes) {
  return unified_copy<cu::cuMemcpy_t>(Hook::cuMemcpy, dst, src, bytes);
}
GPUDOC_SLICE_EXPORT cu::Result cuMemcpy_ptds(cu::DevicePtr dst, cu::DevicePtr src, std::size_t bytes) {
  return unified_copy<cu::cuMemcpy_t>(Hook::cuMemcpy_ptds, dst, src, bytes);
}
GPUDOC_SLICE_EXPORT cu::Result cuMemcpyAsync(cu::DevicePtr dst, cu::DevicePtr src, std::size_t bytes,
                                             cu::Stream stream) {
  return unified_copy<cu::cuMemcpyAsync_t>(Hook::cuMemcpyAsync, dst, src, bytes, stream);
}
GPUDOC_SLICE_EXPORT cu::Result cuMemcpyAsync_ptsz(cu::DevicePtr dst, cu::DevicePtr src, std::size_t bytes,
                                                  cu::Stream stream) {
  return unified_copy<cu::cuMemcpyAsync_t>(Hook::cuMemcpyAsync_ptsz, dst, src, bytes, stream);
}
