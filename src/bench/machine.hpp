// gpudoc::bench machine — the machine context recorded with every benchmark run, read from NVML
// through gpu::Backend: driver, clocks (current and maximum), power limit, temperature, PCIe link,
// and what the GPU did while each benchmark ran (clock range, power, temperature, and the
// clock-event "throttle" reasons seen), summarized from telemetry samples.
//
//   auto machine = bench::probe_machine(*backend, ctx.gpu->uuid);      // static facts + one reading
//   ... sample gpu::MetricGroup::kFast while the benchmarks run (telemetry::Sampler) ...
//   bench::attach_conditions(report, samples);    // per benchmark and for the whole run
//
// The CUDA device and the NVML device are matched by UUID: CUDA_VISIBLE_DEVICES and CUDA's device
// order do not change NVML's numbering. Pure over the Backend interface (tested with the fake);
// thread-safety: as the backend's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "gpu/backend.hpp"

namespace gpudoc::bench {

struct Report;  // engine.hpp

struct MachineInfo {
  std::string backend;              // "nvml"
  int nvml_index = 0;               // NVML's index of the benchmarked GPU
  std::string driver_version;       // "580.159.03"
  std::string cuda_driver_version;  // "13.0": the CUDA version the driver supports
  std::string nvml_version;
  std::string pci_bus_id;
  std::optional<double> sm_clock_mhz;  // current, when probed
  std::optional<double> sm_clock_max_mhz;
  std::optional<double> memory_clock_mhz;
  std::optional<double> memory_clock_max_mhz;
  std::optional<double> power_watts;
  std::optional<double> power_limit_watts;  // enforced
  std::optional<double> power_limit_default_watts;
  std::optional<double> temperature_celsius;
  std::optional<int> pcie_link_generation;  // current; NVML's reading (a double in telemetry) rounded once here
  std::optional<int> pcie_link_width;       // current lanes
  std::optional<int> pcie_link_generation_max;
  std::optional<int> pcie_link_width_max;
  std::optional<std::uint64_t> clock_event_reasons_mask;  // when probed
};

// Finds the backend's GPU whose UUID equals `uuid` and reads its facts, one kFast and one kSlow
// reading (a value the GPU does not report stays absent). Errors: kNotSupported when no GPU of the
// backend has that UUID; the backend's errors for system_info/device_count/device_info.
[[nodiscard]] core::Result<MachineInfo> probe_machine(gpu::Backend& backend, const std::string& uuid);
[[nodiscard]] nlohmann::json to_json(const MachineInfo& m);

struct Spread {
  double min = 0;
  double median = 0;
  double max = 0;
};

// What the GPU did during a time window, from telemetry samples of one GPU.
struct Conditions {
  std::size_t readings = 0;  // samples of any of the metrics below in the window
  std::optional<Spread> sm_clock_mhz;
  std::optional<Spread> memory_clock_mhz;
  std::optional<Spread> power_watts;
  std::optional<Spread> temperature_celsius;
  std::optional<std::uint64_t> clock_event_reasons_mask;  // OR of every reading; absent: none read
};

// Summarizes the samples whose time_unix_ns lies in [begin_unix_ns, end_unix_ns].
[[nodiscard]] Conditions summarize_conditions(const std::vector<gpu::MetricSample>& samples, std::int64_t begin_unix_ns,
                                              std::int64_t end_unix_ns);
[[nodiscard]] nlohmann::json to_json(const Conditions& c);
// "SM 1515–1530 MHz, ≤ 690 W, ≤ 62 °C, sw_power_cap" (slowdown reasons only; "" without readings).
[[nodiscard]] std::string describe(const Conditions& c);
// The clock-event reasons of `c` that hold the clocks down ("sw_power_cap,hw_thermal_slowdown"),
// "none" when readings show none, "" when no reasons were read.
[[nodiscard]] std::string slowdown_reasons(const Conditions& c);

// Fills each outcome's conditions from its [started, ended] window and the report's from the whole
// run. Samples are one GPU's (the benchmarked one).
void attach_conditions(Report& report, const std::vector<gpu::MetricSample>& samples);

}  // namespace gpudoc::bench
