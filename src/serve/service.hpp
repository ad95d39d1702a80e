// gpudoc::serve::Service — the engine of `gpudoc serve`: the sampler running continuously on the
// backend chosen for the run, the latest values and the last minutes kept, a sliding-window
// diagnosis every few seconds, the store's health and baseline verdicts re-read every minute; and
// what the HTTP side asks of it: a metrics snapshot, the state and history as JSON, and a wake-up
// for each new state (server-sent events).
//
//   serve::Service service(live, header, {.sampler = config});
//   if (auto s = service.start(); !s) return s.error();        // the sampler's and its own threads
//   serve::Snapshot snap = service.metrics_snapshot();           // a scrape, any thread
//   std::uint64_t seq = service.wait_for_update(0, 15s);         // an event stream, any thread
//   service.stop();
//
// The HTTP side never waits for the sampler and the sampler never waits for a client: every reader
// copies what it needs under a short lock. A replay runs on the trace's clock: "now", windows and
// staleness are trace time; the diagnosis and store periods are wall time.
//
// Thread-safety: start() and stop() from one thread; everything else from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "cost/prices.hpp"
#include "findings/finding.hpp"
#include "serve/accounting.hpp"
#include "serve/attributor.hpp"
#include "serve/config.hpp"
#include "serve/exposition.hpp"
#include "serve/history.hpp"
#include "serve/latest.hpp"
#include "serve/liveness.hpp"
#include "serve/server.hpp"
#include "serve/verdicts.hpp"
#include "telemetry/backend_source.hpp"
#include "telemetry/sampler.hpp"
#include "telemetry/trace.hpp"

namespace gpudoc::serve {

struct ServiceOptions {
  telemetry::SamplerConfig sampler;
  std::chrono::seconds history{600};          // kept for the dashboard (at least the diagnosis window)
  std::chrono::seconds diagnose_window{120};  // the sliding diagnosis looks at this much (trace time)
  std::chrono::seconds diagnose_every{10};    // and runs this often (wall time)
  std::optional<std::string> store;           // the store to read verdicts from; nullopt: none
  std::chrono::seconds store_every{60};       // how often it is re-read (wall time)
  // Labels each process with its container and pod from /proc/PID/cgroup (real GPUs only: a
  // replay's pids are another machine's).
  std::function<void(ProcessSnapshot&)> label_process;
  // The pods and HPC jobs holding each GPU, read again every attribution.every (serve/attributor.hpp);
  // neither source by default.
  AttributionOptions attribution{};
  std::string hostname;  // dcgm-exporter's Hostname label
  std::string version;   // gpudoc_build_info{version}
  std::string revision;  // gpudoc_build_info{revision}: the commit built
  std::string backend;   // "nvml", "replay:run.jsonl@1", "fake:8" (the JSON API says which)
  // The prices exposed as gpudoc_price_* for each GPU (cost::load_prices; empty: none exposed).
  cost::PriceBook prices{};
};

// What `settings` ask of the engine (history, diagnosis, store, attribution) with `sampler`, this
// host's name and this build's version and commit; the backend and the process labeler are the
// caller's to add.
[[nodiscard]] ServiceOptions service_options(const Settings& settings, telemetry::SamplerConfig sampler);

// The sliding diagnosis of one window (History::window, `window_s` long): diagnose() over it with
// no start-up skipped (a sliding window has none); no findings for a window without samples. The
// service's and `gpudoc trace counters`' (replay_counters.hpp) one way to diagnose a window.
[[nodiscard]] std::vector<findings::Finding> diagnose_window(const telemetry::Trace& window, double window_s);

class Service {
 public:
  // `live` and `header` must outlive the service; `header` is make_header's for options.sampler.
  Service(const telemetry::Live& live, const telemetry::TraceHeader& header, ServiceOptions options);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // Starts the sampler and the service's threads. Errors: the sampler's.
  [[nodiscard]] core::Status start();
  // Stops everything and wakes every waiter; idempotent.
  void stop();

  // One scrape's snapshot (the server adds its own counters).
  [[nodiscard]] Snapshot metrics_snapshot() const;
  // GET /api/v1/snapshot's JSON (the dashboard's contract: docs/serve.md).
  [[nodiscard]] nlohmann::json state_json() const;
  // GET /api/v1/history?seconds=S.
  [[nodiscard]] nlohmann::json history_json(double seconds) const;
  // Waits until the state's sequence number passes `seen` or `timeout` ends; returns the current
  // number (== seen on a timeout; 0 and at once once stopped). The state advances about once a second.
  [[nodiscard]] std::uint64_t wait_for_update(std::uint64_t seen, std::chrono::milliseconds timeout) const;
  [[nodiscard]] bool running() const { return running_.load(); }
  // /healthz: alive while the sampling loop ticks (once a second); not after 10 s without a tick,
  // nor once stopped, with the reason (serve/liveness.hpp).
  [[nodiscard]] Alive liveness() const;
  // The server's handlers answered from this service (it must outlive the server); `asset` serves
  // the dashboard's files ("/" and "/assets/NAME"), which live above serve (view/dashboard_assets).
  [[nodiscard]] Handlers handlers(std::function<std::optional<Asset>(std::string_view path)> asset);
  // How many sliding diagnoses ran (tests wait for the first).
  [[nodiscard]] std::uint64_t diagnoses() const { return diagnoses_.load(); }

 private:
  void sampling_loop();
  void analysis_loop();
  void diagnose_now();
  void read_store_now();
  [[nodiscard]] std::map<int, LabelPairs> holders_now() const;
  [[nodiscard]] std::int64_t now_unix_ns() const;

  const telemetry::Live& live_;
  const telemetry::TraceHeader& header_;
  ServiceOptions options_;
  Latest latest_;
  History history_;
  telemetry::Sampler sampler_;
  std::vector<int> gpu_indices_;            // the header's GPU indices, by position
  std::unique_ptr<Attributor> attributor_;  // when options_.attribution.enabled()

  std::atomic<bool> running_{false};
  Liveness liveness_{std::chrono::seconds(1)};  // the sampling loop's tick
  std::atomic<std::uint64_t> diagnoses_{0};
  std::thread sampling_thread_;
  std::thread analysis_thread_;

  mutable std::mutex mu_;  // what the analysis produced
  std::vector<findings::Finding> findings_;
  std::int64_t findings_start_unix_ns_ = 0;  // the diagnosed window's start
  std::optional<double> last_diagnosis_seconds_;
  Verdicts verdicts_;
  std::string store_error_;
  mutable std::mutex account_mu_;  // the fleet counters, added to by each diagnosis
  mutable Accounting accounting_;  // series() marks what a scrape has shown

  mutable std::mutex update_mu_;
  mutable std::condition_variable update_cv_;
  std::uint64_t sequence_ = 0;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
};

}  // namespace gpudoc::serve
