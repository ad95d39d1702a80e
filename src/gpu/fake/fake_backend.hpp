// gpudoc::gpu::FakeBackend — scripted GPUs for tests, with injectable errors.
//
// Each fake GPU produces deterministic waveforms (a value function of metric and time) and, for the
// utilization group, behaves like the driver's buffer: one sample per 200 ms, each returned once,
// with its own timestamp. Errors can be injected per GPU and group: a lost GPU, a reset required,
// a timeout, NOT_SUPPORTED, or a call that hangs.
//
//   core::ManualClock clock;
//   gpu::FakeBackend fake(clock, 8);
//   fake.lose_gpu(3, clock.now() + std::chrono::seconds(5));   // GPU 3 falls off the bus at t=5 s
//   fake.set_hang(1, gpu::MetricGroup::kFast, std::chrono::seconds(2));   // next fast read blocks 2 s
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "gpu/backend.hpp"

namespace gpudoc::gpu {

class FakeBackend final : public Backend {
 public:
  // value(gpu, metric, seconds since creation) -> value; default: a smooth deterministic wave.
  using ValueFn = std::function<double(int gpu, Metric metric, double t_seconds)>;

  FakeBackend(core::Clock& clock, int gpu_count);

  // --- scripting (call before or while sampling; thread-safe) ---
  void set_value_fn(ValueFn fn);
  void set_supported(int gpu, MetricSet supported);
  void set_processes(int gpu, std::vector<ProcessSample> processes);
  // From `at` on, every call for this GPU fails with kGpuLost (as NVML_ERROR_GPU_IS_LOST).
  void lose_gpu(int gpu, core::MonoTime at);
  // The next `count` reads of (gpu, group) fail with `kind` (kTimeout, kEnvironment, ...).
  void inject_error(int gpu, MetricGroup group, core::ErrorKind kind, int count = 1);
  // The next read of (gpu, group) blocks for `duration` of real time (std::this_thread::sleep_for),
  // as a hung driver call would.
  void set_hang(int gpu, MetricGroup group, core::Nanos duration);
  void set_device_count_error(std::optional<core::Error> error);
  void push_event(DeviceEvent event);
  // What health_facts(gpu) returns from now on, and the source of the kErrors group's counters
  // (error_counter_samples); default_health_facts() until set.
  void set_health_facts(int gpu, HealthFacts facts);
  // The next `count` health_facts(gpu) calls fail with `kind` (kNotSupported, kTimeout, ...).
  void inject_health_error(int gpu, core::ErrorKind kind, int count = 1);
  // A healthy H200: persistence on, default compute mode, MIG and ECC as they ship, no errors
  // (every counter 0, PCIe replays included), thresholds 87/89/95/95 C, 700 W limits, PCIe Gen5
  // x16, 18 active NVLink 4 links.
  [[nodiscard]] static HealthFacts default_health_facts();
  // Plausible telemetry of an H200 under a steady training load (`gpudoc --backend fake:N`):
  // utilization 95-99 %, SM activity ~80 %, tensor ~55 %, DRAM ~35 %, power 560-640 W and
  // temperature 60-66 C on a slow 20 s wave (each GPU a little out of phase), clocks at their
  // maximum, 80 GiB used, PCIe Gen5 x16, no slowdown reason.
  [[nodiscard]] static ValueFn steady_load();

  // --- observation ---
  [[nodiscard]] std::uint64_t read_count(int gpu, MetricGroup group) const;

  // --- Backend ---
  [[nodiscard]] std::string_view name() const override { return "fake"; }
  [[nodiscard]] core::Result<SystemInfo> system_info() override;
  [[nodiscard]] core::Result<int> device_count() override;
  [[nodiscard]] core::Result<DeviceInfo> device_info(int gpu) override;
  [[nodiscard]] core::Result<MetricSet> capabilities(int gpu) override;
  [[nodiscard]] core::Result<GroupReading> read(int gpu, MetricGroup group) override;
  [[nodiscard]] core::Result<std::vector<DeviceEvent>> wait_events(core::Nanos timeout) override;
  [[nodiscard]] core::Result<HealthFacts> health_facts(int gpu) override;

  static constexpr std::int64_t kUtilizationSampleNs = 200'000'000;

 private:
  struct Injected {
    core::ErrorKind kind;
    int remaining;
  };
  struct Gpu {
    MetricSet supported;
    std::vector<ProcessSample> processes;
    std::optional<core::MonoTime> lost_at;
    std::array<std::optional<Injected>, kMetricGroupCount> errors;
    std::array<core::Nanos, kMetricGroupCount> hang{};
    std::array<std::atomic<std::uint64_t>, kMetricGroupCount> reads{};
    std::int64_t last_util_sample_ns = 0;  // unix ns of the last buffered sample returned
    HealthFacts health = default_health_facts();
    std::optional<Injected> health_error;
  };

  [[nodiscard]] core::Status check_index(int gpu) const;

  core::Clock& clock_;
  core::MonoTime created_;
  std::int64_t created_unix_ns_;
  std::vector<std::unique_ptr<Gpu>> gpus_;
  ValueFn value_fn_;
  std::optional<core::Error> count_error_;
  std::vector<DeviceEvent> events_;
  mutable std::mutex mu_;
};

}  // namespace gpudoc::gpu
