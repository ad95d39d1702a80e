// gpudoc::gpu::Backend — the hardware abstraction every capability reads GPUs through.
//
// Three implementations: nvml/ (real GPUs, libnvidia-ml.so.1 loaded at run time), fake/ (scripted
// devices for tests and demos, with injectable errors) and, one layer up because it reads traces,
// telemetry::ReplayBackend (a recorded trace played back as if live). Code above this layer never
// needs to know which one it has; the CLI chooses one (`--backend`, GPUDOC_BACKEND) and hands it down.
//
//   auto backend = gpu::open_nvml_backend();          // Result<std::unique_ptr<Backend>>
//   if (!backend) return backend.error();             // kEnvironment: no driver / no library
//   auto n = (*backend)->device_count();
//   auto r = (*backend)->read(0, gpu::MetricGroup::kFast);
//   for (const auto& p : r->metrics) ...              // only metrics the GPU supports, only fresh
//
// Honest values: a metric the device does not support is absent from capabilities() and never
// read again; a value the backend could not read is absent from the reading, never 0; a buffered
// sensor sample (utilization) is returned exactly once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "gpu/metrics.hpp"

namespace gpudoc::gpu {

struct SystemInfo {
  std::string backend;              // "nvml", "replay", "fake"
  std::string driver_version;       // "580.159.03"; empty when unknown
  std::string cuda_driver_version;  // CUDA version the driver supports: "13.0"; empty when unknown
  std::string nvml_version;         // empty when unknown
};

struct MigInstance {
  std::uint32_t gpu_instance_id = 0;
  std::uint32_t compute_instance_id = 0;
  std::string uuid;  // "MIG-..."
  std::optional<std::uint64_t> memory_total_bytes;
  std::optional<std::uint32_t> multiprocessor_count;
};

// Facts that do not change while gpudoc runs. Unknown fields are absent.
struct DeviceInfo {
  int index = 0;
  std::string name;        // "NVIDIA H200"
  std::string uuid;        // "GPU-…"
  std::string pci_bus_id;  // "00000000:18:00.0"
  std::optional<std::uint64_t> memory_total_bytes;
  std::optional<double> sm_clock_max_mhz;
  std::optional<double> memory_clock_max_mhz;
  std::optional<int> pcie_link_generation_max;
  std::optional<int> pcie_link_width_max;
  std::optional<double> power_limit_default_watts;
  std::optional<double> temperature_slowdown_celsius;
  std::optional<double> temperature_shutdown_celsius;
  std::optional<double> temperature_gpu_max_celsius;  // max operating temperature
  std::optional<double> temperature_memory_max_celsius;
  std::optional<int> compute_capability_major;
  std::optional<int> compute_capability_minor;
  std::optional<bool> mig_enabled;
  std::vector<MigInstance> mig_instances;
};

enum class ComputeMode { kDefault, kExclusiveThread, kProhibited, kExclusiveProcess };
[[nodiscard]] const char* to_string(ComputeMode m) noexcept;  // "default", "exclusive_process", ...

// One NVLink of a device. Counters are since the driver loaded (NVML's DL error counters).
struct NvlinkFacts {
  int link = 0;
  std::optional<bool> active;
  // The NVLink version as NVIDIA names it: "4.0" on Hopper, "5.0" on Blackwell. Absent when the
  // backend's answer is not a version gpudoc knows; version_code then keeps that raw answer.
  std::optional<std::string> version;
  std::optional<std::uint32_t> version_code;     // NVML's nvmlNvlinkVersion_t (6 = NVLink 4.0)
  std::optional<std::uint64_t> replay_errors;    // data-link transmit replays
  std::optional<std::uint64_t> recovery_errors;  // data-link recoveries (link retrained)
  std::optional<std::uint64_t> crc_flit_errors;  // receive flow-control-digit CRC errors
  std::optional<std::uint64_t> crc_data_errors;  // receive data CRC errors
};

// The slow, configuration-like facts a health check reads once: modes, error counters, limits.
// Unlike DeviceInfo they are read fresh on every health_facts() call (counters move). Anything the
// device or driver does not support is absent, never 0 or false.
struct HealthFacts {
  std::optional<bool> persistence_mode;
  std::optional<ComputeMode> compute_mode;
  std::optional<bool> mig_current;
  std::optional<bool> mig_pending;  // differs from current until the GPU is reset
  std::optional<bool> ecc_current;
  std::optional<bool> ecc_pending;                      // differs from current until the next reboot
  std::optional<std::uint64_t> ecc_volatile_corrected;  // since the driver loaded
  std::optional<std::uint64_t> ecc_volatile_uncorrected;
  std::optional<std::uint64_t> ecc_aggregate_corrected;  // over the board's life
  std::optional<std::uint64_t> ecc_aggregate_uncorrected;
  std::optional<std::uint32_t> remapped_rows_corrected;    // rows remapped after correctable errors
  std::optional<std::uint32_t> remapped_rows_uncorrected;  // ... after uncorrectable errors
  std::optional<bool> remap_pending;                       // a remap waits for the next GPU reset
  std::optional<bool> remap_failed;                        // a remap failed: the memory cannot be repaired
  std::optional<std::uint32_t> retired_pages_single_bit;   // pre-Ampere dynamic page retirement
  std::optional<std::uint32_t> retired_pages_double_bit;
  std::optional<bool> retired_pages_pending;
  std::optional<double> power_limit_watts;           // the management limit currently set
  std::optional<double> power_limit_enforced_watts;  // the limit the board enforces (min of all)
  std::optional<double> power_limit_default_watts;
  std::optional<double> temperature_slowdown_celsius;
  std::optional<double> temperature_shutdown_celsius;
  std::optional<double> temperature_gpu_max_celsius;
  std::optional<double> temperature_memory_max_celsius;
  std::optional<int> pcie_link_generation_max;  // the most this device *and system* allow
  std::optional<int> pcie_link_width_max;
  std::optional<std::uint64_t> pcie_replay_errors;  // PCIe replays (retries) since the driver loaded
  std::vector<NvlinkFacts> nvlinks;                 // only links the device has; empty: no NVLink
};

// One reading of one metric. time_unix_ns is when the sensor took it: for buffered sensors (the
// utilization buffer) the driver's own timestamp, otherwise the time of the read.
struct MetricSample {
  Metric metric;
  double value;
  std::int64_t time_unix_ns;
};

// The error counters of `facts` as samples of the kErrors group, stamped `time_unix_ns`: ECC
// (volatile and aggregate, corrected and uncorrected), remapped rows, remap pending and failure
// (0/1), PCIe replays, and each NVLink counter summed over the links that report it. A fact that
// is absent gives no sample (never 0). Pure; what every backend's kErrors read returns.
[[nodiscard]] std::vector<MetricSample> error_counter_samples(const HealthFacts& facts, std::int64_t time_unix_ns);

// One process on one GPU. Fields the backend could not read are absent.
struct ProcessSample {
  std::uint32_t pid = 0;
  std::int64_t time_unix_ns = 0;
  std::string name;  // executable name when readable
  std::optional<double> sm_utilization_percent;
  std::optional<double> memory_utilization_percent;
  std::optional<std::uint64_t> memory_used_bytes;
  std::optional<std::uint32_t> gpu_instance_id;      // MIG
  std::optional<std::uint32_t> compute_instance_id;  // MIG
};

struct GroupReading {
  std::vector<MetricSample> metrics;
  std::vector<ProcessSample> processes;  // kProcesses only
};

// An asynchronous device event (XID error etc.).
struct DeviceEvent {
  int gpu = 0;
  std::int64_t time_unix_ns = 0;
  std::string kind;        // "xid"
  std::uint64_t code = 0;  // the XID number for kind "xid"
};

class Backend {
 public:
  virtual ~Backend() = default;

  [[nodiscard]] virtual std::string_view name() const = 0;
  [[nodiscard]] virtual core::Result<SystemInfo> system_info() = 0;
  [[nodiscard]] virtual core::Result<int> device_count() = 0;
  // Errors: kBadInput for an index out of range, kGpuLost.
  [[nodiscard]] virtual core::Result<DeviceInfo> device_info(int gpu) = 0;
  // The metrics this device supports, probed once on first call and cached.
  [[nodiscard]] virtual core::Result<MetricSet> capabilities(int gpu) = 0;
  // Reads one group of one device. Returns only supported metrics and only fresh values.
  // Errors: kGpuLost (the device is gone or needs a reset), kTimeout, kNotSupported (nothing in the
  // group is supported), kEnvironment. A metric that fails alone is left out of the reading.
  // Thread-safety: calls for different GPUs may run concurrently; the caller serializes calls for
  // one GPU.
  [[nodiscard]] virtual core::Result<GroupReading> read(int gpu, MetricGroup group) = 0;
  // Waits up to `timeout` for asynchronous events (XIDs) on any device. Backends without events
  // return an empty list after the timeout. Thread-safe with read().
  [[nodiscard]] virtual core::Result<std::vector<DeviceEvent>> wait_events(core::Nanos timeout) = 0;
  // Modes, error counters, limits and NVLink state of one device, read now (a few ms on NVML: one
  // call per fact and per link). Errors: kBadInput for an index out of range, kGpuLost; a fact
  // that fails alone is left absent. Backends without these facts (replay) answer kNotSupported.
  // Thread-safety: as read().
  [[nodiscard]] virtual core::Result<HealthFacts> health_facts(int gpu);
  // True once a finite source (a replayed recording) has nothing more to give: a recording of it
  // can stop. Live backends never finish. Thread-safe.
  [[nodiscard]] virtual bool finished() const { return false; }
};

}  // namespace gpudoc::gpu
