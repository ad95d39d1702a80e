// gpudoc::gpu::Backend — the hardware abstraction every capability reads GPUs through.
//
// Three implementations: nvml/ (real GPUs, libnvidia-ml.so.1 loaded at run time), replay/ (a
// recorded trace played back as if live) and fake/ (scripted devices for tests, with injectable
// errors). Code above this layer never knows which one it has.
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
  std::string backend;                     // "nvml", "replay", "fake"
  std::string driver_version;              // "580.159.03"; empty when unknown
  std::string cuda_driver_version;         // CUDA version the driver supports: "13.0"; empty when unknown
  std::string nvml_version;                // empty when unknown
};

struct MigInstance {
  std::uint32_t gpu_instance_id = 0;
  std::uint32_t compute_instance_id = 0;
  std::string uuid;                        // "MIG-..."
  std::optional<std::uint64_t> memory_total_bytes;
  std::optional<std::uint32_t> multiprocessor_count;
};

// Facts that do not change while gpudoc runs. Unknown fields are absent.
struct DeviceInfo {
  int index = 0;
  std::string name;                        // "NVIDIA H200"
  std::string uuid;                        // "GPU-…"
  std::string pci_bus_id;                  // "00000000:18:00.0"
  std::optional<std::uint64_t> memory_total_bytes;
  std::optional<double> sm_clock_max_mhz;
  std::optional<double> memory_clock_max_mhz;
  std::optional<int> pcie_link_generation_max;
  std::optional<int> pcie_link_width_max;
  std::optional<double> power_limit_default_watts;
  std::optional<double> temperature_slowdown_celsius;
  std::optional<double> temperature_shutdown_celsius;
  std::optional<double> temperature_gpu_max_celsius;     // max operating temperature
  std::optional<double> temperature_memory_max_celsius;
  std::optional<int> compute_capability_major;
  std::optional<int> compute_capability_minor;
  std::optional<bool> mig_enabled;
  std::vector<MigInstance> mig_instances;
};

// One reading of one metric. time_unix_ns is when the sensor took it: for buffered sensors (the
// utilization buffer) the driver's own timestamp, otherwise the time of the read.
struct MetricSample {
  Metric metric;
  double value;
  std::int64_t time_unix_ns;
};

// One process on one GPU. Fields the backend could not read are absent.
struct ProcessSample {
  std::uint32_t pid = 0;
  std::int64_t time_unix_ns = 0;
  std::string name;                                      // executable name when readable
  std::optional<double> sm_utilization_percent;
  std::optional<double> memory_utilization_percent;
  std::optional<std::uint64_t> memory_used_bytes;
  std::optional<std::uint32_t> gpu_instance_id;          // MIG
  std::optional<std::uint32_t> compute_instance_id;      // MIG
};

struct GroupReading {
  std::vector<MetricSample> metrics;
  std::vector<ProcessSample> processes;                  // kProcesses only
};

// An asynchronous device event (XID error etc.).
struct DeviceEvent {
  int gpu = 0;
  std::int64_t time_unix_ns = 0;
  std::string kind;                                      // "xid"
  std::uint64_t code = 0;                                // the XID number for kind "xid"
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
};

}  // namespace gpudoc::gpu
