// Checks the NVML mirror (gpu/nvml/nvml_api.hpp) against NVIDIA's own nvml.h, at compile time:
// every function in GPUDOC_NVML_FUNCTIONS must have exactly NVIDIA's prototype, every mirrored
// struct the same size, alignment and field offsets, every constant the same value. Built only
// where nvml.h is installed (the CUDA toolkit on the GPU machine); CI machines skip it. If this
// fails to compile, the mirror is wrong for that NVML version: fix nvml_api.hpp, never this file.
#define NVML_NO_UNVERSIONED_FUNC_DEFS  // declare the _v2/_v3 functions under their own names
#include <gtest/gtest.h>
#include <nvml.h>

#include <cstddef>
#include <type_traits>

// Real macro values, captured before the names are freed for our header (it declares constants
// with the same names).
constexpr unsigned long long real_xid = static_cast<unsigned long long>(nvmlEventTypeXidCriticalError);
constexpr unsigned real_fi_memtemp = NVML_FI_DEV_MEMORY_TEMP;
constexpr unsigned real_pci_sz = NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE;
constexpr unsigned real_pci_v2_sz = NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE;
constexpr unsigned real_mig_en = NVML_DEVICE_MIG_ENABLE;
constexpr unsigned real_mig_dis = NVML_DEVICE_MIG_DISABLE;
constexpr unsigned real_gpm_get_ver = NVML_GPM_METRICS_GET_VERSION;
constexpr unsigned real_gpm_sup_ver = NVML_GPM_SUPPORT_VERSION;
constexpr unsigned long long real_na = static_cast<unsigned long long>(NVML_VALUE_NOT_AVAILABLE);
constexpr unsigned real_temperature_v1 = nvmlTemperature_v1;
constexpr unsigned real_nvlink_max = NVML_NVLINK_MAX_LINKS;
#undef nvmlEventTypeXidCriticalError
#undef NVML_FI_DEV_MEMORY_TEMP
#undef NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE
#undef NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE
#undef NVML_DEVICE_MIG_ENABLE
#undef NVML_DEVICE_MIG_DISABLE
#undef NVML_GPM_METRICS_GET_VERSION
#undef NVML_GPM_SUPPORT_VERSION
#undef NVML_NVLINK_MAX_LINKS

#include "gpu/nvml/nvml_api.hpp"

namespace my = gpudoc::gpu::nvml;

// Every function in our list has exactly NVIDIA's prototype: expanded at global scope, the type
// names in the list resolve to NVIDIA's declarations, not our mirror's.
#define X(need, name, ret, params, args) \
  static_assert(std::is_same_v<decltype(&::name), ret(*) params>, "prototype differs: " #name);
GPUDOC_NVML_FUNCTIONS(X)
#undef X

#define SAME_LAYOUT(T) static_assert(sizeof(my::T) == sizeof(::T) && alignof(my::T) == alignof(::T), #T)
#define SAME_FIELD(T, f) \
  static_assert(offsetof(my::T, f) == offsetof(::T, f) && sizeof(my::T::f) == sizeof(::T::f), #T "." #f)
SAME_LAYOUT(nvmlValue_t);
SAME_LAYOUT(nvmlSample_t);
SAME_FIELD(nvmlSample_t, timeStamp);
SAME_FIELD(nvmlSample_t, sampleValue);
SAME_LAYOUT(nvmlMemory_t);
SAME_FIELD(nvmlMemory_t, total);
SAME_FIELD(nvmlMemory_t, used);
SAME_LAYOUT(nvmlPciInfo_t);
SAME_FIELD(nvmlPciInfo_t, busIdLegacy);
SAME_FIELD(nvmlPciInfo_t, domain);
SAME_FIELD(nvmlPciInfo_t, pciSubSystemId);
SAME_FIELD(nvmlPciInfo_t, busId);
SAME_LAYOUT(nvmlProcessInfo_t);
SAME_FIELD(nvmlProcessInfo_t, pid);
SAME_FIELD(nvmlProcessInfo_t, usedGpuMemory);
SAME_FIELD(nvmlProcessInfo_t, gpuInstanceId);
SAME_FIELD(nvmlProcessInfo_t, computeInstanceId);
static_assert(sizeof(my::nvmlProcessInfo_t) == sizeof(::nvmlProcessInfo_v2_t));
SAME_LAYOUT(nvmlProcessUtilizationSample_t);
SAME_FIELD(nvmlProcessUtilizationSample_t, pid);
SAME_FIELD(nvmlProcessUtilizationSample_t, timeStamp);
SAME_FIELD(nvmlProcessUtilizationSample_t, smUtil);
SAME_FIELD(nvmlProcessUtilizationSample_t, memUtil);
SAME_FIELD(nvmlProcessUtilizationSample_t, decUtil);
SAME_LAYOUT(nvmlDeviceAttributes_t);
SAME_FIELD(nvmlDeviceAttributes_t, multiprocessorCount);
SAME_FIELD(nvmlDeviceAttributes_t, memorySizeMB);
SAME_LAYOUT(nvmlFieldValue_t);
SAME_FIELD(nvmlFieldValue_t, fieldId);
SAME_FIELD(nvmlFieldValue_t, scopeId);
SAME_FIELD(nvmlFieldValue_t, timestamp);
SAME_FIELD(nvmlFieldValue_t, latencyUsec);
SAME_FIELD(nvmlFieldValue_t, valueType);
SAME_FIELD(nvmlFieldValue_t, nvmlReturn);
SAME_FIELD(nvmlFieldValue_t, value);
SAME_LAYOUT(nvmlEventData_t);
SAME_FIELD(nvmlEventData_t, device);
SAME_FIELD(nvmlEventData_t, eventType);
SAME_FIELD(nvmlEventData_t, eventData);
SAME_FIELD(nvmlEventData_t, gpuInstanceId);
SAME_FIELD(nvmlEventData_t, computeInstanceId);
SAME_LAYOUT(nvmlGpmMetric_t);
SAME_FIELD(nvmlGpmMetric_t, metricId);
SAME_FIELD(nvmlGpmMetric_t, nvmlReturn);
SAME_FIELD(nvmlGpmMetric_t, value);
SAME_FIELD(nvmlGpmMetric_t, metricInfo);
SAME_FIELD(nvmlGpmMetricsGet_t, version);
SAME_FIELD(nvmlGpmMetricsGet_t, numMetrics);
SAME_FIELD(nvmlGpmMetricsGet_t, sample1);
SAME_FIELD(nvmlGpmMetricsGet_t, sample2);
static_assert(offsetof(my::nvmlGpmMetricsGet_t, metrics) == offsetof(::nvmlGpmMetricsGet_t, metrics));
static_assert(sizeof(my::nvmlGpmMetricsGet_t) >= sizeof(::nvmlGpmMetricsGet_t), "our GPM array must not be smaller");
SAME_LAYOUT(nvmlGpmSupport_t);
SAME_FIELD(nvmlGpmSupport_t, isSupportedDevice);
SAME_LAYOUT(nvmlTemperature_v1_t);
SAME_FIELD(nvmlTemperature_v1_t, version);
SAME_FIELD(nvmlTemperature_v1_t, sensorType);
SAME_FIELD(nvmlTemperature_v1_t, temperature);
static_assert(my::kNvmlTemperatureV1Version == real_temperature_v1);

#define SAME_VALUE(n) static_assert(static_cast<long long>(my::n) == static_cast<long long>(::n), #n)
SAME_VALUE(NVML_SUCCESS);
SAME_VALUE(NVML_ERROR_NOT_SUPPORTED);
SAME_VALUE(NVML_ERROR_NO_PERMISSION);
SAME_VALUE(NVML_ERROR_NOT_FOUND);
SAME_VALUE(NVML_ERROR_INSUFFICIENT_SIZE);
SAME_VALUE(NVML_ERROR_DRIVER_NOT_LOADED);
SAME_VALUE(NVML_ERROR_TIMEOUT);
SAME_VALUE(NVML_ERROR_FUNCTION_NOT_FOUND);
SAME_VALUE(NVML_ERROR_GPU_IS_LOST);
SAME_VALUE(NVML_ERROR_RESET_REQUIRED);
SAME_VALUE(NVML_ERROR_LIB_RM_VERSION_MISMATCH);
SAME_VALUE(NVML_ERROR_UNKNOWN);
SAME_VALUE(NVML_ERROR_INVALID_STATE);
SAME_VALUE(NVML_ERROR_GPU_NOT_FOUND);
SAME_VALUE(NVML_GPU_UTILIZATION_SAMPLES);
SAME_VALUE(NVML_MEMORY_UTILIZATION_SAMPLES);
SAME_VALUE(NVML_VALUE_TYPE_DOUBLE);
SAME_VALUE(NVML_VALUE_TYPE_UNSIGNED_INT);
SAME_VALUE(NVML_VALUE_TYPE_UNSIGNED_LONG_LONG);
SAME_VALUE(NVML_VALUE_TYPE_SIGNED_LONG_LONG);
SAME_VALUE(NVML_VALUE_TYPE_SIGNED_INT);
SAME_VALUE(NVML_VALUE_TYPE_UNSIGNED_SHORT);
SAME_VALUE(NVML_CLOCK_SM);
SAME_VALUE(NVML_CLOCK_MEM);
SAME_VALUE(NVML_TEMPERATURE_GPU);
SAME_VALUE(NVML_TEMPERATURE_THRESHOLD_SHUTDOWN);
SAME_VALUE(NVML_TEMPERATURE_THRESHOLD_SLOWDOWN);
SAME_VALUE(NVML_TEMPERATURE_THRESHOLD_MEM_MAX);
SAME_VALUE(NVML_TEMPERATURE_THRESHOLD_GPU_MAX);
SAME_VALUE(NVML_GPM_METRIC_GRAPHICS_UTIL);
SAME_VALUE(NVML_GPM_METRIC_SM_UTIL);
SAME_VALUE(NVML_GPM_METRIC_SM_OCCUPANCY);
SAME_VALUE(NVML_GPM_METRIC_ANY_TENSOR_UTIL);
SAME_VALUE(NVML_GPM_METRIC_DRAM_BW_UTIL);
SAME_VALUE(NVML_GPM_METRIC_PCIE_TX_PER_SEC);
SAME_VALUE(NVML_GPM_METRIC_PCIE_RX_PER_SEC);
SAME_VALUE(NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC);
SAME_VALUE(NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC);
static_assert(my::nvmlEventTypeXidCriticalError == real_xid);
static_assert(my::NVML_FI_DEV_MEMORY_TEMP == real_fi_memtemp);
static_assert(my::NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE == real_pci_sz &&
              my::NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE == real_pci_v2_sz);
static_assert(my::NVML_DEVICE_MIG_ENABLE == real_mig_en && my::NVML_DEVICE_MIG_DISABLE == real_mig_dis);
static_assert(my::NVML_GPM_METRICS_GET_VERSION == real_gpm_get_ver && my::NVML_GPM_SUPPORT_VERSION == real_gpm_sup_ver);
static_assert(my::NVML_VALUE_NOT_AVAILABLE_ULL == real_na);
// health_facts: the enums its functions take.
SAME_LAYOUT(nvmlEnableState_t);
SAME_LAYOUT(nvmlComputeMode_t);
SAME_LAYOUT(nvmlMemoryErrorType_t);
SAME_LAYOUT(nvmlEccCounterType_t);
SAME_LAYOUT(nvmlPageRetirementCause_t);
SAME_LAYOUT(nvmlNvLinkErrorCounter_t);
SAME_VALUE(NVML_FEATURE_DISABLED);
SAME_VALUE(NVML_FEATURE_ENABLED);
SAME_VALUE(NVML_COMPUTEMODE_DEFAULT);
SAME_VALUE(NVML_COMPUTEMODE_EXCLUSIVE_THREAD);
SAME_VALUE(NVML_COMPUTEMODE_PROHIBITED);
SAME_VALUE(NVML_COMPUTEMODE_EXCLUSIVE_PROCESS);
SAME_VALUE(NVML_MEMORY_ERROR_TYPE_CORRECTED);
SAME_VALUE(NVML_MEMORY_ERROR_TYPE_UNCORRECTED);
SAME_VALUE(NVML_VOLATILE_ECC);
SAME_VALUE(NVML_AGGREGATE_ECC);
SAME_VALUE(NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS);
SAME_VALUE(NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR);
SAME_VALUE(NVML_NVLINK_ERROR_DL_REPLAY);
SAME_VALUE(NVML_NVLINK_ERROR_DL_RECOVERY);
SAME_VALUE(NVML_NVLINK_ERROR_DL_CRC_FLIT);
SAME_VALUE(NVML_NVLINK_ERROR_DL_CRC_DATA);
static_assert(my::NVML_NVLINK_MAX_LINKS == real_nvlink_max);
SAME_LAYOUT(nvmlNvlinkVersion_t);
SAME_VALUE(NVML_NVLINK_VERSION_INVALID);
SAME_VALUE(NVML_NVLINK_VERSION_1_0);
SAME_VALUE(NVML_NVLINK_VERSION_2_0);
SAME_VALUE(NVML_NVLINK_VERSION_2_2);
SAME_VALUE(NVML_NVLINK_VERSION_3_0);
SAME_VALUE(NVML_NVLINK_VERSION_3_1);
SAME_VALUE(NVML_NVLINK_VERSION_4_0);
SAME_VALUE(NVML_NVLINK_VERSION_5_0);

TEST(nvml_abi, MirrorMatchesNvmlH) {
  // The static_asserts above did the checking; this records what was compared against.
  RecordProperty("nvml_api_version", NVML_API_VERSION);
  RecordProperty("nvml_gpm_metric_max", static_cast<int>(::NVML_GPM_METRIC_MAX));
  EXPECT_GE(my::kGpmMetricSlots, static_cast<unsigned>(::NVML_GPM_METRIC_MAX));
  RecordProperty("functions_checked", static_cast<int>(my::kNvmlFunctionCount));
}
