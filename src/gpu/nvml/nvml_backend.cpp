#include "gpu/nvml/nvml_backend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/dynamic_library.hpp"
#include "core/log.hpp"
#include "core/process_tree.hpp"
#include "gpu/nvml/nvml_api.hpp"

namespace gpudoc::gpu {
namespace {

using namespace nvml;  // NOLINT(google-build-using-namespace): NVML's own names, file-local
using namespace std::chrono_literals;

// GPM computes rates between two samples; closer than this NVML returns 0 or NaN (measured on the
// H200; docs/methodology.md, the gpm group), so such a pair is never used.
constexpr core::Nanos kGpmMinInterval = 100ms;

// NVML reports GPM PCIe and NVLink traffic in MiB/s (nvml.h: "PCIe traffic from this GPU in
// MiB/sec", "NvLink read bandwidth for all links in MiB/sec"); gpudoc's metrics are bytes/s.
constexpr double kBytesPerMiB = 1024.0 * 1024.0;

struct GpmMetricMap {
  Metric metric;
  nvmlGpmMetricId_t id;
  double scale;  // NVML unit -> gpudoc unit
};
constexpr std::array<GpmMetricMap, 9> kGpmMetrics = {{
    {Metric::kGpmGraphicsActivityPercent, NVML_GPM_METRIC_GRAPHICS_UTIL, 1.0},
    {Metric::kGpmSmActivityPercent, NVML_GPM_METRIC_SM_UTIL, 1.0},
    {Metric::kGpmSmOccupancyPercent, NVML_GPM_METRIC_SM_OCCUPANCY, 1.0},
    {Metric::kGpmTensorActivityPercent, NVML_GPM_METRIC_ANY_TENSOR_UTIL, 1.0},
    {Metric::kGpmDramActivityPercent, NVML_GPM_METRIC_DRAM_BW_UTIL, 1.0},
    {Metric::kGpmPcieTxBytesPerSecond, NVML_GPM_METRIC_PCIE_TX_PER_SEC, kBytesPerMiB},
    {Metric::kGpmPcieRxBytesPerSecond, NVML_GPM_METRIC_PCIE_RX_PER_SEC, kBytesPerMiB},
    {Metric::kGpmNvlinkRxBytesPerSecond, NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, kBytesPerMiB},
    {Metric::kGpmNvlinkTxBytesPerSecond, NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, kBytesPerMiB},
}};
static_assert(kGpmMetrics.size() <= kGpmMetricSlots);

// The two utilization buffers, read the same way; index into DeviceState::util_last_seen_us.
struct UtilizationBuffer {
  Metric metric;
  nvmlSamplingType_t type;
};
constexpr std::array<UtilizationBuffer, 2> kUtilizationBuffers = {{
    {Metric::kGpuUtilizationPercent, NVML_GPU_UTILIZATION_SAMPLES},
    {Metric::kMemoryUtilizationPercent, NVML_MEMORY_UTILIZATION_SAMPLES},
}};

// Growth limits for the buffers NVML fills. Generous: a GPU has a few hundred processes at most and
// the utilization ring holds ~70-120 samples.
constexpr unsigned int kMinUtilizationCapacity = 128;
constexpr unsigned int kMaxUtilizationCapacity = 8192;
constexpr unsigned int kInitialProcessCapacity = 64;
constexpr unsigned int kMaxProcessCapacity = 65536;
constexpr int kMaxGrowAttempts = 6;
// Two utilization samples closer than this are one 200 ms sample read twice (see read_utilization).
constexpr unsigned long long kUtilizationRewriteUs = 50'000;
// Events drained per wait_events() call once the first one arrived.
constexpr int kMaxEventsPerWait = 256;
// Enough for every NVML string (names, UUIDs, versions: 96 bytes at most in nvml.h).
constexpr unsigned int kStringBuffer = 256;

[[nodiscard]] std::optional<double> value_as_double(nvmlValueType_t type, const nvmlValue_t& v) {
  switch (type) {
    case NVML_VALUE_TYPE_DOUBLE: return v.dVal;
    case NVML_VALUE_TYPE_UNSIGNED_INT: return static_cast<double>(v.uiVal);
    case NVML_VALUE_TYPE_UNSIGNED_LONG: return static_cast<double>(v.ulVal);
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: return static_cast<double>(v.ullVal);
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG: return static_cast<double>(v.sllVal);
    case NVML_VALUE_TYPE_SIGNED_INT: return static_cast<double>(v.siVal);
    case NVML_VALUE_TYPE_UNSIGNED_SHORT: return static_cast<double>(v.usVal);
  }
  return std::nullopt;  // a type newer than this mirror: not a value we can read honestly
}

[[nodiscard]] std::int64_t micros_to_nanos(unsigned long long us) { return static_cast<std::int64_t>(us) * 1000; }

[[nodiscard]] std::string c_string(const char* buf, std::size_t size) { return std::string(buf, strnlen(buf, size)); }

// Per-GPU state. Guarded by `mu`: the Backend contract has the caller serialize calls for one GPU,
// the lock makes capabilities()/device_info()/read() safe even when a caller does not.
struct DeviceState {
  std::mutex mu;
  nvmlDevice_t handle = nullptr;
  std::optional<core::Error> open_error;  // the handle could not be taken (lost, no permission)

  bool probed = false;
  MetricSet supported;
  bool process_list_supported = false;
  bool process_utilization_supported = false;

  // kUtilization: the newest driver timestamp returned so far, per buffer (µs since the epoch).
  std::array<unsigned long long, kUtilizationBuffers.size()> util_last_seen_us{};
  // The timestamp of the last sample handed out, per buffer (0: none yet).
  std::array<unsigned long long, kUtilizationBuffers.size()> util_last_returned_us{};
  unsigned int util_capacity = kMinUtilizationCapacity;
  unsigned int util_driver_entries = 0;  // how many samples the driver's ring holds (from the probe)
  std::array<bool, kUtilizationBuffers.size()> util_overrun_reported{};
  std::vector<nvmlSample_t> util_buf;

  // kGpm: two sample buffers; `gpm_prev` holds the last sample taken.
  nvmlGpmSample_t gpm_prev = nullptr;
  nvmlGpmSample_t gpm_next = nullptr;
  bool gpm_primed = false;
  core::MonoTime gpm_prev_time{};
  std::unique_ptr<nvmlGpmMetricsGet_t> gpm_get;  // 6.6 KB: on the heap, reused

  // kProcesses.
  unsigned long long process_util_last_seen_us = 0;
  unsigned int process_capacity = kInitialProcessCapacity;
  std::vector<nvmlProcessInfo_t> process_buf;
  unsigned int process_util_capacity = kInitialProcessCapacity;
  std::vector<nvmlProcessUtilizationSample_t> process_util_buf;

  std::optional<DeviceInfo> info_cache;
};

// Remembers the first lost-GPU error among calls whose other failures are only "field absent".
class LostCheck {
 public:
  LostCheck(const NvmlApi& api, int gpu) : api_(api), gpu_(gpu) {}
  // True on success. A GPU_IS_LOST / RESET_REQUIRED failure is kept for lost().
  bool ok(nvmlReturn_t rc, std::string_view what) {
    if (rc == NVML_SUCCESS) return true;
    if (!lost_) {
      core::Error e = nvml_error(api_, rc, fmt::format("GPU {}: {}", gpu_, what));
      if (e.kind() == core::ErrorKind::kGpuLost) lost_ = std::move(e);
    }
    return false;
  }
  [[nodiscard]] const std::optional<core::Error>& lost() const { return lost_; }

 private:
  const NvmlApi& api_;
  int gpu_;
  std::optional<core::Error> lost_;
};

// One group read in progress: the samples and the first failure of a metric that failed alone.
struct GroupRead {
  GroupReading reading;
  std::optional<core::Error> first_failure;
  bool any_success = false;
};

class NvmlBackend final : public Backend {
 public:
  NvmlBackend(std::unique_ptr<NvmlLibrary> library, const NvmlApi& api, core::Clock* clock)
      : library_(std::move(library)), api_(api), clock_(clock != nullptr ? *clock : own_clock_) {}

  NvmlBackend(const NvmlBackend&) = delete;
  NvmlBackend& operator=(const NvmlBackend&) = delete;

  ~NvmlBackend() override {
    if (event_set_ != nullptr) api_.nvmlEventSetFree(event_set_);
    for (auto& d : devices_) {
      if (api_.nvmlGpmSampleFree != nullptr) {
        if (d->gpm_prev != nullptr) api_.nvmlGpmSampleFree(d->gpm_prev);
        if (d->gpm_next != nullptr) api_.nvmlGpmSampleFree(d->gpm_next);
      }
    }
    if (initialized_) api_.nvmlShutdown();
  }

  [[nodiscard]] core::Status init();

  [[nodiscard]] std::string_view name() const override { return "nvml"; }
  [[nodiscard]] core::Result<SystemInfo> system_info() override;
  [[nodiscard]] core::Result<int> device_count() override { return static_cast<int>(devices_.size()); }
  [[nodiscard]] core::Result<DeviceInfo> device_info(int gpu) override;
  [[nodiscard]] core::Result<MetricSet> capabilities(int gpu) override;
  [[nodiscard]] core::Result<GroupReading> read(int gpu, MetricGroup group) override;
  [[nodiscard]] core::Result<std::vector<DeviceEvent>> wait_events(core::Nanos timeout) override;
  [[nodiscard]] core::Result<HealthFacts> health_facts(int gpu) override;

 private:
  [[nodiscard]] core::Result<DeviceState*> device(int gpu);
  // Probes every metric once (capabilities are cached in d.supported): a metric NVML answers
  // NOT_SUPPORTED for, or whose function this NVML lacks, is never polled.
  [[nodiscard]] core::Status probe(DeviceState& d, int gpu);
  // The parts of probe(), one per metric group.
  [[nodiscard]] core::Status probe_utilization(DeviceState& d, int gpu);
  [[nodiscard]] core::Status probe_fast(DeviceState& d, int gpu);
  [[nodiscard]] core::Status probe_gpm(DeviceState& d, int gpu);
  [[nodiscard]] core::Status probe_slow_and_energy(DeviceState& d, int gpu);
  [[nodiscard]] core::Status probe_processes(DeviceState& d, int gpu);
  [[nodiscard]] core::Status probe_errors(DeviceState& d, int gpu);
  // A symbol the loaded NVML lacks: this driver cannot read the metric at all.
  static void probe_missing(int gpu, Metric m, std::string_view symbol);
  // Records the probe answer for `m`: supported on success, dropped (logged once) when NVML says
  // not supported, an error when the GPU is lost. Other failures keep the metric: they may pass.
  [[nodiscard]] core::Status probe_result(DeviceState& d, int gpu, Metric m, nvmlReturn_t rc);
  // A metric failed during a read. Lost GPU: returned (the read fails). NOT_SUPPORTED: the metric
  // is dropped for good. Anything else: remembered and the metric is left out of this reading.
  [[nodiscard]] core::Status metric_failed(DeviceState& d, int gpu, Metric m, nvmlReturn_t rc, GroupRead& g);
  void drop(DeviceState& d, int gpu, Metric m, std::string_view why);
  void push(GroupRead& g, Metric m, double value, std::int64_t time_unix_ns) {
    g.reading.metrics.push_back(MetricSample{m, value, time_unix_ns});
    g.any_success = true;
  }
  [[nodiscard]] static bool has(const DeviceState& d, Metric m) { return d.supported.test(index(m)); }
  [[nodiscard]] auto clock_event_reasons_fn() const {
    return api_.nvmlDeviceGetCurrentClocksEventReasons != nullptr ? api_.nvmlDeviceGetCurrentClocksEventReasons
                                                                  : api_.nvmlDeviceGetCurrentClocksThrottleReasons;
  }
  // The GPU core temperature through nvmlDeviceGetTemperature (measured at 0.6 us on the H200) or,
  // where a driver no longer exports that deprecated symbol, nvmlDeviceGetTemperatureV.
  [[nodiscard]] nvmlReturn_t gpu_temperature(nvmlDevice_t h, double& celsius) const {
    if (api_.nvmlDeviceGetTemperature != nullptr) {
      unsigned int t = 0;
      const nvmlReturn_t rc = api_.nvmlDeviceGetTemperature(h, NVML_TEMPERATURE_GPU, &t);
      celsius = t;
      return rc;
    }
    nvmlTemperature_t t{};
    t.version = kNvmlTemperatureV1Version;
    t.sensorType = NVML_TEMPERATURE_GPU;
    const nvmlReturn_t rc = api_.nvmlDeviceGetTemperatureV(h, &t);
    celsius = t.temperature;
    return rc;
  }
  [[nodiscard]] auto running_processes_fn() const {
    return api_.nvmlDeviceGetComputeRunningProcesses_v3 != nullptr ? api_.nvmlDeviceGetComputeRunningProcesses_v3
                                                                   : api_.nvmlDeviceGetComputeRunningProcesses_v2;
  }

  // The parts of health_facts(); a lost GPU is left in `check`.
  void read_modes(nvmlDevice_t h, LostCheck& check, HealthFacts& f) const;
  void read_memory_errors(nvmlDevice_t h, LostCheck& check, HealthFacts& f) const;
  void read_limits(nvmlDevice_t h, LostCheck& check, HealthFacts& f) const;
  void read_nvlinks(nvmlDevice_t h, LostCheck& check, HealthFacts& f) const;
  void read_pcie_replays(nvmlDevice_t h, LostCheck& check, HealthFacts& f) const;
  // The counters of the kErrors group (memory errors, PCIe replays, NVLink errors) into `f`.
  void read_error_counters(nvmlDevice_t h, LostCheck& check, HealthFacts& f) const {
    read_memory_errors(h, check, f);
    read_pcie_replays(h, check, f);
    read_nvlinks(h, check, f);
  }

  [[nodiscard]] core::Status read_utilization(DeviceState& d, int gpu, GroupRead& g);
  [[nodiscard]] core::Status read_fast(DeviceState& d, int gpu, GroupRead& g);
  [[nodiscard]] core::Status read_gpm(DeviceState& d, int gpu, GroupRead& g);
  [[nodiscard]] core::Status read_slow(DeviceState& d, int gpu, GroupRead& g);
  [[nodiscard]] core::Status read_energy(DeviceState& d, int gpu, GroupRead& g);
  [[nodiscard]] core::Status read_processes(DeviceState& d, int gpu, GroupRead& g);
  [[nodiscard]] core::Status read_errors(DeviceState& d, int gpu, GroupRead& g);
  // Lists the MIG devices; a lost GPU is left in `check` for device_info to return.
  void read_mig_instances(DeviceState& d, DeviceInfo& out, LostCheck& check);
  void setup_events();
  [[nodiscard]] int gpu_of(nvmlDevice_t handle) const;

  std::unique_ptr<NvmlLibrary> library_;  // null when a table was injected; outlives every call
  const NvmlApi& api_;
  core::SystemClock own_clock_;
  core::Clock& clock_;
  bool initialized_ = false;
  std::vector<std::unique_ptr<DeviceState>> devices_;  // fixed after init()

  std::mutex gpm_mu_;     // every nvmlGpm* call, whatever the GPU (see read_gpm)
  std::mutex events_mu_;  // wait_events() is one waiter at a time
  bool events_set_up_ = false;
  nvmlEventSet_t event_set_ = nullptr;
};

core::Status NvmlBackend::init() {
  if (const nvmlReturn_t rc = api_.nvmlInit_v2(); rc != NVML_SUCCESS) {
    // Whatever NVML's reason, a failing init means this machine cannot be read live.
    return core::Error(core::ErrorKind::kEnvironment,
                       fmt::format("{}; {}", nvml_error(api_, rc, "initializing NVML").message(), kWithoutNvml));
  }
  initialized_ = true;
  unsigned int count = 0;
  if (const nvmlReturn_t rc = api_.nvmlDeviceGetCount_v2(&count); rc != NVML_SUCCESS) {
    return nvml_error(api_, rc, "counting GPUs");
  }
  // Buffered sensors return only samples newer than this: a reading covers the time gpudoc watched,
  // not the ~14 s of history the driver happened to hold when it opened (same for every device).
  const auto open_us = static_cast<unsigned long long>(std::max<std::int64_t>(clock_.unix_now_ns(), 0) / 1000);
  devices_.reserve(count);
  for (unsigned int i = 0; i < count; ++i) {
    auto d = std::make_unique<DeviceState>();
    if (const nvmlReturn_t rc = api_.nvmlDeviceGetHandleByIndex_v2(i, &d->handle); rc != NVML_SUCCESS) {
      d->open_error = nvml_error(api_, rc, fmt::format("GPU {}: getting its NVML handle", i));
      core::log_warn("{}", d->open_error->message());
    }
    d->util_last_seen_us.fill(open_us);
    d->process_util_last_seen_us = open_us;
    devices_.push_back(std::move(d));
  }
  return core::ok_status();
}

core::Result<DeviceState*> NvmlBackend::device(int gpu) {
  if (gpu < 0 || static_cast<std::size_t>(gpu) >= devices_.size()) {
    return core::Error(core::ErrorKind::kBadInput,
                       fmt::format("GPU {} does not exist (this machine has {})", gpu, devices_.size()));
  }
  DeviceState* d = devices_[static_cast<std::size_t>(gpu)].get();
  if (d->open_error) return *d->open_error;
  return d;
}

void NvmlBackend::drop(DeviceState& d, int gpu, Metric m, std::string_view why) {
  if (!has(d, m)) return;
  d.supported.reset(index(m));
  core::log_debug("GPU {}: {} is not supported ({}); not polling it again", gpu, info(m).name, why);
}

core::Status NvmlBackend::probe_result(DeviceState& d, int gpu, Metric m, nvmlReturn_t rc) {
  if (rc == NVML_SUCCESS) {
    d.supported.set(index(m));
    return core::ok_status();
  }
  core::Error e = nvml_error(api_, rc, fmt::format("GPU {}: probing {}", gpu, info(m).name));
  if (e.kind() == core::ErrorKind::kGpuLost) return e;
  if (e.kind() == core::ErrorKind::kNotSupported) {
    core::log_debug("GPU {}: {} is not supported ({}); not polling it", gpu, info(m).name, e.message());
    return core::ok_status();
  }
  // Permission, a transient driver error...: keep it; each read leaves it out while it fails.
  core::log_debug("{}; will try again when reading", e.message());
  d.supported.set(index(m));
  return core::ok_status();
}

core::Status NvmlBackend::metric_failed(DeviceState& d, int gpu, Metric m, nvmlReturn_t rc, GroupRead& g) {
  core::Error e = nvml_error(api_, rc, fmt::format("GPU {}: reading {}", gpu, info(m).name));
  switch (e.kind()) {
    case core::ErrorKind::kGpuLost: return e;
    case core::ErrorKind::kNotSupported: drop(d, gpu, m, e.message()); break;
    default:
      core::log_debug("{}; left out of this reading", e.message());
      if (!g.first_failure) g.first_failure = std::move(e);
      break;
  }
  return core::ok_status();
}

core::Status NvmlBackend::probe(DeviceState& d, int gpu) {
  if (d.probed) return core::ok_status();
  if (auto s = probe_utilization(d, gpu); !s) return s;
  if (auto s = probe_fast(d, gpu); !s) return s;
  if (auto s = probe_gpm(d, gpu); !s) return s;
  if (auto s = probe_slow_and_energy(d, gpu); !s) return s;
  if (auto s = probe_processes(d, gpu); !s) return s;
  if (auto s = probe_errors(d, gpu); !s) return s;
  d.probed = true;
  return core::ok_status();
}

void NvmlBackend::probe_missing(int gpu, Metric m, std::string_view symbol) {
  core::log_debug("GPU {}: {} is not supported (this NVML lacks {}); not polling it", gpu, info(m).name, symbol);
}

#define GPUDOC_PROBE(metric, call) \
  if (auto s = probe_result(d, gpu, metric, (call)); !s) return s.error();

// kUtilization: asking with no buffer returns how many samples the driver keeps.
core::Status NvmlBackend::probe_utilization(DeviceState& d, int gpu) {
  for (const auto& b : kUtilizationBuffers) {
    if (api_.nvmlDeviceGetSamples == nullptr) {
      probe_missing(gpu, b.metric, "nvmlDeviceGetSamples");
      continue;
    }
    nvmlValueType_t type{};
    unsigned int count = 0;
    nvmlReturn_t rc = api_.nvmlDeviceGetSamples(d.handle, b.type, 0, &type, &count, nullptr);
    // NOT_FOUND: the buffer is empty right now; INSUFFICIENT_SIZE: some drivers' answer to "how
    // many" — both mean the call works.
    if (rc == NVML_ERROR_NOT_FOUND || rc == NVML_ERROR_INSUFFICIENT_SIZE) rc = NVML_SUCCESS;
    GPUDOC_PROBE(b.metric, rc);
    d.util_capacity = std::clamp(count + 16, kMinUtilizationCapacity, kMaxUtilizationCapacity);
    d.util_driver_entries = count;
  }
  return core::ok_status();
}

core::Status NvmlBackend::probe_fast(DeviceState& d, int gpu) {
  const nvmlDevice_t h = d.handle;
  unsigned int value = 0;
  if (api_.nvmlDeviceGetPowerUsage != nullptr) {
    GPUDOC_PROBE(Metric::kPowerWatts, api_.nvmlDeviceGetPowerUsage(h, &value));
  } else {
    probe_missing(gpu, Metric::kPowerWatts, "nvmlDeviceGetPowerUsage");
  }
  if (api_.nvmlDeviceGetClockInfo != nullptr) {
    GPUDOC_PROBE(Metric::kSmClockMhz, api_.nvmlDeviceGetClockInfo(h, NVML_CLOCK_SM, &value));
    GPUDOC_PROBE(Metric::kMemoryClockMhz, api_.nvmlDeviceGetClockInfo(h, NVML_CLOCK_MEM, &value));
  } else {
    probe_missing(gpu, Metric::kSmClockMhz, "nvmlDeviceGetClockInfo");
    probe_missing(gpu, Metric::kMemoryClockMhz, "nvmlDeviceGetClockInfo");
  }
  if (api_.nvmlDeviceGetTemperature != nullptr || api_.nvmlDeviceGetTemperatureV != nullptr) {
    double celsius = 0;
    GPUDOC_PROBE(Metric::kGpuTemperatureCelsius, gpu_temperature(h, celsius));
  } else {
    probe_missing(gpu, Metric::kGpuTemperatureCelsius, "nvmlDeviceGetTemperature");
  }
  if (auto fn = clock_event_reasons_fn(); fn != nullptr) {
    unsigned long long mask = 0;
    GPUDOC_PROBE(Metric::kClockEventReasonsMask, fn(h, &mask));
  } else {
    probe_missing(gpu, Metric::kClockEventReasonsMask, "nvmlDeviceGetCurrentClocksEventReasons");
  }
  if (api_.nvmlDeviceGetMemoryInfo != nullptr) {
    nvmlMemory_t mem{};
    const nvmlReturn_t rc = api_.nvmlDeviceGetMemoryInfo(h, &mem);
    GPUDOC_PROBE(Metric::kMemoryUsedBytes, rc);
    GPUDOC_PROBE(Metric::kMemoryFreeBytes, rc);
  } else {
    probe_missing(gpu, Metric::kMemoryUsedBytes, "nvmlDeviceGetMemoryInfo");
    probe_missing(gpu, Metric::kMemoryFreeBytes, "nvmlDeviceGetMemoryInfo");
  }
  return core::ok_status();
}

// kGpm: the device says whether it has GPM; then every GPM metric is tried on the first read and
// a per-metric NOT_SUPPORTED drops just that one.
core::Status NvmlBackend::probe_gpm(DeviceState& d, int gpu) {
  const bool gpm_symbols = api_.nvmlGpmQueryDeviceSupport != nullptr && api_.nvmlGpmSampleAlloc != nullptr &&
                           api_.nvmlGpmSampleFree != nullptr && api_.nvmlGpmSampleGet != nullptr &&
                           api_.nvmlGpmMetricsGet != nullptr;
  if (!gpm_symbols) {
    core::log_debug("GPU {}: GPM metrics are not supported (this NVML lacks the nvmlGpm* functions)", gpu);
    return core::ok_status();
  }
  std::lock_guard gpm_lock(gpm_mu_);
  nvmlGpmSupport_t support{};
  support.version = NVML_GPM_SUPPORT_VERSION;
  nvmlReturn_t rc = api_.nvmlGpmQueryDeviceSupport(d.handle, &support);
  if (rc == NVML_SUCCESS && support.isSupportedDevice == 0) rc = NVML_ERROR_NOT_SUPPORTED;
  if (rc == NVML_SUCCESS && d.gpm_prev == nullptr) rc = api_.nvmlGpmSampleAlloc(&d.gpm_prev);
  if (rc == NVML_SUCCESS && d.gpm_next == nullptr) rc = api_.nvmlGpmSampleAlloc(&d.gpm_next);
  if (rc == NVML_SUCCESS) d.gpm_get = std::make_unique<nvmlGpmMetricsGet_t>();
  for (const auto& g : kGpmMetrics) GPUDOC_PROBE(g.metric, rc);
  return core::ok_status();
}

// kSlow, and kEnergy (~4 ms of CPU, once).
core::Status NvmlBackend::probe_slow_and_energy(DeviceState& d, int gpu) {
  const nvmlDevice_t h = d.handle;
  unsigned int value = 0;
  if (api_.nvmlDeviceGetFieldValues != nullptr) {
    nvmlFieldValue_t field{};
    field.fieldId = NVML_FI_DEV_MEMORY_TEMP;
    nvmlReturn_t rc = api_.nvmlDeviceGetFieldValues(h, 1, &field);
    if (rc == NVML_SUCCESS) rc = field.nvmlReturn;
    GPUDOC_PROBE(Metric::kMemoryTemperatureCelsius, rc);
  } else {
    probe_missing(gpu, Metric::kMemoryTemperatureCelsius, "nvmlDeviceGetFieldValues");
  }
  if (api_.nvmlDeviceGetCurrPcieLinkGeneration != nullptr) {
    GPUDOC_PROBE(Metric::kPcieLinkGeneration, api_.nvmlDeviceGetCurrPcieLinkGeneration(h, &value));
  } else {
    probe_missing(gpu, Metric::kPcieLinkGeneration, "nvmlDeviceGetCurrPcieLinkGeneration");
  }
  if (api_.nvmlDeviceGetCurrPcieLinkWidth != nullptr) {
    GPUDOC_PROBE(Metric::kPcieLinkWidth, api_.nvmlDeviceGetCurrPcieLinkWidth(h, &value));
  } else {
    probe_missing(gpu, Metric::kPcieLinkWidth, "nvmlDeviceGetCurrPcieLinkWidth");
  }
  if (api_.nvmlDeviceGetEnforcedPowerLimit != nullptr) {
    GPUDOC_PROBE(Metric::kPowerLimitWatts, api_.nvmlDeviceGetEnforcedPowerLimit(h, &value));
  } else {
    probe_missing(gpu, Metric::kPowerLimitWatts, "nvmlDeviceGetEnforcedPowerLimit");
  }
  if (api_.nvmlDeviceGetTotalEnergyConsumption != nullptr) {
    unsigned long long energy = 0;
    GPUDOC_PROBE(Metric::kEnergyJoules, api_.nvmlDeviceGetTotalEnergyConsumption(h, &energy));
  } else {
    probe_missing(gpu, Metric::kEnergyJoules, "nvmlDeviceGetTotalEnergyConsumption");
  }
  return core::ok_status();
}

#undef GPUDOC_PROBE

// kProcesses has no entries in the metric catalog; its two sources are tracked by flag.
core::Status NvmlBackend::probe_processes(DeviceState& d, int gpu) {
  const auto process_probe = [&](nvmlReturn_t rc, std::string_view what, bool& flag) -> core::Status {
    if (rc == NVML_SUCCESS || rc == NVML_ERROR_INSUFFICIENT_SIZE || rc == NVML_ERROR_NOT_FOUND) {
      flag = true;
      return core::ok_status();
    }
    core::Error e = nvml_error(api_, rc, fmt::format("GPU {}: probing {}", gpu, what));
    if (e.kind() == core::ErrorKind::kGpuLost) return e;
    flag = e.kind() != core::ErrorKind::kNotSupported;
    core::log_debug("{}", e.message());
    return core::ok_status();
  };
  if (auto fn = running_processes_fn(); fn != nullptr) {
    unsigned int count = 0;
    if (auto s = process_probe(fn(d.handle, &count, nullptr), "the process list", d.process_list_supported); !s) {
      return s.error();
    }
  }
  if (api_.nvmlDeviceGetProcessUtilization != nullptr) {
    unsigned int count = 0;
    if (auto s = process_probe(api_.nvmlDeviceGetProcessUtilization(d.handle, nullptr, &count, 0),
                               "per-process utilization", d.process_utilization_supported);
        !s) {
      return s.error();
    }
  }
  return core::ok_status();
}

// kErrors: one read of every counter; those NVML answers are the group's metrics.
core::Status NvmlBackend::probe_errors(DeviceState& d, int gpu) {
  LostCheck check(api_, gpu);
  HealthFacts f;
  read_error_counters(d.handle, check, f);
  if (check.lost()) return *check.lost();
  for (const auto& sample : error_counter_samples(f, 0)) d.supported.set(index(sample.metric));
  return core::ok_status();
}

core::Result<MetricSet> NvmlBackend::capabilities(int gpu) {
  auto dev = device(gpu);
  if (!dev) return dev.error();
  DeviceState& d = **dev;
  std::lock_guard lock(d.mu);
  if (auto s = probe(d, gpu); !s) return s.error();
  return d.supported;
}

core::Result<GroupReading> NvmlBackend::read(int gpu, MetricGroup group) {
  auto dev = device(gpu);
  if (!dev) return dev.error();
  DeviceState& d = **dev;
  std::lock_guard lock(d.mu);
  if (auto s = probe(d, gpu); !s) return s.error();

  const bool any_supported = group == MetricGroup::kProcesses
                                 ? (d.process_list_supported || d.process_utilization_supported)
                                 : (d.supported & metrics_in(group)).any();
  if (!any_supported) {
    return core::Error(core::ErrorKind::kNotSupported,
                       fmt::format("GPU {}: nothing in the '{}' group is supported", gpu, info(group).name));
  }

  GroupRead g;
  core::Status s = core::ok_status();
  switch (group) {
    case MetricGroup::kUtilization: s = read_utilization(d, gpu, g); break;
    case MetricGroup::kFast: s = read_fast(d, gpu, g); break;
    case MetricGroup::kGpm: s = read_gpm(d, gpu, g); break;
    case MetricGroup::kSlow: s = read_slow(d, gpu, g); break;
    case MetricGroup::kEnergy: s = read_energy(d, gpu, g); break;
    case MetricGroup::kProcesses: s = read_processes(d, gpu, g); break;
    case MetricGroup::kErrors: s = read_errors(d, gpu, g); break;
  }
  if (!s) return s.error();
  // Every attempted read failed: say why instead of returning an empty reading that looks idle.
  if (!g.any_success && g.first_failure) return *g.first_failure;
  return std::move(g.reading);
}

core::Status NvmlBackend::read_utilization(DeviceState& d, int gpu, GroupRead& g) {
  for (std::size_t i = 0; i < kUtilizationBuffers.size(); ++i) {
    const auto& b = kUtilizationBuffers[i];
    if (!has(d, b.metric)) continue;
    const unsigned long long last_seen = d.util_last_seen_us[i];
    nvmlValueType_t type{};
    unsigned int count = 0;
    nvmlReturn_t rc = NVML_SUCCESS;
    // Read everything newer than last_seen. A full buffer may mean more was waiting: grow and ask
    // again from the same timestamp (nothing is consumed by reading).
    for (int attempt = 0; attempt < kMaxGrowAttempts; ++attempt) {
      if (d.util_buf.size() < d.util_capacity) d.util_buf.resize(d.util_capacity);
      count = d.util_capacity;
      rc = api_.nvmlDeviceGetSamples(d.handle, b.type, last_seen, &type, &count, d.util_buf.data());
      if (rc != NVML_SUCCESS || count < d.util_capacity || d.util_capacity >= kMaxUtilizationCapacity) break;
      d.util_capacity = std::min(d.util_capacity * 2, kMaxUtilizationCapacity);
    }
    if (rc == NVML_ERROR_NOT_FOUND) {  // no sample newer than last_seen: nothing new, not a failure
      g.any_success = true;
      continue;
    }
    if (rc != NVML_SUCCESS) {
      if (auto s = metric_failed(d, gpu, b.metric, rc, g); !s) return s;
      continue;
    }
    g.any_success = true;
    const auto end = d.util_buf.begin() + std::min(count, d.util_capacity);
    // The driver keeps a ring; do not assume it hands samples back in time order.
    std::sort(d.util_buf.begin(), end,
              [](const nvmlSample_t& a, const nvmlSample_t& b2) { return a.timeStamp < b2.timeStamp; });
    unsigned long long newest = last_seen;
    // Every entry of the driver's ring is newer than the last one read: the ring went round at least
    // once between two reads, and the oldest samples were overwritten before gpudoc saw them.
    const auto fresh =
        std::count_if(d.util_buf.begin(), end, [&](const nvmlSample_t& s) { return s.timeStamp > last_seen; });
    if (d.util_driver_entries >= 16 && fresh >= static_cast<std::ptrdiff_t>(d.util_driver_entries) &&
        !d.util_overrun_reported[i]) {
      d.util_overrun_reported[i] = true;
      core::log_warn(
          "GPU {}: the driver's {} ring ({} samples) filled up between two reads, so samples were lost; "
          "read it more often, e.g. --period utilization=5000",
          gpu, info(b.metric).name, d.util_driver_entries);
    }
    for (auto it = d.util_buf.begin(); it != end; ++it) {
      // Strictly newer than the last one returned: nothing twice, even if the driver overlaps.
      if (it->timeStamp <= newest) continue;
      newest = it->timeStamp;
      // The driver rewrites its newest entry while that sample period is still open: read at that
      // moment, the same 200 ms sample comes back on the next read with a timestamp a fraction of a
      // millisecond later (seen on an H200, driver 580.159.04: 0.26 ms and 0.17 ms apart). A sample
      // that close to the last one returned is that rewrite, not a new period: skip it.
      if (d.util_last_returned_us[i] != 0 && it->timeStamp - d.util_last_returned_us[i] < kUtilizationRewriteUs)
        continue;
      const auto v = value_as_double(type, it->sampleValue);
      if (!v) continue;
      push(g, b.metric, *v, micros_to_nanos(it->timeStamp));
      d.util_last_returned_us[i] = it->timeStamp;
    }
    d.util_last_seen_us[i] = newest;
  }
  return core::ok_status();
}

core::Status NvmlBackend::read_fast(DeviceState& d, int gpu, GroupRead& g) {
  const std::int64_t now = clock_.unix_now_ns();
  const nvmlDevice_t h = d.handle;
  unsigned int value = 0;
#define GPUDOC_READ(metric, call, expr)                             \
  if (has(d, metric)) {                                             \
    if (const nvmlReturn_t rc = (call); rc == NVML_SUCCESS) {       \
      push(g, metric, (expr), now);                                 \
    } else if (auto s = metric_failed(d, gpu, metric, rc, g); !s) { \
      return s;                                                     \
    }                                                               \
  }
  // NVML reports power in milliwatts.
  GPUDOC_READ(Metric::kPowerWatts, api_.nvmlDeviceGetPowerUsage(h, &value), value / 1000.0)
  GPUDOC_READ(Metric::kSmClockMhz, api_.nvmlDeviceGetClockInfo(h, NVML_CLOCK_SM, &value), static_cast<double>(value))
  GPUDOC_READ(Metric::kMemoryClockMhz, api_.nvmlDeviceGetClockInfo(h, NVML_CLOCK_MEM, &value),
              static_cast<double>(value))
  double celsius = 0;
  GPUDOC_READ(Metric::kGpuTemperatureCelsius, gpu_temperature(h, celsius), celsius)
  unsigned long long mask = 0;
  GPUDOC_READ(Metric::kClockEventReasonsMask, clock_event_reasons_fn()(h, &mask), static_cast<double>(mask))
  return core::ok_status();
}

core::Status NvmlBackend::read_slow(DeviceState& d, int gpu, GroupRead& g) {
  const std::int64_t now = clock_.unix_now_ns();
  const nvmlDevice_t h = d.handle;
  unsigned int value = 0;
  if (has(d, Metric::kMemoryTemperatureCelsius)) {
    nvmlFieldValue_t field{};
    field.fieldId = NVML_FI_DEV_MEMORY_TEMP;
    nvmlReturn_t rc = api_.nvmlDeviceGetFieldValues(h, 1, &field);
    if (rc == NVML_SUCCESS) rc = field.nvmlReturn;  // the per-field status decides if value is valid
    std::optional<double> v;
    if (rc == NVML_SUCCESS) v = value_as_double(field.valueType, field.value);
    if (v) {
      // The field carries the time the driver took it.
      push(g, Metric::kMemoryTemperatureCelsius, *v,
           field.timestamp > 0 ? static_cast<std::int64_t>(field.timestamp) * 1000 : now);
    } else if (rc != NVML_SUCCESS) {
      if (auto s = metric_failed(d, gpu, Metric::kMemoryTemperatureCelsius, rc, g); !s) return s;
    }
  }
  // Memory in use is in the slow group: nvmlDeviceGetMemoryInfo costs ~30 us of CPU on an H200
  // (five times the power or clock reads), and allocations show at 1 s as well as at 100 ms.
  if (has(d, Metric::kMemoryUsedBytes) || has(d, Metric::kMemoryFreeBytes)) {
    nvmlMemory_t mem{};
    if (const nvmlReturn_t rc = api_.nvmlDeviceGetMemoryInfo(h, &mem); rc == NVML_SUCCESS) {
      if (has(d, Metric::kMemoryUsedBytes)) push(g, Metric::kMemoryUsedBytes, static_cast<double>(mem.used), now);
      if (has(d, Metric::kMemoryFreeBytes)) push(g, Metric::kMemoryFreeBytes, static_cast<double>(mem.free), now);
    } else {
      for (Metric m : {Metric::kMemoryUsedBytes, Metric::kMemoryFreeBytes}) {
        if (!has(d, m)) continue;
        if (auto s = metric_failed(d, gpu, m, rc, g); !s) return s;
      }
    }
  }
  GPUDOC_READ(Metric::kPcieLinkGeneration, api_.nvmlDeviceGetCurrPcieLinkGeneration(h, &value),
              static_cast<double>(value))
  GPUDOC_READ(Metric::kPcieLinkWidth, api_.nvmlDeviceGetCurrPcieLinkWidth(h, &value), static_cast<double>(value))
  // Milliwatts.
  GPUDOC_READ(Metric::kPowerLimitWatts, api_.nvmlDeviceGetEnforcedPowerLimit(h, &value), value / 1000.0)
  return core::ok_status();
}

core::Status NvmlBackend::read_energy(DeviceState& d, int gpu, GroupRead& g) {
  const std::int64_t now = clock_.unix_now_ns();
  unsigned long long energy = 0;
  // Millijoules since the driver loaded.
  GPUDOC_READ(Metric::kEnergyJoules, api_.nvmlDeviceGetTotalEnergyConsumption(d.handle, &energy),
              static_cast<double>(energy) / 1000.0)
  return core::ok_status();
}
#undef GPUDOC_READ

core::Status NvmlBackend::read_gpm(DeviceState& d, int gpu, GroupRead& g) {
  // GPM calls for different GPUs from different threads crashed gpudoc (SIGSEGV, 5 of 5 runs) on a
  // 2-GPU H200 with driver 580.159.04, and never with GPM off (0 of 5): NVML's GPM is treated as
  // not thread-safe across devices, and every GPM call in this process goes through one lock.
  std::lock_guard gpm_lock(gpm_mu_);
  // A failure of the sample calls concerns the whole group.
  const auto group_failed = [&](nvmlReturn_t rc, std::string_view what) -> core::Status {
    core::Error e = nvml_error(api_, rc, fmt::format("GPU {}: {}", gpu, what));
    if (e.kind() == core::ErrorKind::kNotSupported) {
      for (const auto& m : kGpmMetrics) drop(d, gpu, m.metric, e.message());
    }
    return e;
  };
  const core::MonoTime now = clock_.now();
  if (!d.gpm_primed) {
    // The first call only takes the sample the next one is measured against.
    if (const nvmlReturn_t rc = api_.nvmlGpmSampleGet(d.handle, d.gpm_prev); rc != NVML_SUCCESS) {
      return group_failed(rc, "taking a GPM sample");
    }
    d.gpm_primed = true;
    d.gpm_prev_time = now;
    g.any_success = true;
    return core::ok_status();
  }
  if (now - d.gpm_prev_time < kGpmMinInterval) {
    // Too close to the previous sample for a meaningful rate: report nothing and keep the old sample
    // so the next call measures a longer window.
    g.any_success = true;
    return core::ok_status();
  }
  if (const nvmlReturn_t rc = api_.nvmlGpmSampleGet(d.handle, d.gpm_next); rc != NVML_SUCCESS) {
    return group_failed(rc, "taking a GPM sample");
  }
  const std::int64_t now_unix = clock_.unix_now_ns();
  nvmlGpmMetricsGet_t& mg = *d.gpm_get;
  mg.version = NVML_GPM_METRICS_GET_VERSION;
  mg.sample1 = d.gpm_prev;
  mg.sample2 = d.gpm_next;
  std::array<const GpmMetricMap*, kGpmMetrics.size()> asked{};
  unsigned int n = 0;
  for (const auto& m : kGpmMetrics) {
    if (!has(d, m.metric)) continue;
    mg.metrics[n] = nvmlGpmMetric_t{};
    mg.metrics[n].metricId = static_cast<unsigned int>(m.id);
    asked[n++] = &m;
  }
  mg.numMetrics = n;
  const nvmlReturn_t rc = api_.nvmlGpmMetricsGet(&mg);
  // The new sample starts the next window whether or not the metrics could be computed.
  std::swap(d.gpm_prev, d.gpm_next);
  d.gpm_prev_time = now;
  if (rc != NVML_SUCCESS) return group_failed(rc, "computing GPM metrics");
  for (unsigned int i = 0; i < n; ++i) {
    const nvmlGpmMetric_t& r = mg.metrics[i];
    const Metric metric = asked[i]->metric;
    if (r.nvmlReturn != NVML_SUCCESS) {
      if (auto s = metric_failed(d, gpu, metric, r.nvmlReturn, g); !s) return s;
      continue;
    }
    if (std::isnan(r.value) || std::isinf(r.value)) continue;  // no honest value this window
    push(g, metric, r.value * asked[i]->scale, now_unix);
  }
  g.any_success = true;  // a window whose values were all NaN is "nothing to report", not a failure
  return core::ok_status();
}

// kErrors: the counters change rarely; read on a slow period (the group's default: 30 s).
core::Status NvmlBackend::read_errors(DeviceState& d, int gpu, GroupRead& g) {
  LostCheck check(api_, gpu);
  HealthFacts f;
  read_error_counters(d.handle, check, f);
  if (check.lost()) return *check.lost();
  for (const auto& sample : error_counter_samples(f, clock_.unix_now_ns()))
    if (has(d, sample.metric)) push(g, sample.metric, sample.value, sample.time_unix_ns);
  if (!g.any_success) {
    g.first_failure = core::Error(core::ErrorKind::kEnvironment,
                                  fmt::format("GPU {}: none of the error counters could be read", gpu));
  }
  return core::ok_status();
}

core::Status NvmlBackend::read_processes(DeviceState& d, int gpu, GroupRead& g) {
  const std::int64_t now = clock_.unix_now_ns();
  std::vector<ProcessSample>& out = g.reading.processes;
  std::unordered_map<std::uint32_t, std::size_t> by_pid;

  const auto failed = [&](nvmlReturn_t rc, std::string_view what, bool& flag) -> core::Status {
    core::Error e = nvml_error(api_, rc, fmt::format("GPU {}: reading {}", gpu, what));
    if (e.kind() == core::ErrorKind::kGpuLost) return e;
    if (e.kind() == core::ErrorKind::kNotSupported) {
      flag = false;
      core::log_debug("{}; not polling it again", e.message());
    } else if (!g.first_failure) {
      core::log_debug("{}", e.message());
      g.first_failure = std::move(e);
    }
    return core::ok_status();
  };

  if (d.process_list_supported) {
    auto fn = running_processes_fn();
    unsigned int count = 0;
    nvmlReturn_t rc = NVML_SUCCESS;
    for (int attempt = 0; attempt < kMaxGrowAttempts; ++attempt) {
      // One third more room than we declare: should a driver ever write the 32-byte entries of the
      // CUDA 12.0 header's nvmlProcessInfo_t, it still stays inside our buffer.
      const std::size_t room = d.process_capacity + d.process_capacity / 3 + 1;
      if (d.process_buf.size() < room) d.process_buf.resize(room);
      count = d.process_capacity;
      rc = fn(d.handle, &count, d.process_buf.data());
      if (rc != NVML_ERROR_INSUFFICIENT_SIZE || d.process_capacity >= kMaxProcessCapacity) break;
      // NVML wrote the number it needs into count; leave room for processes starting meanwhile.
      d.process_capacity = std::min(std::max(count + 8, d.process_capacity * 2), kMaxProcessCapacity);
    }
    if (rc == NVML_SUCCESS) {
      g.any_success = true;
      for (unsigned int i = 0; i < std::min(count, d.process_capacity); ++i) {
        const nvmlProcessInfo_t& p = d.process_buf[i];
        ProcessSample s;
        s.pid = p.pid;
        s.time_unix_ns = now;
        if (p.usedGpuMemory != NVML_VALUE_NOT_AVAILABLE_ULL) s.memory_used_bytes = p.usedGpuMemory;
        if (p.gpuInstanceId != kNvmlInvalidInstanceId) s.gpu_instance_id = p.gpuInstanceId;
        if (p.computeInstanceId != kNvmlInvalidInstanceId) s.compute_instance_id = p.computeInstanceId;
        by_pid.emplace(s.pid, out.size());
        out.push_back(std::move(s));
      }
    } else if (auto s = failed(rc, "the process list", d.process_list_supported); !s) {
      return s;
    }
  }

  if (d.process_utilization_supported) {
    unsigned int count = 0;
    nvmlReturn_t rc = NVML_SUCCESS;
    const unsigned long long last_seen = d.process_util_last_seen_us;
    for (int attempt = 0; attempt < kMaxGrowAttempts; ++attempt) {
      if (d.process_util_buf.size() < d.process_util_capacity) d.process_util_buf.resize(d.process_util_capacity);
      count = d.process_util_capacity;
      rc = api_.nvmlDeviceGetProcessUtilization(d.handle, d.process_util_buf.data(), &count, last_seen);
      if (rc != NVML_ERROR_INSUFFICIENT_SIZE || d.process_util_capacity >= kMaxProcessCapacity) break;
      d.process_util_capacity = std::min(std::max(count + 8, d.process_util_capacity * 2), kMaxProcessCapacity);
    }
    if (rc == NVML_SUCCESS) {
      g.any_success = true;
      // NVML returns one sample per process per ~200 ms since last_seen: each becomes its own
      // observation with the driver's timestamp (none lost, none repeated), carrying the memory
      // figure of the process list read just before. Contention shows in these per-sample turns.
      std::vector<ProcessSample> samples;
      std::unordered_map<std::uint32_t, bool> sampled;
      unsigned long long newest = last_seen;
      for (unsigned int i = 0; i < std::min(count, d.process_util_capacity); ++i) {
        const nvmlProcessUtilizationSample_t& u = d.process_util_buf[i];
        if (u.timeStamp <= last_seen) continue;  // already returned
        ProcessSample p;
        if (auto it = by_pid.find(u.pid); it != by_pid.end()) p = out[it->second];
        p.pid = u.pid;
        p.sm_utilization_percent = u.smUtil;
        p.memory_utilization_percent = u.memUtil;
        p.time_unix_ns = micros_to_nanos(u.timeStamp);
        samples.push_back(std::move(p));
        sampled[u.pid] = true;
        newest = std::max(newest, u.timeStamp);
      }
      d.process_util_last_seen_us = newest;
      // Processes in the list without a new utilization sample keep their list entry (memory only).
      std::vector<ProcessSample> merged;
      for (auto& p : out)
        if (!sampled.count(p.pid)) merged.push_back(std::move(p));
      std::stable_sort(samples.begin(), samples.end(),
                       [](const ProcessSample& a, const ProcessSample& b) { return a.time_unix_ns < b.time_unix_ns; });
      for (auto& p : samples) merged.push_back(std::move(p));
      out = std::move(merged);
    } else if (rc == NVML_ERROR_NOT_FOUND) {
      g.any_success = true;  // no new per-process sample since the last read
    } else if (auto s = failed(rc, "per-process utilization", d.process_utilization_supported); !s) {
      return s;
    }
  }

  // Best effort: NVML reports host PIDs, so inside a container with its own PID namespace this
  // finds nothing (or, rarely, another process with the same number).
  for (ProcessSample& p : out) p.name = core::process_comm(static_cast<pid_t>(p.pid));
  return core::ok_status();
}

core::Result<SystemInfo> NvmlBackend::system_info() {
  SystemInfo s;
  s.backend = "nvml";
  std::array<char, kStringBuffer> buf{};
  if (api_.nvmlSystemGetDriverVersion != nullptr &&
      api_.nvmlSystemGetDriverVersion(buf.data(), kStringBuffer) == NVML_SUCCESS) {
    s.driver_version = c_string(buf.data(), buf.size());
  }
  buf.fill('\0');
  if (api_.nvmlSystemGetNVMLVersion != nullptr &&
      api_.nvmlSystemGetNVMLVersion(buf.data(), kStringBuffer) == NVML_SUCCESS) {
    s.nvml_version = c_string(buf.data(), buf.size());
  }
  int cuda = 0;
  if (api_.nvmlSystemGetCudaDriverVersion_v2 != nullptr &&
      api_.nvmlSystemGetCudaDriverVersion_v2(&cuda) == NVML_SUCCESS && cuda > 0) {
    // NVML encodes CUDA versions as 1000 * major + 10 * minor (13000 -> 13.0).
    s.cuda_driver_version = fmt::format("{}.{}", cuda / 1000, (cuda % 1000) / 10);
  }
  return s;
}

core::Result<HealthFacts> NvmlBackend::health_facts(int gpu) {
  auto dev = device(gpu);
  if (!dev) return dev.error();
  DeviceState& d = **dev;
  std::lock_guard lock(d.mu);
  LostCheck check(api_, gpu);
  HealthFacts f;
  read_modes(d.handle, check, f);
  read_memory_errors(d.handle, check, f);
  read_limits(d.handle, check, f);
  read_nvlinks(d.handle, check, f);
  read_pcie_replays(d.handle, check, f);
  if (check.lost()) return *check.lost();
  return f;
}

// Persistence, compute, MIG and ECC modes.
void NvmlBackend::read_modes(nvmlDevice_t h, LostCheck& check, HealthFacts& f) const {
  nvmlEnableState_t current = NVML_FEATURE_DISABLED;
  nvmlEnableState_t pending = NVML_FEATURE_DISABLED;
  if (api_.nvmlDeviceGetPersistenceMode != nullptr &&
      check.ok(api_.nvmlDeviceGetPersistenceMode(h, &current), "persistence mode")) {
    f.persistence_mode = current == NVML_FEATURE_ENABLED;
  }
  nvmlComputeMode_t mode = NVML_COMPUTEMODE_DEFAULT;
  if (api_.nvmlDeviceGetComputeMode != nullptr && check.ok(api_.nvmlDeviceGetComputeMode(h, &mode), "compute mode")) {
    switch (mode) {
      case NVML_COMPUTEMODE_DEFAULT: f.compute_mode = ComputeMode::kDefault; break;
      case NVML_COMPUTEMODE_EXCLUSIVE_THREAD: f.compute_mode = ComputeMode::kExclusiveThread; break;
      case NVML_COMPUTEMODE_PROHIBITED: f.compute_mode = ComputeMode::kProhibited; break;
      case NVML_COMPUTEMODE_EXCLUSIVE_PROCESS: f.compute_mode = ComputeMode::kExclusiveProcess; break;
    }
  }
  unsigned int mig_current = 0;
  unsigned int mig_pending = 0;
  if (api_.nvmlDeviceGetMigMode != nullptr &&
      check.ok(api_.nvmlDeviceGetMigMode(h, &mig_current, &mig_pending), "MIG mode")) {
    f.mig_current = mig_current == NVML_DEVICE_MIG_ENABLE;
    f.mig_pending = mig_pending == NVML_DEVICE_MIG_ENABLE;
  }
  if (api_.nvmlDeviceGetEccMode != nullptr && check.ok(api_.nvmlDeviceGetEccMode(h, &current, &pending), "ECC mode")) {
    f.ecc_current = current == NVML_FEATURE_ENABLED;
    f.ecc_pending = pending == NVML_FEATURE_ENABLED;
  }
}

// ECC error counts, remapped rows, retired pages.
void NvmlBackend::read_memory_errors(nvmlDevice_t h, LostCheck& check, HealthFacts& f) const {
  if (api_.nvmlDeviceGetTotalEccErrors != nullptr) {
    const std::array<std::tuple<nvmlMemoryErrorType_t, nvmlEccCounterType_t, std::optional<std::uint64_t>*>, 4> ecc = {{
        {NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &f.ecc_volatile_corrected},
        {NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &f.ecc_volatile_uncorrected},
        {NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC, &f.ecc_aggregate_corrected},
        {NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC, &f.ecc_aggregate_uncorrected},
    }};
    for (const auto& [type, counter, field] : ecc) {
      unsigned long long n = 0;
      if (check.ok(api_.nvmlDeviceGetTotalEccErrors(h, type, counter, &n), "ECC error count")) *field = n;
    }
  }
  unsigned int corr = 0;
  unsigned int unc = 0;
  unsigned int is_pending = 0;
  unsigned int failure = 0;
  if (api_.nvmlDeviceGetRemappedRows != nullptr &&
      check.ok(api_.nvmlDeviceGetRemappedRows(h, &corr, &unc, &is_pending, &failure), "remapped rows")) {
    f.remapped_rows_corrected = corr;
    f.remapped_rows_uncorrected = unc;
    f.remap_pending = is_pending != 0;
    f.remap_failed = failure != 0;
  }
  if (api_.nvmlDeviceGetRetiredPages != nullptr) {
    // With a null address buffer and a count of 0, NVML answers the count (SUCCESS, or
    // INSUFFICIENT_SIZE on some drivers when pages exist: the count is set either way).
    const std::array<std::pair<nvmlPageRetirementCause_t, std::optional<std::uint32_t>*>, 2> causes = {{
        {NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, &f.retired_pages_single_bit},
        {NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, &f.retired_pages_double_bit},
    }};
    for (const auto& [cause, field] : causes) {
      unsigned int count = 0;
      nvmlReturn_t rc = api_.nvmlDeviceGetRetiredPages(h, cause, &count, nullptr);
      if (rc == NVML_ERROR_INSUFFICIENT_SIZE) rc = NVML_SUCCESS;
      if (check.ok(rc, "retired pages")) *field = count;
    }
  }
  nvmlEnableState_t pending = NVML_FEATURE_DISABLED;
  if (api_.nvmlDeviceGetRetiredPagesPendingStatus != nullptr &&
      check.ok(api_.nvmlDeviceGetRetiredPagesPendingStatus(h, &pending), "retired pages pending")) {
    f.retired_pages_pending = pending == NVML_FEATURE_ENABLED;
  }
}

// Power limits, temperature thresholds, the most the PCIe link allows.
void NvmlBackend::read_limits(nvmlDevice_t h, LostCheck& check, HealthFacts& f) const {
  unsigned int v = 0;
  // NVML reports power limits in milliwatts.
  if (api_.nvmlDeviceGetPowerManagementLimit != nullptr &&
      check.ok(api_.nvmlDeviceGetPowerManagementLimit(h, &v), "power limit")) {
    f.power_limit_watts = v / 1000.0;
  }
  if (api_.nvmlDeviceGetEnforcedPowerLimit != nullptr &&
      check.ok(api_.nvmlDeviceGetEnforcedPowerLimit(h, &v), "enforced power limit")) {
    f.power_limit_enforced_watts = v / 1000.0;
  }
  if (api_.nvmlDeviceGetPowerManagementDefaultLimit != nullptr &&
      check.ok(api_.nvmlDeviceGetPowerManagementDefaultLimit(h, &v), "default power limit")) {
    f.power_limit_default_watts = v / 1000.0;
  }
  if (api_.nvmlDeviceGetTemperatureThreshold != nullptr) {
    const std::array<std::pair<nvmlTemperatureThresholds_t, std::optional<double>*>, 4> thresholds = {{
        {NVML_TEMPERATURE_THRESHOLD_SLOWDOWN, &f.temperature_slowdown_celsius},
        {NVML_TEMPERATURE_THRESHOLD_SHUTDOWN, &f.temperature_shutdown_celsius},
        {NVML_TEMPERATURE_THRESHOLD_GPU_MAX, &f.temperature_gpu_max_celsius},
        {NVML_TEMPERATURE_THRESHOLD_MEM_MAX, &f.temperature_memory_max_celsius},
    }};
    for (const auto& [type, field] : thresholds) {
      if (check.ok(api_.nvmlDeviceGetTemperatureThreshold(h, type, &v), "temperature threshold")) *field = v;
    }
  }
  if (api_.nvmlDeviceGetMaxPcieLinkGeneration != nullptr &&
      check.ok(api_.nvmlDeviceGetMaxPcieLinkGeneration(h, &v), "max PCIe generation")) {
    f.pcie_link_generation_max = static_cast<int>(v);
  }
  if (api_.nvmlDeviceGetMaxPcieLinkWidth != nullptr &&
      check.ok(api_.nvmlDeviceGetMaxPcieLinkWidth(h, &v), "max PCIe width")) {
    f.pcie_link_width_max = static_cast<int>(v);
  }
}

// PCIe replays (retries) since the driver loaded.
void NvmlBackend::read_pcie_replays(nvmlDevice_t h, LostCheck& check, HealthFacts& f) const {
  unsigned int v = 0;
  if (api_.nvmlDeviceGetPcieReplayCounter != nullptr &&
      check.ok(api_.nvmlDeviceGetPcieReplayCounter(h, &v), "PCIe replay counter")) {
    f.pcie_replay_errors = v;
  }
}

// Each NVLink's state, version and error counters.
void NvmlBackend::read_nvlinks(nvmlDevice_t h, LostCheck& check, HealthFacts& f) const {
  unsigned int v = 0;
  if (api_.nvmlDeviceGetNvLinkState != nullptr) {
    for (unsigned int link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
      nvmlEnableState_t active = NVML_FEATURE_DISABLED;
      // NOT_SUPPORTED / INVALID_ARGUMENT: the device has no such link (or no NVLink at all).
      if (!check.ok(api_.nvmlDeviceGetNvLinkState(h, link, &active), "NVLink state")) {
        if (check.lost()) break;
        continue;
      }
      NvlinkFacts l;
      l.link = static_cast<int>(link);
      l.active = active == NVML_FEATURE_ENABLED;
      if (api_.nvmlDeviceGetNvLinkVersion != nullptr &&
          check.ok(api_.nvmlDeviceGetNvLinkVersion(h, link, &v), "NVLink version")) {
        l.version_code = v;
        if (auto name = nvlink_version_name(v)) l.version = std::string(*name);
      }
      if (api_.nvmlDeviceGetNvLinkErrorCounter != nullptr) {
        const std::array<std::pair<nvmlNvLinkErrorCounter_t, std::optional<std::uint64_t>*>, 4> counters = {{
            {NVML_NVLINK_ERROR_DL_REPLAY, &l.replay_errors},
            {NVML_NVLINK_ERROR_DL_RECOVERY, &l.recovery_errors},
            {NVML_NVLINK_ERROR_DL_CRC_FLIT, &l.crc_flit_errors},
            {NVML_NVLINK_ERROR_DL_CRC_DATA, &l.crc_data_errors},
        }};
        for (const auto& [counter, field] : counters) {
          unsigned long long n = 0;
          if (check.ok(api_.nvmlDeviceGetNvLinkErrorCounter(h, link, counter, &n), "NVLink error counter")) *field = n;
        }
      }
      f.nvlinks.push_back(l);
    }
  }
}

core::Result<DeviceInfo> NvmlBackend::device_info(int gpu) {
  auto dev = device(gpu);
  if (!dev) return dev.error();
  DeviceState& d = **dev;
  std::lock_guard lock(d.mu);
  if (d.info_cache) return *d.info_cache;

  const nvmlDevice_t h = d.handle;
  LostCheck check(api_, gpu);
  DeviceInfo out;
  out.index = gpu;
  std::array<char, kStringBuffer> buf{};
  if (api_.nvmlDeviceGetName != nullptr && check.ok(api_.nvmlDeviceGetName(h, buf.data(), kStringBuffer), "name")) {
    out.name = c_string(buf.data(), buf.size());
  }
  buf.fill('\0');
  if (api_.nvmlDeviceGetUUID != nullptr && check.ok(api_.nvmlDeviceGetUUID(h, buf.data(), kStringBuffer), "UUID")) {
    out.uuid = c_string(buf.data(), buf.size());
  }
  nvmlPciInfo_t pci{};
  if (api_.nvmlDeviceGetPciInfo_v3 != nullptr && check.ok(api_.nvmlDeviceGetPciInfo_v3(h, &pci), "PCI info")) {
    out.pci_bus_id = c_string(pci.busId, sizeof(pci.busId));
  }
  nvmlMemory_t mem{};
  if (api_.nvmlDeviceGetMemoryInfo != nullptr && check.ok(api_.nvmlDeviceGetMemoryInfo(h, &mem), "memory info")) {
    out.memory_total_bytes = mem.total;
  }
  unsigned int v = 0;
  if (api_.nvmlDeviceGetMaxClockInfo != nullptr) {
    if (check.ok(api_.nvmlDeviceGetMaxClockInfo(h, NVML_CLOCK_SM, &v), "max SM clock")) out.sm_clock_max_mhz = v;
    if (check.ok(api_.nvmlDeviceGetMaxClockInfo(h, NVML_CLOCK_MEM, &v), "max memory clock")) {
      out.memory_clock_max_mhz = v;
    }
  }
  if (api_.nvmlDeviceGetMaxPcieLinkGeneration != nullptr &&
      check.ok(api_.nvmlDeviceGetMaxPcieLinkGeneration(h, &v), "max PCIe generation")) {
    out.pcie_link_generation_max = static_cast<int>(v);
  }
  if (api_.nvmlDeviceGetMaxPcieLinkWidth != nullptr &&
      check.ok(api_.nvmlDeviceGetMaxPcieLinkWidth(h, &v), "max PCIe width")) {
    out.pcie_link_width_max = static_cast<int>(v);
  }
  if (api_.nvmlDeviceGetPowerManagementDefaultLimit != nullptr &&
      check.ok(api_.nvmlDeviceGetPowerManagementDefaultLimit(h, &v), "default power limit")) {
    out.power_limit_default_watts = v / 1000.0;  // milliwatts
  }
  if (api_.nvmlDeviceGetTemperatureThreshold != nullptr) {
    const std::array<std::pair<nvmlTemperatureThresholds_t, std::optional<double>*>, 4> thresholds = {{
        {NVML_TEMPERATURE_THRESHOLD_SLOWDOWN, &out.temperature_slowdown_celsius},
        {NVML_TEMPERATURE_THRESHOLD_SHUTDOWN, &out.temperature_shutdown_celsius},
        {NVML_TEMPERATURE_THRESHOLD_GPU_MAX, &out.temperature_gpu_max_celsius},
        {NVML_TEMPERATURE_THRESHOLD_MEM_MAX, &out.temperature_memory_max_celsius},
    }};
    for (const auto& [type, field] : thresholds) {
      if (check.ok(api_.nvmlDeviceGetTemperatureThreshold(h, type, &v), "temperature threshold")) *field = v;
    }
  }
  int major = 0;
  int minor = 0;
  if (api_.nvmlDeviceGetCudaComputeCapability != nullptr &&
      check.ok(api_.nvmlDeviceGetCudaComputeCapability(h, &major, &minor), "compute capability")) {
    out.compute_capability_major = major;
    out.compute_capability_minor = minor;
  }
  unsigned int current = 0;
  unsigned int pending = 0;
  if (api_.nvmlDeviceGetMigMode != nullptr && check.ok(api_.nvmlDeviceGetMigMode(h, &current, &pending), "MIG mode")) {
    out.mig_enabled = current == NVML_DEVICE_MIG_ENABLE;
    if (*out.mig_enabled) {
      read_mig_instances(d, out, check);
    }
  }
  if (check.lost()) return *check.lost();
  d.info_cache = out;
  return out;
}

void NvmlBackend::read_mig_instances(DeviceState& d, DeviceInfo& out, LostCheck& check) {
  if (api_.nvmlDeviceGetMaxMigDeviceCount == nullptr || api_.nvmlDeviceGetMigDeviceHandleByIndex == nullptr) return;
  unsigned int max_count = 0;
  if (!check.ok(api_.nvmlDeviceGetMaxMigDeviceCount(d.handle, &max_count), "MIG device count")) return;
  for (unsigned int i = 0; i < max_count; ++i) {
    nvmlDevice_t mig = nullptr;
    // NOT_FOUND: no MIG device in that slot.
    if (!check.ok(api_.nvmlDeviceGetMigDeviceHandleByIndex(d.handle, i, &mig), "MIG device handle")) continue;
    MigInstance inst;
    unsigned int id = 0;
    if (api_.nvmlDeviceGetGpuInstanceId != nullptr &&
        check.ok(api_.nvmlDeviceGetGpuInstanceId(mig, &id), "MIG GPU instance id")) {
      inst.gpu_instance_id = id;
    }
    if (api_.nvmlDeviceGetComputeInstanceId != nullptr &&
        check.ok(api_.nvmlDeviceGetComputeInstanceId(mig, &id), "MIG compute instance id")) {
      inst.compute_instance_id = id;
    }
    std::array<char, kStringBuffer> buf{};
    if (api_.nvmlDeviceGetUUID != nullptr &&
        check.ok(api_.nvmlDeviceGetUUID(mig, buf.data(), kStringBuffer), "MIG UUID")) {
      inst.uuid = c_string(buf.data(), buf.size());
    }
    nvmlMemory_t mem{};
    if (api_.nvmlDeviceGetMemoryInfo != nullptr && check.ok(api_.nvmlDeviceGetMemoryInfo(mig, &mem), "MIG memory")) {
      inst.memory_total_bytes = mem.total;
    }
    nvmlDeviceAttributes_t attrs{};
    if (api_.nvmlDeviceGetAttributes_v2 != nullptr &&
        check.ok(api_.nvmlDeviceGetAttributes_v2(mig, &attrs), "MIG attributes")) {
      inst.multiprocessor_count = attrs.multiprocessorCount;
    }
    out.mig_instances.push_back(std::move(inst));
  }
}

void NvmlBackend::setup_events() {
  events_set_up_ = true;
  if (api_.nvmlEventSetCreate == nullptr || api_.nvmlDeviceRegisterEvents == nullptr ||
      api_.nvmlEventSetWait_v2 == nullptr || api_.nvmlEventSetFree == nullptr) {
    core::log_debug("this NVML lacks the event functions; no XID events");
    return;
  }
  nvmlEventSet_t set = nullptr;
  if (const nvmlReturn_t rc = api_.nvmlEventSetCreate(&set); rc != NVML_SUCCESS) {
    core::log_info("{}; no XID events", nvml_error(api_, rc, "creating an NVML event set").message());
    return;
  }
  int registered = 0;
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    const DeviceState& d = *devices_[i];
    if (d.open_error) continue;
    const nvmlReturn_t rc = api_.nvmlDeviceRegisterEvents(d.handle, nvmlEventTypeXidCriticalError, set);
    if (rc == NVML_SUCCESS) {
      ++registered;
      continue;
    }
    // NOT_SUPPORTED (e.g. some virtualized GPUs): skip that GPU; others: say so, skip too.
    core::Error e = nvml_error(api_, rc, fmt::format("GPU {}: registering for XID events", i));
    if (e.kind() == core::ErrorKind::kNotSupported) {
      core::log_debug("{}", e.message());
    } else {
      core::log_info("{}", e.message());
    }
  }
  if (registered == 0) {
    api_.nvmlEventSetFree(set);
    return;
  }
  event_set_ = set;
}

int NvmlBackend::gpu_of(nvmlDevice_t handle) const {
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i]->handle == handle && !devices_[i]->open_error) return static_cast<int>(i);
  }
  return -1;  // not a handle we know (should not happen): keep the event rather than lose an XID
}

core::Result<std::vector<DeviceEvent>> NvmlBackend::wait_events(core::Nanos timeout) {
  std::lock_guard lock(events_mu_);
  if (!events_set_up_) setup_events();
  std::vector<DeviceEvent> events;
  if (event_set_ == nullptr) {
    clock_.sleep_until(clock_.now() + std::max(timeout, core::Nanos(0)));
    return events;
  }
  // Round up so a sub-millisecond timeout still waits, and clamp to NVML's unsigned int.
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(std::max(timeout, core::Nanos(0))).count();
  unsigned int wait_ms = static_cast<unsigned int>(
      std::min<long long>(ms, static_cast<long long>(std::numeric_limits<unsigned int>::max())));
  for (int n = 0; n < kMaxEventsPerWait; ++n) {
    nvmlEventData_t data{};
    const nvmlReturn_t rc = api_.nvmlEventSetWait_v2(event_set_, &data, wait_ms);
    if (rc == NVML_ERROR_TIMEOUT) break;
    if (rc != NVML_SUCCESS) {
      if (!events.empty()) break;  // deliver what arrived; the error will show on the next wait
      return nvml_error(api_, rc, "waiting for NVML events");
    }
    if ((data.eventType & nvmlEventTypeXidCriticalError) != 0) {
      events.push_back(DeviceEvent{gpu_of(data.device), clock_.unix_now_ns(), "xid", data.eventData});
    }
    wait_ms = 0;  // after the first event, only drain what is already queued
  }
  return events;
}

}  // namespace

core::Result<std::unique_ptr<Backend>> open_nvml_backend(const NvmlBackendOptions& options) {
  std::unique_ptr<NvmlLibrary> library;
  const NvmlApi* api = options.api;
  if (api == nullptr) {
    auto loaded = load_nvml_library(options.library_path);
    if (!loaded) return loaded.error();
    library = std::move(*loaded);
    api = &library->api();
  } else if (const auto missing = missing_required(*api); !missing.empty()) {
    return core::missing_symbols_error("the injected function table", std::string(kNvmlName), missing,
                                       std::string(kWithoutNvml));
  }
  auto backend = std::make_unique<NvmlBackend>(std::move(library), *api, options.clock);
  if (auto s = backend->init(); !s) return s.error();
  return std::unique_ptr<Backend>(std::move(backend));
}

}  // namespace gpudoc::gpu
