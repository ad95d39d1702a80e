#include "fake_nvml.hpp"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string_view>

namespace gpudoc::gpu::nvml::testing {
namespace {

FakeNvml* g_current = nullptr;

// What an unscripted function answers.
template <class R>
R unscripted();
template <>
nvmlReturn_t unscripted<nvmlReturn_t>() {
  return NVML_ERROR_NOT_SUPPORTED;
}
template <>
const char* unscripted<const char*>() {
  return "fake NVML error";
}

// What a per-device call answers once the GPU is lost (all of them return nvmlReturn_t).
template <class R>
R lost();
template <>
nvmlReturn_t lost<nvmlReturn_t>() {
  return NVML_ERROR_GPU_IS_LOST;
}
template <>
const char* lost<const char*>() {
  return nullptr;
}

// A call about one device's state (not the device count or the handle lookup), which a lost GPU
// answers with NVML_ERROR_GPU_IS_LOST.
constexpr bool is_device_call(std::string_view name) {
  return name.substr(0, 10) == "nvmlDevice" && name != "nvmlDeviceGetCount_v2" &&
         name != "nvmlDeviceGetHandleByIndex_v2";
}

// The C-callable trampolines: count the call, then run the script (or the default answer).
#define GPUDOC_NVML_X(need, name, ret, params, args)                         \
  ret fake_##name params {                                                   \
    FakeNvml* f = FakeNvml::current();                                       \
    f->count(#name);                                                         \
    if (is_device_call(#name) && f->lost_on_this_call()) return lost<ret>(); \
    if (!f->name) return unscripted<ret>();                                  \
    return f->name args;                                                     \
  }
GPUDOC_NVML_FUNCTIONS(GPUDOC_NVML_X)
#undef GPUDOC_NVML_X

constexpr std::uintptr_t kHandleBase = 0x1000;

}  // namespace

FakeNvml::FakeNvml(unsigned int device_count) {
  if (g_current != nullptr) throw std::logic_error("one FakeNvml at a time");
  g_current = this;
  nvmlInit_v2 = [] { return NVML_SUCCESS; };
  nvmlShutdown = [] { return NVML_SUCCESS; };
  nvmlErrorString = [](nvmlReturn_t rc) -> const char* {
    switch (rc) {
      case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
      case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
      case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
      case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
      case NVML_ERROR_TIMEOUT: return "Timeout";
      default: return "Unknown Error";
    }
  };
  nvmlDeviceGetCount_v2 = [device_count](unsigned int* n) {
    *n = device_count;
    return NVML_SUCCESS;
  };
  nvmlDeviceGetHandleByIndex_v2 = [device_count](unsigned int i, nvmlDevice_t* h) {
    if (i >= device_count) return NVML_ERROR_INVALID_ARGUMENT;
    *h = handle(i);
    return NVML_SUCCESS;
  };
}

FakeNvml::~FakeNvml() { g_current = nullptr; }

FakeNvml* FakeNvml::current() { return g_current; }

const NvmlApi& FakeNvml::table() {
  table_ = NvmlApi{};
#define GPUDOC_NVML_X(need, name, ret, params, args) \
  if (missing.count(#name) == 0) table_.name = &fake_##name;
  GPUDOC_NVML_FUNCTIONS(GPUDOC_NVML_X)
#undef GPUDOC_NVML_X
  return table_;
}

bool FakeNvml::lost_on_this_call() {
  if (device_calls_left_ < 0) return false;
  if (device_calls_left_ == 0) return true;
  --device_calls_left_;
  return false;
}

int FakeNvml::calls(const std::string& name) const {
  auto it = calls_.find(name);
  return it == calls_.end() ? 0 : it->second;
}

nvmlDevice_t FakeNvml::handle(unsigned int i) {
  // Fake handles are never dereferenced; any distinct non-null value will do.
  nvmlDevice_t h = nullptr;
  const std::uintptr_t v = kHandleBase + i;
  std::memcpy(&h, &v, sizeof(h));
  return h;
}

int FakeNvml::index_of(nvmlDevice_t h) {
  std::uintptr_t v = 0;
  std::memcpy(&v, &h, sizeof(v));
  return static_cast<int>(v - kHandleBase);
}

}  // namespace gpudoc::gpu::nvml::testing
