// gpudoc::gpu metrics — the one list of everything gpudoc reads from a GPU, with units and groups.
//
// Each metric belongs to a group; a group is what one backend call reads, on one schedule. The
// schedule follows the sensor: reading faster than the sensor updates only repeats values and
// costs CPU (see docs/methodology.md, "Sampling rates"). The unit is part of every name.
//
//   for (gpu::Metric m : gpu::all_metrics()) fmt::print("{} [{}]\n", gpu::info(m).name, gpu::info(m).unit);
#pragma once

#include <array>
#include <bitset>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/result.hpp"

namespace gpudoc::gpu {

// Groups: one backend read each, on one period.
//   X(id, name, default period ms, minimum period ms, why this period)
#define GPUDOC_METRIC_GROUPS(X)                                                                                    \
  X(kUtilization, "utilization", 10000, 200,                                                                       \
    "drains the driver's 200 ms utilization samples (~14 s deep) by timestamp; ~5 ms of CPU a read")               \
  X(kFast, "fast", 100, 100, "power, clocks, temperature, throttle reasons: the sensors update ~100 ms")           \
  X(kGpm, "gpm", 200, 100, "GPU Performance Monitoring: two samples must be >= 100 ms apart")                      \
  X(kSlow, "slow", 1000, 100, "memory used and temperature, PCIe link, power limit: change slowly")                \
  X(kEnergy, "energy", 30000, 100, "the energy counter read costs ~4 ms of CPU: read it rarely")                   \
  X(kProcesses, "processes", 10000, 200, "per-process samples (buffered, 200 ms) and memory: ~4 ms of CPU a read") \
  X(kErrors, "errors", 30000, 1000,                                                                                \
    "ECC, row-remap, PCIe replay and NVLink error counters: change rarely; one call per counter and link")

enum class MetricGroup : std::uint8_t {
#define GPUDOC_X(id, name, period, min_period, why) id,
  GPUDOC_METRIC_GROUPS(GPUDOC_X)
#undef GPUDOC_X
};

inline constexpr std::size_t kMetricGroupCount = 0
#define GPUDOC_X(id, name, period, min_period, why) +1
    GPUDOC_METRIC_GROUPS(GPUDOC_X)
#undef GPUDOC_X
    ;

struct GroupInfo {
  MetricGroup group;
  std::string_view name;
  std::chrono::milliseconds default_period;
  std::chrono::milliseconds min_period;
  std::string_view why;
};

// Device-level metrics. Per-process figures are not metrics: see ProcessSample in backend.hpp.
//   X(id, name, unit, group, description)
#define GPUDOC_METRICS(X)                                                                                           \
  X(kGpuUtilizationPercent, "gpu_utilization_percent", "percent", kUtilization,                                     \
    "share of the sample period during which any kernel was running")                                               \
  X(kMemoryUtilizationPercent, "memory_utilization_percent", "percent", kUtilization,                               \
    "share of the sample period during which device memory was being read or written")                              \
  X(kPowerWatts, "power_watts", "W", kFast, "board power draw")                                                     \
  X(kSmClockMhz, "sm_clock_mhz", "MHz", kFast, "current SM clock")                                                  \
  X(kMemoryClockMhz, "memory_clock_mhz", "MHz", kFast, "current memory clock")                                      \
  X(kGpuTemperatureCelsius, "gpu_temperature_celsius", "Cel", kFast, "GPU core temperature")                        \
  X(kClockEventReasonsMask, "clock_event_reasons_mask", "bitmask", kFast,                                           \
    "active clock-event (throttle) reasons, NVML's nvmlClocksEventReason bits")                                     \
  X(kMemoryUsedBytes, "memory_used_bytes", "By", kSlow, "device memory in use")                                     \
  X(kGpmSmActivityPercent, "gpm_sm_activity_percent", "percent", kGpm,                                              \
    "share of SMs busy, averaged over time (GPM SM_UTIL)")                                                          \
  X(kGpmSmOccupancyPercent, "gpm_sm_occupancy_percent", "percent", kGpm,                                            \
    "resident warps over the maximum (GPM SM_OCCUPANCY)")                                                           \
  X(kGpmTensorActivityPercent, "gpm_tensor_activity_percent", "percent", kGpm,                                      \
    "tensor-core pipe activity (GPM ANY_TENSOR_UTIL)")                                                              \
  X(kGpmDramActivityPercent, "gpm_dram_activity_percent", "percent", kGpm,                                          \
    "DRAM bandwidth used over the peak (GPM DRAM_BW_UTIL)")                                                         \
  X(kGpmPcieRxBytesPerSecond, "gpm_pcie_rx_bytes_per_second", "By/s", kGpm, "PCIe bytes received")                  \
  X(kGpmPcieTxBytesPerSecond, "gpm_pcie_tx_bytes_per_second", "By/s", kGpm, "PCIe bytes sent")                      \
  X(kGpmNvlinkRxBytesPerSecond, "gpm_nvlink_rx_bytes_per_second", "By/s", kGpm, "NVLink bytes received, all links") \
  X(kGpmNvlinkTxBytesPerSecond, "gpm_nvlink_tx_bytes_per_second", "By/s", kGpm, "NVLink bytes sent, all links")     \
  X(kMemoryTemperatureCelsius, "memory_temperature_celsius", "Cel", kSlow, "HBM temperature")                       \
  X(kPcieLinkGeneration, "pcie_link_generation", "1", kSlow, "current PCIe link generation")                        \
  X(kPcieLinkWidth, "pcie_link_width", "1", kSlow, "current PCIe link width (lanes)")                               \
  X(kPowerLimitWatts, "power_limit_watts", "W", kSlow, "enforced power limit")                                      \
  X(kEnergyJoules, "energy_joules", "J", kEnergy, "energy counter since the driver loaded")                         \
  X(kMemoryFreeBytes, "memory_free_bytes", "By", kSlow, "device memory free")                                       \
  X(kGpmGraphicsActivityPercent, "gpm_graphics_activity_percent", "percent", kGpm,                                  \
    "share of time the graphics engine (any compute or graphics context) was active (GPM GRAPHICS_UTIL)")           \
  X(kEccCorrectedVolatileErrors, "ecc_corrected_volatile_errors", "1", kErrors,                                     \
    "corrected (single-bit) ECC errors since the driver loaded")                                                    \
  X(kEccUncorrectedVolatileErrors, "ecc_uncorrected_volatile_errors", "1", kErrors,                                 \
    "uncorrected (double-bit) ECC errors since the driver loaded")                                                  \
  X(kEccCorrectedAggregateErrors, "ecc_corrected_aggregate_errors", "1", kErrors,                                   \
    "corrected (single-bit) ECC errors over the board's life")                                                      \
  X(kEccUncorrectedAggregateErrors, "ecc_uncorrected_aggregate_errors", "1", kErrors,                               \
    "uncorrected (double-bit) ECC errors over the board's life")                                                    \
  X(kRemappedRowsCorrectable, "correctable_remapped_rows", "1", kErrors,                                            \
    "memory rows remapped after correctable errors")                                                                \
  X(kRemappedRowsUncorrectable, "uncorrectable_remapped_rows", "1", kErrors,                                        \
    "memory rows remapped after uncorrectable errors")                                                              \
  X(kRowRemapPending, "row_remap_pending", "bool", kErrors, "1 while a row remap waits for the next GPU reset")     \
  X(kRowRemapFailure, "row_remap_failure", "bool", kErrors,                                                         \
    "1 once a row remap has failed: the memory cannot be repaired")                                                 \
  X(kPcieReplayErrors, "pcie_replay_errors", "1", kErrors, "PCIe replays (retries) since the driver loaded")        \
  X(kNvlinkCrcFlitErrors, "nvlink_crc_flit_errors", "1", kErrors,                                                   \
    "NVLink flow-control (flit) CRC errors, all links, since the driver loaded")                                    \
  X(kNvlinkCrcDataErrors, "nvlink_crc_data_errors", "1", kErrors, "NVLink data CRC errors, all links")              \
  X(kNvlinkReplayErrors, "nvlink_replay_errors", "1", kErrors, "NVLink data-link replays (retries), all links")     \
  X(kNvlinkRecoveryErrors, "nvlink_recovery_errors", "1", kErrors, "NVLink recoveries (link retrained), all links")

enum class Metric : std::uint8_t {
#define GPUDOC_X(id, name, unit, group, desc) id,
  GPUDOC_METRICS(GPUDOC_X)
#undef GPUDOC_X
};

inline constexpr std::size_t kMetricCount = 0
#define GPUDOC_X(id, name, unit, group, desc) +1
    GPUDOC_METRICS(GPUDOC_X)
#undef GPUDOC_X
    ;

struct MetricInfo {
  Metric metric;
  std::string_view name;  // snake_case, ends with the unit: "power_watts"
  std::string_view unit;  // UCUM-style unit code: "W", "Cel", "By/s", "percent", "bitmask", "1"
  MetricGroup group;
  std::string_view description;
};

using MetricSet = std::bitset<kMetricCount>;

[[nodiscard]] const MetricInfo& info(Metric m);
[[nodiscard]] const GroupInfo& info(MetricGroup g);
[[nodiscard]] const std::array<Metric, kMetricCount>& all_metrics();
[[nodiscard]] const std::array<MetricGroup, kMetricGroupCount>& all_groups();
[[nodiscard]] std::optional<Metric> metric_from_name(std::string_view name);
[[nodiscard]] std::optional<MetricGroup> group_from_name(std::string_view name);
[[nodiscard]] MetricSet metrics_in(MetricGroup g);
// "fast=100" -> {kFast, 100 ms}; 0 turns the group off. Errors: kUsage, the message starting with
// `text`: not GROUP=MS, an unknown group (the groups listed), MS not a whole number of milliseconds
// from 0 to 86400000 (read by core::parse_number: "fast=1.5: not a whole number; expected ..."), or
// faster than the group's min_period (with why the minimum exists).
[[nodiscard]] core::Result<std::pair<MetricGroup, std::chrono::milliseconds>> parse_group_period(std::string_view text);
// One line per group: name, default period, minimum and why (for --help); `periods`: a command's
// own defaults instead of the catalog's (0: off).
[[nodiscard]] std::string describe_groups();
[[nodiscard]] std::string describe_groups(const std::array<std::chrono::milliseconds, kMetricGroupCount>& periods);
[[nodiscard]] inline std::size_t index(Metric m) { return static_cast<std::size_t>(m); }
[[nodiscard]] inline std::size_t index(MetricGroup g) { return static_cast<std::size_t>(g); }

// nvmlClocksEventReasonSwPowerCap: the board at its power limit holds the clocks down.
inline constexpr std::uint64_t kClockEventSwPowerCap = 0x4;

// NVML's clock-event reason bits (nvmlClocksEventReason*), named for output.
struct ClockEventReason {
  std::uint64_t bit;
  std::string_view name;  // "sw_power_cap"
  bool is_slowdown;       // true when it means the clocks are held down (not GPU idle / app setting)
};
[[nodiscard]] const std::array<ClockEventReason, 9>& clock_event_reasons();
// True when a bit in mask means the clocks are held down (power cap, thermal, HW slowdown).
[[nodiscard]] bool is_slowdown(std::uint64_t mask);
// "sw_power_cap,hw_thermal_slowdown" or "none".
[[nodiscard]] std::string clock_event_reason_names(std::uint64_t mask);

}  // namespace gpudoc::gpu
