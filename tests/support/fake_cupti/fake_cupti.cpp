// A stand-in libcupti for the profiler's injection library in CI (no GPU): the 14 functions
// libgpudoc_profile.so resolves, answering success (cuptiSubscribe refuses with
// GPUDOC_FAKE_CUPTI_HELD=1), and two of its own: gpudoc_fake_cupti_emit_kernels(n), which hands the
// registered buffer callbacks n kernel records the way CUPTI does (a buffer requested, filled,
// completed on the caller's thread), and gpudoc_fake_cupti_enabled(kind), what was enabled. Records are
// CUpti_ActivityKernel10 back to back; cuptiActivityGetNextRecord walks them.
#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace {

CUpti_BuffersCallbackRequestFunc g_requested = nullptr;
CUpti_BuffersCallbackCompleteFunc g_completed = nullptr;
std::uint64_t g_clock = 1'000'000;
std::atomic<bool> g_enabled[64] = {};  // activity kinds enabled (the sampling thread toggles them)
std::atomic<int> g_runtime_calls{0};   // runtime API callback ids enabled
std::atomic<int> g_driver_calls{0};    // driver API callback ids enabled
const char kName[] = "_Z11fake_kernelPfS_S_i_a_name_as_long_as_a_real_one_from_a_template_library";

}  // namespace

extern "C" {

CUptiResult CUPTIAPI cuptiGetVersion(uint32_t* version) {
  *version = 999;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult, const char** str) {
  *str = "fake CUPTI error";
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t* timestamp) {
  *timestamp = g_clock;
  return CUPTI_SUCCESS;
}
// GPUDOC_FAKE_CUPTI_HELD=1: another client already subscribed, as torch.profiler or Nsight would have.
CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc, void*) {
  const char* held = std::getenv("GPUDOC_FAKE_CUPTI_HELD");
  if (held != nullptr && held[0] == '1') return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  *subscriber = nullptr;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char** name) {
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API || cbid != 1) return CUPTI_ERROR_INVALID_PARAMETER;
  *name = "cudaLaunchKernel_v7000";
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
  if (static_cast<unsigned>(kind) < 64) g_enabled[kind] = true;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) {
  if (static_cast<unsigned>(kind) < 64) g_enabled[kind] = false;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityEnableRuntimeApi(CUpti_CallbackId, uint8_t enable) {
  g_runtime_calls += enable != 0 ? 1 : -1;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityEnableDriverApi(CUpti_CallbackId, uint8_t enable) {
  g_driver_calls += enable != 0 ? 1 : -1;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityFlushPeriod(uint32_t) { return CUPTI_SUCCESS; }
CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t) { return CUPTI_SUCCESS; }
CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                                    CUpti_BuffersCallbackCompleteFunc completed) {
  g_requested = requested;
  g_completed = completed;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  *dropped = 0;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  uint8_t* next = *record == nullptr ? buffer : reinterpret_cast<uint8_t*>(*record) + sizeof(CUpti_ActivityKernel10);
  if (next + sizeof(CUpti_ActivityKernel10) > buffer + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(next);
  return CUPTI_SUCCESS;
}

// Whether activity kind `kind` is enabled now; -1: the number of runtime API calls enabled, -2: driver.
__attribute__((visibility("default"))) int gpudoc_fake_cupti_enabled(int kind) {
  if (kind == -1) return g_runtime_calls;
  if (kind == -2) return g_driver_calls;
  return kind >= 0 && kind < 64 && g_enabled[kind] ? 1 : 0;
}

// Hands `n` kernel records (1 µs each, back to back) to the registered callbacks, in as many buffers
// as they take. Returns how many were handed over (0 before any callback was registered).
__attribute__((visibility("default"))) int gpudoc_fake_cupti_emit_kernels(int n) {
  if (g_requested == nullptr || g_completed == nullptr) return 0;
  int done = 0;
  while (done < n) {
    uint8_t* buffer = nullptr;
    size_t size = 0, max_records = 0;
    g_requested(&buffer, &size, &max_records);
    if (buffer == nullptr) break;  // the library's budget is spent: CUPTI would drop (and count) them
    size_t used = 0;
    while (done < n && used + sizeof(CUpti_ActivityKernel10) <= size) {
      CUpti_ActivityKernel10 k;
      std::memset(&k, 0, sizeof k);
      k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
      k.start = g_clock;
      k.end = g_clock + 1000;
      g_clock += 1500;
      k.gridX = k.gridY = k.gridZ = 1;
      k.blockX = 128, k.blockY = k.blockZ = 1;
      k.streamId = 7;
      k.correlationId = static_cast<uint32_t>(done + 1);
      k.name = kName;
      std::memcpy(buffer + used, &k, sizeof k);
      used += sizeof k;
      ++done;
    }
    g_completed(nullptr, 0, buffer, size, used);
  }
  return done;
}

}  // extern "C"
