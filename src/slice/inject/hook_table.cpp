#include "slice/inject/hook_table.hpp"

#include <cstring>

#include "slice/inject/driver_api.hpp"
#include "slice/inject/runtime.hpp"

// The hooks, declared only to take their addresses (their signatures live in hooks*.cpp).
#define GPUDOC_SLICE_DECLARE(sym, base, version, per_thread) \
  extern "C" __attribute__((visibility("default"))) void sym();
GPUDOC_SLICE_HOOKS(GPUDOC_SLICE_DECLARE)
#undef GPUDOC_SLICE_DECLARE

namespace gpudoc::slice::inject {

const HookEntry kHooks[static_cast<int>(Hook::kCount)] = {
#define GPUDOC_SLICE_ENTRY(sym, base, version, per_thread) \
  {#sym, base, version, per_thread != 0, reinterpret_cast<void*>(&::sym)},
    GPUDOC_SLICE_HOOKS(GPUDOC_SLICE_ENTRY)
#undef GPUDOC_SLICE_ENTRY
};

int hook_by_symbol(const char* symbol) {
  for (int i = 0; i < static_cast<int>(Hook::kCount); ++i)
    if (std::strcmp(kHooks[i].symbol, symbol) == 0) return i;
  return -1;
}

int hook_for_proc_address(const char* base, const void* driver_fn, int version, unsigned long long flags) {
  bool known = false;
  bool has_per_thread = false;
  for (int i = 0; i < static_cast<int>(Hook::kCount); ++i) {
    const HookEntry& e = kHooks[i];
    if (std::strcmp(e.base, base) != 0 && std::strcmp(e.symbol, base) != 0) continue;
    if (e.hook == driver_fn) return i;  // already ours
    if (real_function(static_cast<Hook>(i)) == driver_fn) return i;
    known = true;
    has_per_thread = has_per_thread || e.per_thread;
  }
  if (!known) return -1;
  // The driver handed out an address of its own: pick the variant CUDA's rules select.
  const bool per_thread = has_per_thread && (flags & cu::kProcAddressPerThreadDefaultStream) != 0;
  int best = -1;
  for (int i = 0; i < static_cast<int>(Hook::kCount); ++i) {
    const HookEntry& e = kHooks[i];
    if (std::strcmp(e.base, base) != 0 || e.per_thread != per_thread || e.first_version > version) continue;
    if (best < 0 || e.first_version > kHooks[best].first_version) best = i;
  }
  if (best < 0)
    log_once(Message::kUnknownVariant, "cuGetProcAddress gave a variant the slice does not know; passed through");
  return best;
}

}  // namespace gpudoc::slice::inject
