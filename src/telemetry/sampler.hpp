// gpudoc::telemetry::Sampler — reads every GPU, each metric group on its own period.
//
// One thread per GPU, so a hung driver call on one GPU never stalls the others; a watchdog marks a
// GPU whose call has been stuck longer than `hang_timeout` as unresponsive. Schedules run on the
// monotonic clock with fixed cadence (no drift, no catch-up bursts after a stall). Records go to a
// bounded queue: memory stays flat whatever the consumer does; overflow drops the oldest records
// and counts them. Values are only what the backend returned fresh; nothing is repeated or filled.
//
//   telemetry::Sampler sampler(backend, clock, telemetry::SamplerConfig{});
//   if (auto s = sampler.start(); !s) return s.error();
//   while (running) for (auto& rec : sampler.drain(std::chrono::milliseconds(250))) write(rec);
//   sampler.stop();
//
// For simulations (tests, benchmarks) run_until() drives all GPUs from the calling thread with the
// given clock, so ten minutes of 8 GPUs at 100 Hz run in seconds on a core::ManualClock.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "gpu/backend.hpp"
#include "telemetry/trace.hpp"

namespace gpudoc::telemetry {

struct SamplerConfig {
  // Period of each group; a group with period 0 is not read. Defaults: the catalog's.
  std::array<std::chrono::milliseconds, gpu::kMetricGroupCount> periods = default_periods();
  std::vector<int> gpus;  // empty: every GPU the backend has
  core::Nanos hang_timeout = std::chrono::seconds(2);
  core::Nanos lost_retry = std::chrono::seconds(5);  // how often a lost GPU is tried again
  std::size_t queue_capacity = 1 << 16;              // records held before the oldest are dropped
  bool read_events = true;                           // poll the backend's XID events
  // While a GPU's last process read saw two or more processes, its processes group is read at
  // this period instead (when shorter): NVML keeps only the newest per-process sample, so turns
  // taken by co-located processes (contention) are only visible when read this often. One
  // process, or none, costs the default period's CPU. 0 turns this off.
  std::chrono::milliseconds contended_processes_period{1000};

  [[nodiscard]] static std::array<std::chrono::milliseconds, gpu::kMetricGroupCount> default_periods();

  // Lays GROUP=MS values (--period, a config file's periods) over `periods`, the later winning.
  // Errors: kUsage "--period ..." for an unknown group, a malformed value, or a period below the
  // sensor's minimum (gpu::parse_group_period says why the minimum exists).
  [[nodiscard]] core::Status set_periods(const std::vector<std::string>& group_ms);

  // The sampler a command runs: `defaults` (the command's own periods) with `group_ms` laid over
  // them (set_periods), on `gpus` (empty: all), polling XID events when `read_events`. Errors:
  // set_periods'.
  [[nodiscard]] static core::Result<SamplerConfig> with_periods(
      const std::array<std::chrono::milliseconds, gpu::kMetricGroupCount>& defaults,
      const std::vector<std::string>& group_ms, const std::vector<int>& gpus, bool read_events);
};

// One unit of sampler output.
struct SamplerRecord {
  enum class Kind { kSamples, kProcesses, kEvent };
  Kind kind = Kind::kSamples;
  int gpu = -1;
  std::vector<gpu::MetricSample> samples;     // kSamples
  std::vector<gpu::ProcessSample> processes;  // kProcesses
  std::int64_t time_unix_ns = 0;              // kProcesses and kEvent: when
  std::string event_kind;                     // kEvent: gpu_lost, gpu_unresponsive, gpu_recovered, xid
  nlohmann::json event_fields = nlohmann::json::object();
};

struct GpuStats {
  std::uint64_t reads = 0;    // backend calls made
  std::uint64_t samples = 0;  // metric samples produced
  std::uint64_t errors = 0;   // failed reads (not counting lost)
  bool contended = false;     // last process read saw >= 2 processes
  bool lost = false;
  bool unresponsive = false;
  std::array<bool, gpu::kMetricGroupCount> group_disabled{};  // answered NOT_SUPPORTED
};

struct SamplerStats {
  std::vector<GpuStats> gpus;  // index = position in the config's GPU list
  std::uint64_t dropped_records = 0;
};

class Sampler {
 public:
  Sampler(gpu::Backend& backend, core::Clock& clock, SamplerConfig config);
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // Starts one thread per GPU (+ a watchdog and an event thread). Errors: kEnvironment when the
  // backend cannot count its GPUs, kBadInput for a configured GPU that does not exist.
  core::Status start();
  // Stops and joins every thread that is not stuck in a driver call; a stuck one is detached and
  // its late result discarded. Idempotent.
  void stop();

  // Single-threaded simulation: polls every GPU until clock.now() >= end, sleeping on the clock
  // between due times; records are passed to `sink` as they are produced (no queue).
  core::Status run_until(core::MonoTime end, const std::function<void(SamplerRecord&&)>& sink);

  // Waits up to `timeout` (less when an event arrives or the queue is half full), then returns
  // every queued record. One consumer only.
  [[nodiscard]] std::vector<SamplerRecord> drain(core::Nanos timeout);

  [[nodiscard]] SamplerStats stats() const;
  [[nodiscard]] const std::vector<int>& gpus() const { return gpus_; }

 private:
  using Emit = std::function<void(SamplerRecord&&)>;
  struct GpuState;
  enum class ReadOutcome { kRead, kDisabled, kLost, kAbandoned };
  core::Status resolve_gpus();
  // Polls whatever is due for one GPU at `now`; returns the next due time.
  core::MonoTime poll_due(GpuState& g, core::MonoTime now, const Emit& emit);
  core::MonoTime poll_groups(GpuState& g, core::MonoTime now, const Emit& emit);
  // Whether a lost GPU answers again (tried every lost_retry).
  bool retry_lost(GpuState& g, core::MonoTime now, const Emit& emit);
  // One due group: the driver call, its records, the next due time.
  ReadOutcome read_group(GpuState& g, gpu::MetricGroup grp, core::MonoTime now, const Emit& emit);
  // Emits a reading's records; returns the group's period from now on.
  core::Nanos emit_reading(GpuState& g, gpu::MetricGroup grp, gpu::GroupReading&& r, const Emit& emit);
  ReadOutcome on_read_error(GpuState& g, gpu::MetricGroup grp, const core::Error& e, core::MonoTime now,
                            const Emit& emit);
  void schedule_next(GpuState& g, std::size_t i, core::Nanos period);
  void emit_event(const GpuState& g, std::string kind, nlohmann::json fields, const Emit& emit);
  static void publish_stats(GpuState& g);
  void gpu_thread(GpuState* g);
  void read_buffered_once_more(GpuState& g, const Emit& emit);
  void watchdog_thread();
  void event_thread();
  void push(SamplerRecord&& r);

  gpu::Backend& backend_;
  core::Clock& clock_;
  SamplerConfig config_;
  std::vector<int> gpus_;
  std::vector<std::shared_ptr<GpuState>> states_;
  std::vector<std::thread> threads_;
  std::atomic<bool> running_{false};
  bool started_ = false;

  mutable std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::deque<SamplerRecord> queue_;
  std::atomic<std::uint64_t> dropped_{0};

  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
};

}  // namespace gpudoc::telemetry
