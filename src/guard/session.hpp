// gpudoc::guard session — the guard at work: samples the GPUs, forecasts and escalates per GPU
// (GpuWatch), advises the jobs over the job channel, signals the jobs that opted in and pauses the
// policy's non-critical processes, and reports every decision and action to a sink. The engine
// behind `gpudoc guard`, independent of the command line so it runs on the fake backend in tests.
//
//   guard::SessionOptions o;  o.policy = guard::default_policy();  o.command = {"python3", "train.py"};
//   auto r = guard::run_session(backend, clock, channel, o, stop_requests, [](const nlohmann::json& e) { log(e); });
//   return r->exit_code.value_or(0);
//
// Events given to the sink (one JSON object each, "type" first; docs/guard.md lists the fields):
// start, job_joined, job_left, decision, advice, ack, ack_timeout, signal, report, status, note, end.
// Nothing here ever resets a GPU or changes a GPU setting; a reset is only suggested in a note.
#pragma once

#include <sys/types.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "gpu/backend.hpp"
#include "guard/channel.hpp"
#include "guard/pidfd.hpp"
#include "guard/policy.hpp"
#include "telemetry/sampler.hpp"

namespace gpudoc::guard {

struct SessionOptions {
  Policy policy;
  bool dry_run = false;                          // decide and log; send nothing, signal nothing
  std::vector<std::string> command;              // run this (GPUDOC_GUARD_SOCKET set), stop when it exits
  std::vector<pid_t> pids;                       // or watch these running processes, until they all exit
  std::vector<Action> signal_opt_in;             // actions also sent as signals to a job that does not ack
  telemetry::SamplerConfig sampler;              // which GPUs, at what periods
  bool real_gpus = true;                         // false (replay, fake): the GPU's process list is not this host's
  double clock_speed = 1.0;                      // the backend clock's seconds per wall second (a replay's speed)
  std::function<bool(std::uint64_t)> fatal_xid;  // the XID catalog's reset/reboot classes
  double ack_deadline_s = 10.0;                  // an advice not acknowledged by then: signal (if opted in) and log
  // How often the loop wakes (sampler drain + channel): each wake-up costs CPU (docs/results/guard.md),
  // and the period adds at most this much to an ack's latency.
  std::chrono::milliseconds loop_period{50};
  std::chrono::milliseconds health_period{5000};   // ECC / row-remap counters
  std::chrono::milliseconds status_period{60000};  // a "status" event: each GPU's level and forecast
  std::string proc_root = "/proc";
};

struct SessionResult {
  std::optional<int> exit_code;  // the command's, as a shell reports it
  std::string end_reason;        // command_exited, processes_exited, interrupted, all_gpus_lost
  int decisions = 0, advice = 0, acks = 0, signals = 0;
  int max_level = 0;
};

// The sampler's periods the guard starts from: it reads only what it decides on — power, clocks and
// die temperature (fast), memory and HBM temperature (slow), processes (non-critical work on a GPU)
// and XID events. Utilization, GPM and energy cost CPU on every GPU
// (docs/results/sampler-cost.md) and decide nothing here: off (--period turns them on).
[[nodiscard]] std::array<std::chrono::milliseconds, gpu::kMetricGroupCount> sampler_periods();

// The end of a session as `gpudoc guard --json` prints it: end_reason, exit_code (null: none),
// decisions, advice, acks, signals, max_level.
[[nodiscard]] nlohmann::json to_json(const SessionResult& result);

using EventSink = std::function<void(const nlohmann::json& event)>;

// Runs until the command (or every watched pid) exits, or a stop is requested (signal handlers
// increment stop_requests): one request ends it, and the command, which runs in a process group of
// its own, is stopped by the stop policy (core::GroupStopper: SIGTERM, SIGKILL after the grace
// period or at a second request) before the "end" event. Errors: kBadInput (the command cannot
// run, no pid to watch), the sampler's and the backend's.
[[nodiscard]] core::Result<SessionResult> run_session(gpu::Backend& backend, core::Clock& clock, ChannelServer& channel,
                                                      const SessionOptions& options,
                                                      const std::atomic<int>& stop_requests, const EventSink& sink);

// Whether a process is one of the policy's non-critical names: a name matches the process's
// comm, the base name of argv[0], or the base name of its script (the first argument after an
// interpreter's options); "re:REGEX" matches any of those whole, or the whole command line.
[[nodiscard]] bool matches_noncritical(const std::vector<std::string>& patterns, const std::string& comm,
                                       const std::vector<std::string>& argv);

// CUDA device numbers as a job names them -> the backend's GPU indices, through the job's
// CUDA_VISIBLE_DEVICES (indices or UUIDs, as CUDA reads it: up to the first invalid entry); UUIDs
// are matched against the devices'. Entries that name no device are left out.
[[nodiscard]] std::vector<int> map_job_gpus(const std::vector<std::string>& job_gpus,
                                            const std::optional<std::string>& cuda_visible_devices,
                                            const std::vector<gpu::DeviceInfo>& devices);

}  // namespace gpudoc::guard
