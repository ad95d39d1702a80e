// gpudoc::serve::Server — the HTTP side of `gpudoc serve`: one event loop (epoll) owns every
// connection, and a few handler threads make the answers. A client costs a socket and at most one
// head's bytes (serve/http.hpp) until its request is whole; it never holds a thread, so no client,
// however slow or silent, keeps Prometheus from its scrape. docs/serve.md ("Serving under load").
//
//   serve::Handlers h;
//   h.metrics = [&] { return service.metrics_snapshot(); };
//   serve::Server server({.host = "127.0.0.1", .port = 9401}, std::move(h));
//   auto port = server.start();          // Result<int>: the port bound (0 asks for any free one)
//   ...
//   server.stop();
//
// Routes (read-only: GET and HEAD; any other method is 405 with Allow; any other path 404):
//   /metrics            Prometheus text 0.0.4, or OpenMetrics 1.0 when the Accept header asks for it
//   /api/v1/snapshot    handlers.state's JSON
//   /api/v1/history     handlers.history's JSON for ?seconds=S (1..86400; default 600; else 400); at
//                       most `max_heavy` made or being sent at once (503 with Retry-After beyond)
//   /api/v1/events      text/event-stream: "event: snapshot" with handlers.state's JSON on each update,
//                       a ": keep-alive" comment every 15 s without one; at most `max_streams` at once
//                       (503 beyond, with Retry-After)
//   /healthz            "ok" while handlers.liveness says the sampler is alive, else 503 with its
//                       reason
//   /, /assets/NAME     handlers.asset's files (the dashboard), when given
//
// What a client cannot do: hold a thread (handlers run on their own threads, one of which never
// takes /api/v1/history, so /metrics waits for no history); send a head longer than 8 KiB (414 or
// 431, and the rest is never buffered); send a body (400, or 405 for another method); take longer
// than `request_timeout` to send a whole head, slowly or not at all (closed); leave an answer unread
// for `io_timeout` (closed); keep more than its share of `max_connections` when the server is full
// (the client holding the most connections loses its oldest idle one); make the server hold more
// than `max_pending_bytes` of unread answers (503). The listen queue is the kernel's largest
// (SOMAXCONN), and the open-file limit is raised to its hard limit for the connections.
//
// With a web config (ServerOptions::web_config_file; serve/web_config.hpp): TLS, its handshake
// done by the event loop without blocking and bounded by `request_timeout` like a request's head
// (the two together); basic authentication on every route (401 with WWW-Authenticate), bcrypt run
// on a handler thread that is not the one kept for /metrics, at most `max_verifying` at once (503
// beyond), its verdict remembered (serve/basic_auth.hpp); the file re-read when it changes
// (serve/web_state.hpp). docs/serve.md ("TLS and authentication").
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "core/structured_log.hpp"
#include "serve/config.hpp"
#include "serve/exposition.hpp"
#include "serve/liveness.hpp"

namespace gpudoc::serve {

// Sent with every answer: no script, style or connection from anywhere but this server, no framing.
inline constexpr const char* kContentSecurityPolicy =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

struct ServerOptions {
  std::string host = "127.0.0.1";  // loopback unless another address is given explicitly
  int port = kDefaultPort;         // 0: any free port (tests)
  int threads = 3;                 // handler threads (at least 2: one never takes /api/v1/history)
  int max_streams = 32;            // event streams at once
  int max_heavy = 4;               // /api/v1/history answers made or being sent at once
  int max_connections = 4096;      // open connections at once (and at most the open-file limit allows)
  // A request's head must arrive whole within this, counted from when the connection starts
  // waiting for it: a slow sender and an idle keep-alive connection are closed alike.
  std::chrono::milliseconds request_timeout{10000};
  // An answer that makes no progress for this long (its client does not read): closed.
  std::chrono::milliseconds io_timeout{5000};
  std::size_t max_pending_bytes = std::size_t{64} << 20;  // unread answers, all connections together
  bool dcgm_compatible = false;
  // TLS and basic authentication from this file (serve/web_config.hpp); empty: plain HTTP, no
  // authentication.
  std::string web_config_file{};
  int max_verifying = 16;  // requests waiting for (or in) a bcrypt check at once; 503 beyond
  // Where the server says what happens to it after start (the web config re-read or refused, its
  // warnings; a TLS handshake that failed, at debug level); empty: nowhere. Called from its threads.
  std::function<void(core::LogRecord)> log{};
};

// How a started server is secured (for the line that says where it listens).
struct Security {
  bool tls = false;
  bool basic_auth = false;
  bool client_certificates = false;  // client_auth_type RequireAndVerifyClientCert
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
  std::function<Alive()> liveness;                                   // /healthz
  std::function<std::optional<Asset>(std::string_view path)> asset;  // "/" and "/assets/NAME"
};

class Server {
 public:
  Server(ServerOptions options, Handlers handlers);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Reads the web config when there is one, binds and starts serving on a thread of its own;
  // returns the port bound. Errors: the web config's (kUsage, naming the file: serve/web_state.hpp);
  // kEnvironment naming host:port when it cannot be bound (in use, not an address of this host).
  // The web config's warnings (hashes readable by everyone, an expired certificate) go to
  // options.log.
  [[nodiscard]] core::Result<int> start();
  // Stops listening and joins; idempotent.
  void stop();
  [[nodiscard]] std::uint64_t scrapes() const { return scrapes_.load(); }
  [[nodiscard]] int streams() const { return streams_.load(); }
  [[nodiscard]] int connections() const { return connections_.load(); }
  // As the web config read at start says (all false without one).
  [[nodiscard]] Security security() const { return security_; }

 private:
  struct Impl;  // the loop, the handler threads, the event streams' notifier (server.cpp)
  [[nodiscard]] core::Status open_web_config();
  ServerOptions options_;
  Handlers handlers_;
  std::atomic<std::uint64_t> scrapes_{0};
  std::atomic<int> streams_{0};
  std::atomic<int> connections_{0};
  Security security_{};
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpudoc::serve
