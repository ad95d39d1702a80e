// What every file of hooks in libgpudoc_slice.so starts with: the attribute that exports a hook
// under the driver's own name, and the short names the hooks are written with. Internal to the
// library.
#pragma once

#include "slice/inject/driver_api.hpp"
#include "slice/inject/hook_table.hpp"
#include "slice/inject/runtime.hpp"

#define GPUDOC_SLICE_EXPORT extern "C" __attribute__((visibility("default")))

namespace cu = gpudoc::slice::cu;
namespace inject = gpudoc::slice::inject;
using inject::Hook;
