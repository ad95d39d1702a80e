// A stand-in libcupti for the profiler's injection library in CI (no GPU): the 14 functions
// libgpudoc_profile.so resolves, answering success (cuptiSubscribe refuses with
// GPUDOC_FAKE_CUPTI_HELD=1), and two of its own: gpudoc_fake_cupti_emit_kernels(n), which hands the
// registered buffer callbacks n kernel records the way CUPTI does — a buffer requested, filled, and
// handed back when full; a partly filled one only when cuptiActivityFlushAll is called (CUPTI's
// periodic flush returns only full buffers) — and gpudoc_fake_cupti_enabled(kind), what was enabled.
// Records are CUpti_ActivityKernel10 back to back; cuptiActivityGetNextRecord walks them.
#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <mutex>

namespace {

CUpti_BuffersCallbackRequestFunc g_requested = nullptr;
CUpti_BuffersCallbackCompleteFunc g_completed = nullptr;
std::uint64_t g_clock = 1'000'000;
std::atomic<bool> g_enabled[64] = {};  // activity kinds enabled (the sampling thread toggles them)
// Whether each API call is recorded, by callback id. As CUPTI's header says, enabling or disabling the
// RUNTIME (DRIVER) kind sets every runtime (driver) call; cuptiActivityEnableRuntimeApi then sets one.
std::atomic<bool> g_runtime_on[CUPTI_RUNTIME_TRACE_CBID_SIZE] = {};
std::atomic<bool> g_driver_on[CUPTI_DRIVER_TRACE_CBID_SIZE] = {};
std::atomic<int> g_forced_flushes{0};
// The buffer being filled: handed back when full, or partly filled by cuptiActivityFlushAll.
std::mutex g_mu;
uint8_t* g_buffer = nullptr;
size_t g_size = 0, g_used = 0;

// Hands the buffer being filled back to the library (g_mu held).
void complete_locked() {
  if (g_buffer == nullptr) return;
  g_completed(nullptr, 0, g_buffer, g_size, g_used);
  g_buffer = nullptr;
  g_size = g_used = 0;
}
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
void set_all(CUpti_ActivityKind kind, bool on) {
  if (kind == CUPTI_ACTIVITY_KIND_RUNTIME)
    for (auto& c : g_runtime_on) c = on;
  if (kind == CUPTI_ACTIVITY_KIND_DRIVER)
    for (auto& c : g_driver_on) c = on;
}
CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
  if (static_cast<unsigned>(kind) < 64) g_enabled[kind] = true;
  set_all(kind, true);
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) {
  if (static_cast<unsigned>(kind) < 64) g_enabled[kind] = false;
  set_all(kind, false);
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable) {
  if (cbid == 0 || cbid >= CUPTI_RUNTIME_TRACE_CBID_SIZE) return CUPTI_ERROR_INVALID_PARAMETER;
  g_runtime_on[cbid] = enable != 0;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable) {
  if (cbid == 0 || cbid >= CUPTI_DRIVER_TRACE_CBID_SIZE) return CUPTI_ERROR_INVALID_PARAMETER;
  g_driver_on[cbid] = enable != 0;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityFlushPeriod(uint32_t) { return CUPTI_SUCCESS; }
CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag) {
  if ((flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0) ++g_forced_flushes;
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_completed != nullptr) complete_locked();  // every record here is complete: both flushes return it
  return CUPTI_SUCCESS;
}
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

// Whether activity kind `kind` is enabled now; -1: how many runtime API calls are recorded now, -2:
// driver API calls; -3: forced flushes so far.
__attribute__((visibility("default"))) int gpudoc_fake_cupti_enabled(int kind) {
  auto recorded = [](const auto& on) {
    int n = 0;
    for (std::size_t i = 1; i < std::size(on); ++i) n += on[i] ? 1 : 0;
    return n;
  };
  if (kind == -1) return recorded(g_runtime_on);
  if (kind == -2) return recorded(g_driver_on);
  if (kind == -3) return g_forced_flushes;
  return kind >= 0 && kind < 64 && g_enabled[kind] ? 1 : 0;
}

// Writes `n` kernel records (1 µs each, back to back) into CUPTI's buffers: each buffer goes back to
// the library when full, the last one stays until a flush. Returns how many were written (0 before
// any callback was registered; fewer when the library's budget gives no buffer: CUPTI would drop them).
__attribute__((visibility("default"))) int gpudoc_fake_cupti_emit_kernels(int n) {
  if (g_requested == nullptr || g_completed == nullptr) return 0;
  std::lock_guard<std::mutex> lock(g_mu);
  int done = 0;
  while (done < n) {
    if (g_buffer == nullptr) {
      size_t max_records = 0;
      g_requested(&g_buffer, &g_size, &max_records);
      g_used = 0;
      if (g_buffer == nullptr) break;
    }
    if (g_used + sizeof(CUpti_ActivityKernel10) > g_size) {
      complete_locked();
      continue;
    }
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
    std::memcpy(g_buffer + g_used, &k, sizeof k);
    g_used += sizeof k;
    ++done;
  }
  return done;
}

}  // extern "C"
