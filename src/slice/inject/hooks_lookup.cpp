// How a job finds the driver's functions, intercepted: launches (passed through, or held back by
// the compute cap), cuGetProcAddress (v1 and _v2: the CUDA runtime resolves every entry point
// this way, per CUDA version and per-thread-stream flag), and dlsym (a runtime or framework that
// dlopens libcuda.so.1 and looks a name up in it would otherwise reach the driver directly).
#include <dlfcn.h>

#include <cstring>

#include "slice/inject/hook_export.hpp"

namespace {

template <class Fn, class... Args>
cu::Result launch(Hook hook, Args... args) {
  const auto fn = inject::real<Fn>(hook);
  if (fn == nullptr) return cu::kErrorNotFound;
  inject::before_launch();
  return fn(args...);
}

void* wrap(const char* symbol, void* driver_fn, int version, unsigned long long flags) {
  if (symbol == nullptr || driver_fn == nullptr) return driver_fn;
  const int index = inject::hook_for_proc_address(symbol, driver_fn, version, flags);
  if (index < 0) return driver_fn;
  inject::note_real_function(index, driver_fn);
  return inject::kHooks[index].hook;
}

}  // namespace

GPUDOC_SLICE_EXPORT cu::Result cuLaunchKernel(cu::Function f, unsigned int gx, unsigned int gy, unsigned int gz,
                                              unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
                                              cu::Stream stream, void** params, void** extra) {
  return launch<cu::cuLaunchKernel_t>(Hook::cuLaunchKernel, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra);
}
GPUDOC_SLICE_EXPORT cu::Result cuLaunchKernel_ptsz(cu::Function f, unsigned int gx, unsigned int gy, unsigned int gz,
                                                   unsigned int bx, unsigned int by, unsigned int bz,
                                                   unsigned int shared, cu::Stream stream, void** params,
                                                   void** extra) {
  return launch<cu::cuLaunchKernel_t>(Hook::cuLaunchKernel_ptsz, f, gx, gy, gz, bx, by, bz, shared, stream, params,
                                      extra);
}
GPUDOC_SLICE_EXPORT cu::Result cuLaunchKernelEx(const cu::LaunchConfig* config, cu::Function f, void** params,
                                                void** extra) {
  return launch<cu::cuLaunchKernelEx_t>(Hook::cuLaunchKernelEx, config, f, params, extra);
}
GPUDOC_SLICE_EXPORT cu::Result cuLaunchKernelEx_ptsz(const cu::LaunchConfig* config, cu::Function f, void** params,
                                                     void** extra) {
  return launch<cu::cuLaunchKernelEx_t>(Hook::cuLaunchKernelEx_ptsz, config, f, params, extra);
}
GPUDOC_SLICE_EXPORT cu::Result cuGraphLaunch(cu::GraphExec exec, cu::Stream stream) {
  return launch<cu::cuGraphLaunch_t>(Hook::cuGraphLaunch, exec, stream);
}
GPUDOC_SLICE_EXPORT cu::Result cuGraphLaunch_ptsz(cu::GraphExec exec, cu::Stream stream) {
  return launch<cu::cuGraphLaunch_t>(Hook::cuGraphLaunch_ptsz, exec, stream);
}

GPUDOC_SLICE_EXPORT cu::Result cuGetProcAddress(const char* symbol, void** pfn, int version, unsigned long long flags) {
  const auto fn = inject::real<cu::cuGetProcAddress_t>(Hook::cuGetProcAddress);
  if (fn == nullptr) return cu::kErrorNotFound;
  const cu::Result r = fn(symbol, pfn, version, flags);
  if (r == cu::kSuccess && pfn != nullptr) *pfn = wrap(symbol, *pfn, version, flags);
  return r;
}

GPUDOC_SLICE_EXPORT cu::Result cuGetProcAddress_v2(const char* symbol, void** pfn, int version,
                                                   unsigned long long flags, int* status) {
  const auto fn = inject::real<cu::cuGetProcAddress_v2_t>(Hook::cuGetProcAddress_v2);
  if (fn == nullptr) return cu::kErrorNotFound;
  const cu::Result r = fn(symbol, pfn, version, flags, status);
  if (r == cu::kSuccess && pfn != nullptr && (status == nullptr || *status == cu::kProcAddressSuccess))
    *pfn = wrap(symbol, *pfn, version, flags);
  return r;
}

// dlsym(handle, name) for a name this library intercepts hands out the hook whenever the driver
// (or whatever `handle` names) has that name. RTLD_NEXT is forwarded as a tail call so that glibc
// still sees the caller's return address and searches after the caller, not after this library
// (this file is built with optimisation for that reason).
GPUDOC_SLICE_EXPORT void* dlsym(void* handle, const char* symbol) {
  const inject::DlsymFn real = inject::real_dlsym();
  if (real == nullptr) return nullptr;
  if (handle == RTLD_NEXT || symbol[0] != 'c' || symbol[1] != 'u') return real(handle, symbol);
  const int index = inject::hook_by_symbol(symbol);
  if (index < 0) return real(handle, symbol);
  void* found = real(handle, symbol);
  if (found == nullptr) return nullptr;
  inject::note_real_function(index, found);
  return inject::kHooks[index].hook;
}
