// The CUPTI functions the injection library calls, in one list: the loader resolves exactly these
// from libcupti (dlopen at run time; the library is never linked against CUPTI), and nothing else
// of CUPTI is called. Types come from CUPTI's own headers, included here only (never from a public
// header of gpudoc).
#pragma once

#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <cupti_result.h>
#include <cupti_runtime_cbid.h>
#include <cupti_version.h>

// X(required, name, return type, parameters)
#define GPUDOC_CUPTI_FUNCTIONS(X)                                                            \
  X(true, cuptiGetVersion, CUptiResult, (uint32_t*))                                         \
  X(true, cuptiGetResultString, CUptiResult, (CUptiResult, const char**))                    \
  X(true, cuptiSubscribe, CUptiResult, (CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*)) \
  X(true, cuptiActivityEnable, CUptiResult, (CUpti_ActivityKind))                            \
  X(true, cuptiActivityRegisterCallbacks, CUptiResult,                                       \
    (CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc))                   \
  X(true, cuptiActivityGetNextRecord, CUptiResult, (uint8_t*, size_t, CUpti_Activity**))     \
  X(true, cuptiActivityGetNumDroppedRecords, CUptiResult, (CUcontext, uint32_t, size_t*))    \
  X(true, cuptiActivityFlushAll, CUptiResult, (uint32_t))                                    \
  X(true, cuptiGetCallbackName, CUptiResult, (CUpti_CallbackDomain, uint32_t, const char**)) \
  X(true, cuptiGetTimestamp, CUptiResult, (uint64_t*))                                       \
  X(false, cuptiActivityFlushPeriod, CUptiResult, (uint32_t))                                \
  X(true, cuptiActivityEnableRuntimeApi, CUptiResult, (CUpti_CallbackId, uint8_t))           \
  X(true, cuptiActivityEnableDriverApi, CUptiResult, (CUpti_CallbackId, uint8_t))            \
  X(false, cuptiActivityDisable, CUptiResult, (CUpti_ActivityKind))

namespace gpudoc::profile::inject {

struct CuptiApi {
#define GPUDOC_CUPTI_MEMBER(req, name, ret, params) ret(*name) params = nullptr;
  GPUDOC_CUPTI_FUNCTIONS(GPUDOC_CUPTI_MEMBER)
#undef GPUDOC_CUPTI_MEMBER
};

}  // namespace gpudoc::profile::inject
