// The entry points the slice library replaces: one list (an X-macro) from which the exported
// hooks' table, the real functions' table and cuGetProcAddress's matching are all expanded, so
// they can never drift. Internal to libgpudoc_slice.so.
//
//   X(symbol exported by libcuda, the name cuGetProcAddress is asked for, the first CUDA version
//     (1000 * major + 10 * minor) that gets this variant, 1 when it is the per-thread-stream one)
#pragma once

#define GPUDOC_SLICE_HOOKS(X)                                          \
  X(cuInit, "cuInit", 2000, 0)                                         \
  X(cuMemAlloc, "cuMemAlloc", 2000, 0)                                 \
  X(cuMemAlloc_v2, "cuMemAlloc", 3020, 0)                              \
  X(cuMemAllocPitch, "cuMemAllocPitch", 2000, 0)                       \
  X(cuMemAllocPitch_v2, "cuMemAllocPitch", 3020, 0)                    \
  X(cuMemAllocManaged, "cuMemAllocManaged", 6000, 0)                   \
  X(cuMemAllocAsync, "cuMemAllocAsync", 11020, 0)                      \
  X(cuMemAllocAsync_ptsz, "cuMemAllocAsync", 11020, 1)                 \
  X(cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", 11020, 0)      \
  X(cuMemAllocFromPoolAsync_ptsz, "cuMemAllocFromPoolAsync", 11020, 1) \
  X(cuMemCreate, "cuMemCreate", 10020, 0)                              \
  X(cuMemRelease, "cuMemRelease", 10020, 0)                            \
  X(cuMemFree, "cuMemFree", 2000, 0)                                   \
  X(cuMemFree_v2, "cuMemFree", 3020, 0)                                \
  X(cuMemFreeAsync, "cuMemFreeAsync", 11020, 0)                        \
  X(cuMemFreeAsync_ptsz, "cuMemFreeAsync", 11020, 1)                   \
  X(cuMemGetInfo, "cuMemGetInfo", 2000, 0)                             \
  X(cuMemGetInfo_v2, "cuMemGetInfo", 3020, 0)                          \
  X(cuDeviceTotalMem, "cuDeviceTotalMem", 2000, 0)                     \
  X(cuDeviceTotalMem_v2, "cuDeviceTotalMem", 3020, 0)                  \
  X(cuLaunchKernel, "cuLaunchKernel", 4000, 0)                         \
  X(cuLaunchKernel_ptsz, "cuLaunchKernel", 7000, 1)                    \
  X(cuLaunchKernelEx, "cuLaunchKernelEx", 11060, 0)                    \
  X(cuLaunchKernelEx_ptsz, "cuLaunchKernelEx", 11060, 1)               \
  X(cuGraphLaunch, "cuGraphLaunch", 10000, 0)                          \
  X(cuGraphLaunch_ptsz, "cuGraphLaunch", 10000, 1)                     \
  X(cuMemcpyHtoD, "cuMemcpyHtoD", 2000, 0)                             \
  X(cuMemcpyHtoD_v2, "cuMemcpyHtoD", 3020, 0)                          \
  X(cuMemcpyHtoD_v2_ptds, "cuMemcpyHtoD", 7000, 1)                     \
  X(cuMemcpyDtoH, "cuMemcpyDtoH", 2000, 0)                             \
  X(cuMemcpyDtoH_v2, "cuMemcpyDtoH", 3020, 0)                          \
  X(cuMemcpyDtoH_v2_ptds, "cuMemcpyDtoH", 7000, 1)                     \
  X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync", 2000, 0)                   \
  X(cuMemcpyHtoDAsync_v2, "cuMemcpyHtoDAsync", 3020, 0)                \
  X(cuMemcpyHtoDAsync_v2_ptsz, "cuMemcpyHtoDAsync", 7000, 1)           \
  X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync", 2000, 0)                   \
  X(cuMemcpyDtoHAsync_v2, "cuMemcpyDtoHAsync", 3020, 0)                \
  X(cuMemcpyDtoHAsync_v2_ptsz, "cuMemcpyDtoHAsync", 7000, 1)           \
  X(cuMemcpy, "cuMemcpy", 4000, 0)                                     \
  X(cuMemcpy_ptds, "cuMemcpy", 7000, 1)                                \
  X(cuMemcpyAsync, "cuMemcpyAsync", 4000, 0)                           \
  X(cuMemcpyAsync_ptsz, "cuMemcpyAsync", 7000, 1)                      \
  X(cuGetProcAddress, "cuGetProcAddress", 11030, 0)                    \
  X(cuGetProcAddress_v2, "cuGetProcAddress", 12000, 0)

namespace gpudoc::slice::inject {

enum class Hook : int {
#define GPUDOC_SLICE_ENUM(sym, base, version, per_thread) sym,
  GPUDOC_SLICE_HOOKS(GPUDOC_SLICE_ENUM)
#undef GPUDOC_SLICE_ENUM
      kCount
};

struct HookEntry {
  const char* symbol;
  const char* base;
  int first_version;
  bool per_thread;
  void* hook;  // our exported function
};

// kHooks[static_cast<int>(Hook::x)] describes x.
extern const HookEntry kHooks[static_cast<int>(Hook::kCount)];

// The entry of `symbol` (an exported name, e.g. "cuMemAlloc_v2"); -1 when it is not intercepted.
int hook_by_symbol(const char* symbol);
// The hook to hand out for cuGetProcAddress(base, version, flags) that returned `driver_fn`:
// the variant whose real function is `driver_fn`, else the variant that version and flags select
// (the driver may hand out internal addresses); -1 when `base` is not intercepted.
int hook_for_proc_address(const char* base, const void* driver_fn, int version, unsigned long long flags);

}  // namespace gpudoc::slice::inject
