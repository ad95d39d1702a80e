// gpudoc::core dynamic libraries — the one way gpudoc loads a vendor library at run time
// (NVML, NCCL, cuBLASLt): dlopen with RTLD_NOW | RTLD_LOCAL, and symbols copied into typed
// function pointers. Kept C++17 so the .cu files (nvcc) can include it.
//
//   auto h = core::open_library("libnccl.so.2");     // Result<void*>; the error says why (dlerror)
//   core::resolve_symbol(*h, "ncclGetVersion", api.ncclGetVersion);   // nullptr when absent
//
// Libraries are never closed by these helpers: the caller decides (vendor libraries may leave
// threads or exit handlers behind, so gpudoc keeps them mapped).
#pragma once

#include <cstring>
#include <string>

#include "core/result.hpp"

namespace gpudoc::core {

// Opens `file` (a path, or a soname the dynamic loader searches for). RTLD_LOCAL: the library's
// symbols never satisfy anyone else's lookups (a test fake, another copy). Errors:
// kEnvironment, the message being dlerror()'s text only, for the caller to put in context.
// Thread-safe: loads are serialized so each caller reads its own dlerror().
[[nodiscard]] Result<void*> open_library(const std::string& file);

// The address of `name` in `handle`, or nullptr.
[[nodiscard]] void* find_symbol(void* handle, const char* name);

// Sets `out` (a function pointer) to the symbol `name`, or to nullptr when absent. dlsym returns
// an object pointer; copying its bits avoids the object-to-function pointer cast that ISO C++
// only conditionally supports.
template <class Fn>
void resolve_symbol(void* handle, const char* name, Fn& out) {
  void* sym = find_symbol(handle, name);
  static_assert(sizeof(sym) == sizeof(out), "a function pointer the size of a data pointer");
  std::memcpy(&out, &sym, sizeof(out));
}

}  // namespace gpudoc::core
