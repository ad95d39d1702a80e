// gpudoc::serve::Server — the HTTP side of `gpudoc serve`: /metrics over cpp-httplib (Debian's
// libcpp-httplib-dev; no hand-written HTTP parser). Each scrape asks `snapshot` for the current
// values and renders them outside any lock the sampler holds, so a slow or stuck client costs one
// of the server's threads, never a sample.
//
//   serve::Server server({.host = "127.0.0.1", .port = 9401}, [&] { return latest.snapshot(clock.unix_now_ns()); });
//   auto port = server.start();          // Result<int>: the port bound (0 asks for any free one)
//   ...
//   server.stop();
//
// Routes: GET/HEAD /metrics (Prometheus text 0.0.4, or OpenMetrics 1.0 when the Accept header asks
// for it); other methods on /metrics: 405; any other path: 404. No request body is read (at most
// 1 KiB is accepted); a client that sends or reads nothing is dropped after `io_timeout`. Every
// answer carries X-Content-Type-Options: nosniff and Cache-Control: no-store.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "core/result.hpp"
#include "serve/exposition.hpp"

namespace gpudoc::serve {

inline constexpr int kDefaultPort = 9401;  // beside dcgm-exporter's 9400 (9402 is cert-manager's); deploy/ uses it

struct ServerOptions {
  std::string host = "127.0.0.1";  // loopback unless another address is given explicitly
  int port = kDefaultPort;         // 0: any free port (tests)
  int threads = 4;                 // clients served at once; more wait in the listen queue
  std::chrono::seconds io_timeout{5};
  bool dcgm_compatible = false;
};

// True for 127.0.0.0/8, ::1 and "localhost".
[[nodiscard]] bool is_loopback(std::string_view host);

class Server {
 public:
  // `snapshot` is called once per scrape, from the server's threads (it must be thread-safe).
  using SnapshotFn = std::function<Snapshot()>;
  Server(ServerOptions options, SnapshotFn snapshot);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds and starts serving on a thread of its own; returns the port bound. Errors:
  // kEnvironment naming host:port when it cannot be bound (in use, not an address of this host).
  [[nodiscard]] core::Result<int> start();
  // Stops listening and joins; idempotent.
  void stop();
  [[nodiscard]] std::uint64_t scrapes() const { return scrapes_.load(); }

 private:
  struct Impl;
  ServerOptions options_;
  SnapshotFn snapshot_;
  std::unique_ptr<Impl> impl_;
  std::thread thread_;
  std::atomic<std::uint64_t> scrapes_{0};
  std::atomic<double> last_render_seconds_{-1};
};

}  // namespace gpudoc::serve
