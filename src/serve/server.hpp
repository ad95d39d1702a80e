// gpudoc::serve::Server — the HTTP side of `gpudoc serve`, over cpp-httplib (Debian's
// libcpp-httplib-dev; no hand-written HTTP parser). It only routes and renders: every answer comes
// from the handlers it is given, each called on one of the server's threads and expected to copy
// what it needs under a short lock, so a slow or stuck client costs one of the server's threads,
// never a sample.
//
//   serve::Handlers h;
//   h.metrics = [&] { return service.metrics_snapshot(); };
//   serve::Server server({.host = "127.0.0.1", .port = 9401}, std::move(h));
//   auto port = server.start();          // Result<int>: the port bound (0 asks for any free one)
//   ...
//   server.stop();
//
// Routes (read-only: GET and HEAD; any other method on a route is 405; any other path 404):
//   /metrics            Prometheus text 0.0.4, or OpenMetrics 1.0 when the Accept header asks for it
//   /api/v1/snapshot    handlers.state's JSON
//   /api/v1/history     handlers.history's JSON for ?seconds=S (1..86400; default 600; else 400)
//   /api/v1/events      text/event-stream: "event: snapshot" with handlers.state's JSON on each update,
//                       a ": keep-alive" comment every 15 s without one; at most `max_streams` at once
//                       (503 beyond, with Retry-After)
//   /healthz            "ok" while the sampler runs, 503 otherwise
//   /, /assets/NAME     handlers.asset's files (the dashboard), when given
// No request body is read (at most 1 KiB is accepted); a client that sends or reads nothing is
// dropped after `io_timeout`. Every answer carries the security headers below.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "core/result.hpp"
#include "serve/exposition.hpp"

namespace gpudoc::serve {

inline constexpr int kDefaultPort = 9401;  // beside dcgm-exporter's 9400 (9402 is cert-manager's); deploy/ uses it

// Sent with every answer: no script, style or connection from anywhere but this server, no framing.
inline constexpr const char* kContentSecurityPolicy =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

struct ServerOptions {
  std::string host = "127.0.0.1";  // loopback unless another address is given explicitly
  int port = kDefaultPort;         // 0: any free port (tests)
  int threads = 8;                 // clients served at once; more wait in the listen queue
  int max_streams = 4;             // event streams at once (each holds a thread); < threads
  std::chrono::seconds io_timeout{5};
  bool dcgm_compatible = false;
};

// True for 127.0.0.0/8, ::1 and "localhost".
[[nodiscard]] bool is_loopback(std::string_view host);

// A file the server hands out as is.
struct Asset {
  std::string_view body;
  std::string_view content_type;  // "text/javascript; charset=utf-8"
};

// What the server answers with. Each is called from the server's threads (it must be thread-safe);
// one left empty turns its route off (404).
struct Handlers {
  std::function<Snapshot()> metrics;                   // once per scrape
  std::function<std::string()> state;                  // /api/v1/snapshot, and each event
  std::function<std::string(double seconds)> history;  // /api/v1/history
  // Blocks until the state after `seen` or the timeout; returns the new sequence number (== seen:
  // nothing new; 0: shutting down).
  std::function<std::uint64_t(std::uint64_t seen, std::chrono::milliseconds timeout)> wait_for_update;
  std::function<bool()> healthy;                                     // /healthz
  std::function<std::optional<Asset>(std::string_view path)> asset;  // "/" and "/assets/NAME"
};

class Server {
 public:
  Server(ServerOptions options, Handlers handlers);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds and starts serving on a thread of its own; returns the port bound. Errors:
  // kEnvironment naming host:port when it cannot be bound (in use, not an address of this host).
  [[nodiscard]] core::Result<int> start();
  // Stops listening and joins; idempotent.
  void stop();
  [[nodiscard]] std::uint64_t scrapes() const { return scrapes_.load(); }
  [[nodiscard]] int streams() const { return streams_.load(); }

 private:
  struct Impl;
  void route_metrics();
  void route_api();
  void route_events();
  void route_assets();
  // handlers_.state() for update number `sequence`, rendered once for every stream.
  [[nodiscard]] std::string state_for(std::uint64_t sequence);
  ServerOptions options_;
  Handlers handlers_;
  std::unique_ptr<Impl> impl_;
  std::thread thread_;
  std::atomic<std::uint64_t> scrapes_{0};
  std::atomic<double> last_render_seconds_{-1};
  std::atomic<int> streams_{0};
  std::atomic<bool> stopping_{false};
  std::mutex state_mu_;
  std::uint64_t state_sequence_ = 0;
  std::string state_text_;
};

}  // namespace gpudoc::serve
