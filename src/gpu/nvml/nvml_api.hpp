// gpudoc::gpu::nvml — the subset of NVML that gpudoc uses, declared here instead of including
// nvml.h, and the one list of every NVML function gpudoc calls.
//
// PRIVATE to the NVML backend and its tests: no public header may include this file (the rest of
// gpudoc never sees an NVML type).
//
// Why declare NVML ourselves: the build machines have no nvml.h and we load libnvidia-ml.so.1 with
// dlopen at run time, so the binary starts (and replays traces) where no driver is installed.
// Every type, constant and signature below mirrors NVIDIA's nvml.h exactly; they were checked
// against NVIDIA/DCGM sdk/nvidia/nvml/nvml.h and DCGM's sdk/nvidia/nvml/entry_points.h, then
// compiled against the CUDA 13.0 toolkit's own nvml.h (NVML_API_VERSION 13, driver 580.159) on the
// H200 machine: every prototype in the list below, every struct layout and every constant matched
// (the check expands GPUDOC_NVML_FUNCTIONS against NVIDIA's declarations with static_asserts).
// Names keep NVML's spelling (and C-style plain enums) so each line can be diffed against nvml.h.
// The static_asserts at the end pin the LP64 layouts: a wrong layout corrupts memory inside the
// driver's library, so change nothing here without re-checking nvml.h.
//
// One list, many expansions (DCGM's nvml_entry_points.h is the model):
//
//   #define X(need, name, ret, params, args) ret (*name) params = nullptr;
//   GPUDOC_NVML_FUNCTIONS(X)     // -> the function table NvmlApi below
//   #undef X
//
// The loader (load_nvml_library), the unit-test fake (tests/unit/gpu/nvml/fake_nvml.*) and the table
// are all expanded from GPUDOC_NVML_FUNCTIONS, so they cannot drift apart.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace gpudoc::gpu::nvml {

// ---- Types and constants (nvml.h) -----------------------------------------------------------

// C enums in nvml.h; the fixed underlying type keeps them 4 bytes, as the C ABI has them.
enum nvmlReturn_t : int {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_ALREADY_INITIALIZED = 5,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_INSUFFICIENT_POWER = 8,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_IRQ_ISSUE = 11,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_CORRUPTED_INFOROM = 14,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_RESET_REQUIRED = 16,
  NVML_ERROR_OPERATING_SYSTEM = 17,
  NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
  NVML_ERROR_IN_USE = 19,
  NVML_ERROR_MEMORY = 20,
  NVML_ERROR_NO_DATA = 21,
  NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
  NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
  NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_DEPRECATED = 26,
  NVML_ERROR_NOT_READY = 27,
  NVML_ERROR_GPU_NOT_FOUND = 28,
  NVML_ERROR_INVALID_STATE = 29,
  NVML_ERROR_UNKNOWN = 999,
};

// Opaque handles: pointers to incomplete structs, as in nvml.h.
struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;
struct nvmlEventSet_st;
using nvmlEventSet_t = nvmlEventSet_st*;
struct nvmlGpmSample_st;
using nvmlGpmSample_t = nvmlGpmSample_st*;

enum nvmlSamplingType_t : int {
  NVML_TOTAL_POWER_SAMPLES = 0,
  NVML_GPU_UTILIZATION_SAMPLES = 1,
  NVML_MEMORY_UTILIZATION_SAMPLES = 2,
};

enum nvmlValueType_t : int {
  NVML_VALUE_TYPE_DOUBLE = 0,
  NVML_VALUE_TYPE_UNSIGNED_INT = 1,
  NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
  NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
  NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
  NVML_VALUE_TYPE_SIGNED_INT = 5,
  NVML_VALUE_TYPE_UNSIGNED_SHORT = 6,
};

union nvmlValue_t {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;  // NOLINT(google-runtime-int): mirrors nvml.h
  unsigned long long ullVal;
  signed long long sllVal;
  unsigned short usVal;
};

struct nvmlSample_t {
  unsigned long long timeStamp;  // CPU timestamp, microseconds since the Unix epoch
  nvmlValue_t sampleValue;
};

enum nvmlClockType_t : int {
  NVML_CLOCK_GRAPHICS = 0,
  NVML_CLOCK_SM = 1,
  NVML_CLOCK_MEM = 2,
  NVML_CLOCK_VIDEO = 3,
};

enum nvmlTemperatureSensors_t : int {
  NVML_TEMPERATURE_GPU = 0,
};

// For nvmlDeviceGetTemperatureV, which replaces nvmlDeviceGetTemperature (deprecated in 13.0).
struct nvmlTemperature_v1_t {
  unsigned int version;  // kNvmlTemperatureV1Version
  nvmlTemperatureSensors_t sensorType;
  int temperature;  // degrees C
};
using nvmlTemperature_t = nvmlTemperature_v1_t;
// NVML_STRUCT_VERSION(Temperature, 1): the struct size in the low bits, the version in the top byte.
inline constexpr unsigned int kNvmlTemperatureV1Version =
    static_cast<unsigned int>(sizeof(nvmlTemperature_v1_t)) | (1U << 24U);

enum nvmlTemperatureThresholds_t : int {
  NVML_TEMPERATURE_THRESHOLD_SHUTDOWN = 0,
  NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1,
  NVML_TEMPERATURE_THRESHOLD_MEM_MAX = 2,
  NVML_TEMPERATURE_THRESHOLD_GPU_MAX = 3,
};

struct nvmlMemory_t {  // v1; bytes
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

inline constexpr unsigned int NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE = 32;
inline constexpr unsigned int NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE = 16;

struct nvmlPciInfo_t {
  char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
};

// nvmlProcessInfo_t == nvmlProcessInfo_v2_t in current nvml.h; both _v2 and _v3 of
// nvmlDeviceGetComputeRunningProcesses fill this layout. (The CUDA 12.0 header briefly had an
// extra usedGpuCcProtectedMemory field here; it was a header mistake and was removed again.)
struct nvmlProcessInfo_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;  // bytes, or NVML_VALUE_NOT_AVAILABLE
  unsigned int gpuInstanceId;        // 0xFFFFFFFF when MIG is off
  unsigned int computeInstanceId;    // 0xFFFFFFFF when MIG is off
};

struct nvmlProcessUtilizationSample_t {
  unsigned int pid;
  unsigned long long timeStamp;  // CPU timestamp, microseconds
  unsigned int smUtil;
  unsigned int memUtil;
  unsigned int encUtil;
  unsigned int decUtil;
};

struct nvmlDeviceAttributes_t {
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
  unsigned int gpuInstanceSliceCount;
  unsigned int computeInstanceSliceCount;
  unsigned long long memorySizeMB;
};

// NVML_VALUE_NOT_AVAILABLE is (-1) in nvml.h; in an unsigned long long field it reads as all ones.
inline constexpr unsigned long long NVML_VALUE_NOT_AVAILABLE_ULL = ~0ULL;
inline constexpr unsigned int kNvmlInvalidInstanceId = 0xFFFFFFFFU;
inline constexpr unsigned int NVML_DEVICE_MIG_DISABLE = 0;
inline constexpr unsigned int NVML_DEVICE_MIG_ENABLE = 1;

// Field values.
inline constexpr unsigned int NVML_FI_DEV_MEMORY_TEMP = 82;

struct nvmlFieldValue_t {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;  // CPU timestamp of the value, microseconds since 1970
  long long latencyUsec;
  nvmlValueType_t valueType;
  nvmlReturn_t nvmlReturn;  // per-field status; value is undefined unless NVML_SUCCESS
  nvmlValue_t value;
};

// Events.
inline constexpr unsigned long long nvmlEventTypeXidCriticalError = 0x0000000000000008ULL;

struct nvmlEventData_t {  // the layout nvmlEventSetWait_v2 fills
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;  // the XID for nvmlEventTypeXidCriticalError (999: unknown XID)
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

// GPM (GPU Performance Monitoring, Hopper and newer).
enum nvmlGpmMetricId_t : int {
  NVML_GPM_METRIC_GRAPHICS_UTIL = 1,  // percent of time any compute/graphics context was active
  NVML_GPM_METRIC_SM_UTIL = 2,
  NVML_GPM_METRIC_SM_OCCUPANCY = 3,
  NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5,
  NVML_GPM_METRIC_DRAM_BW_UTIL = 10,
  NVML_GPM_METRIC_PCIE_TX_PER_SEC = 20,          // MiB/s
  NVML_GPM_METRIC_PCIE_RX_PER_SEC = 21,          // MiB/s
  NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC = 60,  // MiB/s
  NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC = 61,  // MiB/s
};

// The length of nvmlGpmMetricsGet_t.metrics. nvml.h sizes it NVML_GPM_METRIC_MAX, which grew from
// release to release (98 in CUDA 12.0, 166 later, 210 in CUDA 13.0) while the struct version
// stayed 1. NVML is only asked for numMetrics entries, but a library built with a larger MAX must
// never be able to write past our struct, so ours is larger than any header so far; more room
// than the library expects is harmless.
inline constexpr unsigned int kGpmMetricSlots = 512;

struct nvmlGpmMetric_t {
  unsigned int metricId;
  nvmlReturn_t nvmlReturn;  // per-metric status; value is only valid when NVML_SUCCESS
  double value;
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;
};

inline constexpr unsigned int NVML_GPM_METRICS_GET_VERSION = 1;

struct nvmlGpmMetricsGet_t {
  unsigned int version;  // NVML_GPM_METRICS_GET_VERSION
  unsigned int numMetrics;
  nvmlGpmSample_t sample1;
  nvmlGpmSample_t sample2;
  nvmlGpmMetric_t metrics[kGpmMetricSlots];
};

inline constexpr unsigned int NVML_GPM_SUPPORT_VERSION = 1;

struct nvmlGpmSupport_t {
  unsigned int version;  // NVML_GPM_SUPPORT_VERSION
  unsigned int isSupportedDevice;
};

// ---- Health facts (nvml.h), read by health_facts() ----
enum nvmlEnableState_t : int {
  NVML_FEATURE_DISABLED = 0,
  NVML_FEATURE_ENABLED = 1,
};

enum nvmlComputeMode_t : int {
  NVML_COMPUTEMODE_DEFAULT = 0,
  NVML_COMPUTEMODE_EXCLUSIVE_THREAD = 1,  // support removed; still a value NVML may name
  NVML_COMPUTEMODE_PROHIBITED = 2,
  NVML_COMPUTEMODE_EXCLUSIVE_PROCESS = 3,
};

enum nvmlMemoryErrorType_t : int {
  NVML_MEMORY_ERROR_TYPE_CORRECTED = 0,
  NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1,
};

enum nvmlEccCounterType_t : int {
  NVML_VOLATILE_ECC = 0,   // since the last driver load
  NVML_AGGREGATE_ECC = 1,  // over the board's life (InfoROM)
};

enum nvmlPageRetirementCause_t : int {
  NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0,
  NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1,
};

enum nvmlNvLinkErrorCounter_t : int {
  NVML_NVLINK_ERROR_DL_REPLAY = 0,
  NVML_NVLINK_ERROR_DL_RECOVERY = 1,
  NVML_NVLINK_ERROR_DL_CRC_FLIT = 2,
  NVML_NVLINK_ERROR_DL_CRC_DATA = 3,
};

// What nvmlDeviceGetNvLinkVersion writes: an enumeration, not the version number (6 is NVLink
// 4.0, Hopper's). nvlink_version_name() below is the one place that turns it into a version.
enum nvmlNvlinkVersion_t : int {
  NVML_NVLINK_VERSION_INVALID = 0,
  NVML_NVLINK_VERSION_1_0 = 1,
  NVML_NVLINK_VERSION_2_0 = 2,
  NVML_NVLINK_VERSION_2_2 = 3,
  NVML_NVLINK_VERSION_3_0 = 4,
  NVML_NVLINK_VERSION_3_1 = 5,
  NVML_NVLINK_VERSION_4_0 = 6,
  NVML_NVLINK_VERSION_5_0 = 7,
};

// 18 since CUDA 11 (6 and 12 in older headers); links past the device's own answer NOT_SUPPORTED
// or INVALID_ARGUMENT.
inline constexpr unsigned int NVML_NVLINK_MAX_LINKS = 18;

// Layouts as nvml.h has them on x86-64 / aarch64 Linux (LP64).
static_assert(sizeof(nvmlValue_t) == 8);
static_assert(sizeof(nvmlSample_t) == 16);
static_assert(sizeof(nvmlMemory_t) == 24);
static_assert(sizeof(nvmlPciInfo_t) == 68 && offsetof(nvmlPciInfo_t, domain) == 16 &&
              offsetof(nvmlPciInfo_t, busId) == 36);
static_assert(sizeof(nvmlProcessInfo_t) == 24 && offsetof(nvmlProcessInfo_t, usedGpuMemory) == 8 &&
              offsetof(nvmlProcessInfo_t, gpuInstanceId) == 16);
static_assert(sizeof(nvmlProcessUtilizationSample_t) == 32 &&
              offsetof(nvmlProcessUtilizationSample_t, timeStamp) == 8 &&
              offsetof(nvmlProcessUtilizationSample_t, smUtil) == 16);
static_assert(sizeof(nvmlDeviceAttributes_t) == 40 && offsetof(nvmlDeviceAttributes_t, memorySizeMB) == 32);
static_assert(sizeof(nvmlFieldValue_t) == 40 && offsetof(nvmlFieldValue_t, timestamp) == 8 &&
              offsetof(nvmlFieldValue_t, valueType) == 24 && offsetof(nvmlFieldValue_t, value) == 32);
static_assert(sizeof(nvmlEventData_t) == 32 && offsetof(nvmlEventData_t, eventData) == 16 &&
              offsetof(nvmlEventData_t, gpuInstanceId) == 24);
static_assert(sizeof(nvmlGpmMetric_t) == 40 && offsetof(nvmlGpmMetric_t, value) == 8 &&
              offsetof(nvmlGpmMetric_t, metricInfo) == 16);
static_assert(offsetof(nvmlGpmMetricsGet_t, sample1) == 8 && offsetof(nvmlGpmMetricsGet_t, metrics) == 24 &&
              sizeof(nvmlGpmMetricsGet_t) == 24 + 40 * kGpmMetricSlots);
static_assert(sizeof(nvmlGpmSupport_t) == 8);
static_assert(sizeof(nvmlTemperature_v1_t) == 12 && offsetof(nvmlTemperature_v1_t, temperature) == 8);
static_assert(sizeof(nvmlReturn_t) == 4 && sizeof(nvmlClockType_t) == 4 && sizeof(nvmlValueType_t) == 4);
static_assert(sizeof(nvmlEnableState_t) == 4 && sizeof(nvmlComputeMode_t) == 4 && sizeof(nvmlMemoryErrorType_t) == 4 &&
              sizeof(nvmlEccCounterType_t) == 4 && sizeof(nvmlPageRetirementCause_t) == 4 &&
              sizeof(nvmlNvLinkErrorCounter_t) == 4 && sizeof(nvmlNvlinkVersion_t) == 4);

// ---- The one list of NVML functions gpudoc calls ------------------------------------------------
//   X(need, name, return type, (parameters), (argument names))
// need: kRequired — the backend cannot work without it (a missing one fails open with
// kEnvironment); kOptional — a missing symbol (an older driver) only means that feature is
// unsupported. Never add a Set* function: gpudoc reads GPUs, it never changes their settings.
// Never add nvmlDeviceGetPcieThroughput: it blocks for ~20 ms (use GPM PCIe metrics).
#define GPUDOC_NVML_FUNCTIONS(X)                                                                                       \
  X(kRequired, nvmlInit_v2, nvmlReturn_t, (void), ())                                                                  \
  X(kRequired, nvmlShutdown, nvmlReturn_t, (void), ())                                                                 \
  X(kOptional, nvmlErrorString, const char*, (nvmlReturn_t result), (result))                                          \
  X(kRequired, nvmlDeviceGetCount_v2, nvmlReturn_t, (unsigned int* deviceCount), (deviceCount))                        \
  X(kRequired, nvmlDeviceGetHandleByIndex_v2, nvmlReturn_t, (unsigned int index, nvmlDevice_t* device),                \
    (index, device))                                                                                                   \
  /* system_info */                                                                                                    \
  X(kOptional, nvmlSystemGetDriverVersion, nvmlReturn_t, (char* version, unsigned int length), (version, length))      \
  X(kOptional, nvmlSystemGetNVMLVersion, nvmlReturn_t, (char* version, unsigned int length), (version, length))        \
  X(kOptional, nvmlSystemGetCudaDriverVersion_v2, nvmlReturn_t, (int* cudaDriverVersion), (cudaDriverVersion))         \
  /* device_info */                                                                                                    \
  X(kOptional, nvmlDeviceGetName, nvmlReturn_t, (nvmlDevice_t device, char* name, unsigned int length),                \
    (device, name, length))                                                                                            \
  X(kOptional, nvmlDeviceGetUUID, nvmlReturn_t, (nvmlDevice_t device, char* uuid, unsigned int length),                \
    (device, uuid, length))                                                                                            \
  X(kOptional, nvmlDeviceGetPciInfo_v3, nvmlReturn_t, (nvmlDevice_t device, nvmlPciInfo_t * pci), (device, pci))       \
  X(kOptional, nvmlDeviceGetMaxClockInfo, nvmlReturn_t,                                                                \
    (nvmlDevice_t device, nvmlClockType_t type, unsigned int* clock), (device, type, clock))                           \
  X(kOptional, nvmlDeviceGetMaxPcieLinkGeneration, nvmlReturn_t, (nvmlDevice_t device, unsigned int* maxLinkGen),      \
    (device, maxLinkGen))                                                                                              \
  X(kOptional, nvmlDeviceGetMaxPcieLinkWidth, nvmlReturn_t, (nvmlDevice_t device, unsigned int* maxLinkWidth),         \
    (device, maxLinkWidth))                                                                                            \
  X(kOptional, nvmlDeviceGetPowerManagementDefaultLimit, nvmlReturn_t,                                                 \
    (nvmlDevice_t device, unsigned int* defaultLimit), (device, defaultLimit))                                         \
  X(kOptional, nvmlDeviceGetTemperatureThreshold, nvmlReturn_t,                                                        \
    (nvmlDevice_t device, nvmlTemperatureThresholds_t thresholdType, unsigned int* temp),                              \
    (device, thresholdType, temp))                                                                                     \
  X(kOptional, nvmlDeviceGetCudaComputeCapability, nvmlReturn_t, (nvmlDevice_t device, int* major, int* minor),        \
    (device, major, minor))                                                                                            \
  X(kOptional, nvmlDeviceGetMigMode, nvmlReturn_t,                                                                     \
    (nvmlDevice_t device, unsigned int* currentMode, unsigned int* pendingMode), (device, currentMode, pendingMode))   \
  X(kOptional, nvmlDeviceGetMaxMigDeviceCount, nvmlReturn_t, (nvmlDevice_t device, unsigned int* count),               \
    (device, count))                                                                                                   \
  X(kOptional, nvmlDeviceGetMigDeviceHandleByIndex, nvmlReturn_t,                                                      \
    (nvmlDevice_t device, unsigned int index, nvmlDevice_t* migDevice), (device, index, migDevice))                    \
  X(kOptional, nvmlDeviceGetGpuInstanceId, nvmlReturn_t, (nvmlDevice_t device, unsigned int* id), (device, id))        \
  X(kOptional, nvmlDeviceGetComputeInstanceId, nvmlReturn_t, (nvmlDevice_t device, unsigned int* id), (device, id))    \
  X(kOptional, nvmlDeviceGetAttributes_v2, nvmlReturn_t, (nvmlDevice_t device, nvmlDeviceAttributes_t * attributes),   \
    (device, attributes))                                                                                              \
  /* kUtilization */                                                                                                   \
  X(kOptional, nvmlDeviceGetSamples, nvmlReturn_t,                                                                     \
    (nvmlDevice_t device, nvmlSamplingType_t type, unsigned long long lastSeenTimeStamp,                               \
     nvmlValueType_t* sampleValType, unsigned int* sampleCount, nvmlSample_t* samples),                                \
    (device, type, lastSeenTimeStamp, sampleValType, sampleCount, samples))                                            \
  /* kFast (and memory total for device_info) */                                                                       \
  X(kOptional, nvmlDeviceGetPowerUsage, nvmlReturn_t, (nvmlDevice_t device, unsigned int* power), (device, power))     \
  X(kOptional, nvmlDeviceGetClockInfo, nvmlReturn_t, (nvmlDevice_t device, nvmlClockType_t type, unsigned int* clock), \
    (device, type, clock))                                                                                             \
  X(kOptional, nvmlDeviceGetTemperature, nvmlReturn_t,                                                                 \
    (nvmlDevice_t device, nvmlTemperatureSensors_t sensorType, unsigned int* temp), (device, sensorType, temp))        \
  X(kOptional, nvmlDeviceGetTemperatureV, nvmlReturn_t, (nvmlDevice_t device, nvmlTemperature_t * temperature),        \
    (device, temperature))                                                                                             \
  X(kOptional, nvmlDeviceGetCurrentClocksEventReasons, nvmlReturn_t,                                                   \
    (nvmlDevice_t device, unsigned long long* clocksEventReasons), (device, clocksEventReasons))                       \
  X(kOptional, nvmlDeviceGetCurrentClocksThrottleReasons, nvmlReturn_t,                                                \
    (nvmlDevice_t device, unsigned long long* clocksThrottleReasons), (device, clocksThrottleReasons))                 \
  X(kOptional, nvmlDeviceGetMemoryInfo, nvmlReturn_t, (nvmlDevice_t device, nvmlMemory_t * memory), (device, memory))  \
  /* kGpm */                                                                                                           \
  X(kOptional, nvmlGpmQueryDeviceSupport, nvmlReturn_t, (nvmlDevice_t device, nvmlGpmSupport_t * gpmSupport),          \
    (device, gpmSupport))                                                                                              \
  X(kOptional, nvmlGpmSampleAlloc, nvmlReturn_t, (nvmlGpmSample_t * gpmSample), (gpmSample))                           \
  X(kOptional, nvmlGpmSampleFree, nvmlReturn_t, (nvmlGpmSample_t gpmSample), (gpmSample))                              \
  X(kOptional, nvmlGpmSampleGet, nvmlReturn_t, (nvmlDevice_t device, nvmlGpmSample_t gpmSample), (device, gpmSample))  \
  X(kOptional, nvmlGpmMetricsGet, nvmlReturn_t, (nvmlGpmMetricsGet_t * metricsGet), (metricsGet))                      \
  /* kSlow */                                                                                                          \
  X(kOptional, nvmlDeviceGetFieldValues, nvmlReturn_t,                                                                 \
    (nvmlDevice_t device, int valuesCount, nvmlFieldValue_t* values), (device, valuesCount, values))                   \
  X(kOptional, nvmlDeviceGetCurrPcieLinkGeneration, nvmlReturn_t, (nvmlDevice_t device, unsigned int* currLinkGen),    \
    (device, currLinkGen))                                                                                             \
  X(kOptional, nvmlDeviceGetCurrPcieLinkWidth, nvmlReturn_t, (nvmlDevice_t device, unsigned int* currLinkWidth),       \
    (device, currLinkWidth))                                                                                           \
  X(kOptional, nvmlDeviceGetEnforcedPowerLimit, nvmlReturn_t, (nvmlDevice_t device, unsigned int* limit),              \
    (device, limit))                                                                                                   \
  /* kEnergy */                                                                                                        \
  X(kOptional, nvmlDeviceGetTotalEnergyConsumption, nvmlReturn_t, (nvmlDevice_t device, unsigned long long* energy),   \
    (device, energy))                                                                                                  \
  /* kProcesses */                                                                                                     \
  X(kOptional, nvmlDeviceGetComputeRunningProcesses_v3, nvmlReturn_t,                                                  \
    (nvmlDevice_t device, unsigned int* infoCount, nvmlProcessInfo_t* infos), (device, infoCount, infos))              \
  X(kOptional, nvmlDeviceGetComputeRunningProcesses_v2, nvmlReturn_t,                                                  \
    (nvmlDevice_t device, unsigned int* infoCount, nvmlProcessInfo_t* infos), (device, infoCount, infos))              \
  X(kOptional, nvmlDeviceGetProcessUtilization, nvmlReturn_t,                                                          \
    (nvmlDevice_t device, nvmlProcessUtilizationSample_t * utilization, unsigned int* processSamplesCount,             \
     unsigned long long lastSeenTimeStamp),                                                                            \
    (device, utilization, processSamplesCount, lastSeenTimeStamp))                                                     \
  /* wait_events */                                                                                                    \
  X(kOptional, nvmlEventSetCreate, nvmlReturn_t, (nvmlEventSet_t * set), (set))                                        \
  X(kOptional, nvmlDeviceRegisterEvents, nvmlReturn_t,                                                                 \
    (nvmlDevice_t device, unsigned long long eventTypes, nvmlEventSet_t set), (device, eventTypes, set))               \
  X(kOptional, nvmlEventSetWait_v2, nvmlReturn_t,                                                                      \
    (nvmlEventSet_t set, nvmlEventData_t * data, unsigned int timeoutms), (set, data, timeoutms))                      \
  X(kOptional, nvmlEventSetFree, nvmlReturn_t, (nvmlEventSet_t set), (set))                                            \
  /* health_facts */                                                                                                   \
  X(kOptional, nvmlDeviceGetPersistenceMode, nvmlReturn_t, (nvmlDevice_t device, nvmlEnableState_t * mode),            \
    (device, mode))                                                                                                    \
  X(kOptional, nvmlDeviceGetComputeMode, nvmlReturn_t, (nvmlDevice_t device, nvmlComputeMode_t * mode),                \
    (device, mode))                                                                                                    \
  X(kOptional, nvmlDeviceGetEccMode, nvmlReturn_t,                                                                     \
    (nvmlDevice_t device, nvmlEnableState_t * current, nvmlEnableState_t * pending), (device, current, pending))       \
  X(kOptional, nvmlDeviceGetTotalEccErrors, nvmlReturn_t,                                                              \
    (nvmlDevice_t device, nvmlMemoryErrorType_t errorType, nvmlEccCounterType_t counterType,                           \
     unsigned long long* eccCounts),                                                                                   \
    (device, errorType, counterType, eccCounts))                                                                       \
  X(kOptional, nvmlDeviceGetRemappedRows, nvmlReturn_t,                                                                \
    (nvmlDevice_t device, unsigned int* corrRows, unsigned int* uncRows, unsigned int* isPending,                      \
     unsigned int* failureOccurred),                                                                                   \
    (device, corrRows, uncRows, isPending, failureOccurred))                                                           \
  X(kOptional, nvmlDeviceGetRetiredPages, nvmlReturn_t,                                                                \
    (nvmlDevice_t device, nvmlPageRetirementCause_t cause, unsigned int* pageCount, unsigned long long* addresses),    \
    (device, cause, pageCount, addresses))                                                                             \
  X(kOptional, nvmlDeviceGetRetiredPagesPendingStatus, nvmlReturn_t,                                                   \
    (nvmlDevice_t device, nvmlEnableState_t * isPending), (device, isPending))                                         \
  X(kOptional, nvmlDeviceGetPowerManagementLimit, nvmlReturn_t, (nvmlDevice_t device, unsigned int* limit),            \
    (device, limit))                                                                                                   \
  X(kOptional, nvmlDeviceGetPcieReplayCounter, nvmlReturn_t, (nvmlDevice_t device, unsigned int* value),               \
    (device, value))                                                                                                   \
  X(kOptional, nvmlDeviceGetNvLinkState, nvmlReturn_t,                                                                 \
    (nvmlDevice_t device, unsigned int link, nvmlEnableState_t* isActive), (device, link, isActive))                   \
  X(kOptional, nvmlDeviceGetNvLinkVersion, nvmlReturn_t,                                                               \
    (nvmlDevice_t device, unsigned int link, unsigned int* version), (device, link, version))                          \
  X(kOptional, nvmlDeviceGetNvLinkErrorCounter, nvmlReturn_t,                                                          \
    (nvmlDevice_t device, unsigned int link, nvmlNvLinkErrorCounter_t counter, unsigned long long* counterValue),      \
    (device, link, counter, counterValue))

// The function table. A null pointer means the loaded library lacks that symbol.
struct NvmlApi {
#define GPUDOC_NVML_X(need, name, ret, params, args) ret(*name) params = nullptr;
  GPUDOC_NVML_FUNCTIONS(GPUDOC_NVML_X)
#undef GPUDOC_NVML_X
};

// How many functions the list has (for tests that walk it).
inline constexpr std::size_t kNvmlFunctionCount = 0
#define GPUDOC_NVML_X(need, name, ret, params, args) +1
    GPUDOC_NVML_FUNCTIONS(GPUDOC_NVML_X)
#undef GPUDOC_NVML_X
    ;

// A dlopen'ed libnvidia-ml and the table resolved from it. Never closed (core/dynamic_library.hpp
// states why): the mapping lives until the process ends.
class NvmlLibrary {
 public:
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;
  ~NvmlLibrary() = default;

  [[nodiscard]] const NvmlApi& api() const { return api_; }

 private:
  friend core::Result<std::unique_ptr<NvmlLibrary>> load_nvml_library(const std::string& path);
  NvmlLibrary() = default;
  NvmlApi api_;
};

// The soname the driver installs; the one the loader looks for by default.
inline constexpr std::string_view kNvmlLibraryName = "libnvidia-ml.so.1";
// The library's name in messages.
inline constexpr std::string_view kNvmlName = "the NVIDIA management library (NVML)";

// What still works without NVML, appended to every load or init failure so the user knows the
// way on.
inline constexpr std::string_view kWithoutNvml =
    "live GPU reading is unavailable; replaying recorded traces (gpudoc trace ...) still works";

// Loads `path` (empty: kNvmlLibraryName through the dynamic loader's search path) and resolves
// every symbol in GPUDOC_NVML_FUNCTIONS. Errors: kEnvironment when the library cannot be loaded
// or a kRequired symbol is missing; the message says what is missing and that replaying recorded
// traces still works. A missing kOptional symbol is left null. Thread-safe.
[[nodiscard]] core::Result<std::unique_ptr<NvmlLibrary>> load_nvml_library(const std::string& path);

// The kRequired functions `api` lacks (null pointers), by name; empty when all are there.
[[nodiscard]] std::vector<std::string> missing_required(const NvmlApi& api);

// THE conversion of nvmlDeviceGetNvLinkVersion's answer (an nvmlNvlinkVersion_t) into NVIDIA's
// version name: 6 -> "4.0". Absent for NVML_NVLINK_VERSION_INVALID and for codes newer than this
// list (the caller keeps the raw code then). Thread-safe.
[[nodiscard]] std::optional<std::string_view> nvlink_version_name(unsigned int code) noexcept;

// THE conversion of an NVML return code into a gpudoc error (the only place that maps codes to
// kinds): GPU_IS_LOST / RESET_REQUIRED -> kGpuLost; TIMEOUT -> kTimeout; NOT_SUPPORTED /
// FUNCTION_NOT_FOUND -> kNotSupported; everything else (NO_PERMISSION, LIB_RM_VERSION_MISMATCH,
// DRIVER_NOT_LOADED, ...) -> kEnvironment. The message is "<what>: <nvmlErrorString> (NVML error
// <code>)". `api` may lack nvmlErrorString; a generic name is used then. Precondition:
// rc != NVML_SUCCESS.
[[nodiscard]] core::Error nvml_error(const NvmlApi& api, nvmlReturn_t rc, std::string_view what);

}  // namespace gpudoc::gpu::nvml
