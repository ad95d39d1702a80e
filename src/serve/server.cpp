#include "serve/server.hpp"

#include <fmt/format.h>
#include <httplib.h>
#include <sys/socket.h>
#include <time.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <memory>
#include <thread>

#include "core/host.hpp"

namespace gpudoc::serve {
namespace {

double thread_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// httplib's thread pool, its threads named "serve-http" (see core::name_this_thread).
class NamedPool final : public httplib::TaskQueue {
 public:
  explicit NamedPool(std::size_t threads) : pool_(threads) {}
  void enqueue(std::function<void()> fn) override {
    pool_.enqueue([fn = std::move(fn)] {
      core::name_this_thread("serve-http");
      fn();
    });
  }
  void shutdown() override { pool_.shutdown(); }

 private:
  httplib::ThreadPool pool_;
};

constexpr double kDefaultHistorySeconds = 600;
constexpr double kMaxHistorySeconds = 86400;
constexpr auto kKeepAliveEvery = std::chrono::seconds(15);

void not_allowed(const httplib::Request&, httplib::Response& res) {
  res.status = 405;
  res.set_header("Allow", "GET, HEAD");
  res.set_content("only GET and HEAD: gpudoc serve is read-only\n", "text/plain; charset=utf-8");
}

void plain(httplib::Response& res, int status, std::string_view text) {
  res.status = status;
  res.set_content(std::string(text), "text/plain; charset=utf-8");
}

// ?seconds=S: a number in [1, 86400]; absent: the default. nullopt: not a number in range.
std::optional<double> seconds_param(const httplib::Request& req) {
  if (!req.has_param("seconds")) return kDefaultHistorySeconds;
  const std::string v = req.get_param_value("seconds");
  double x = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || end != v.data() + v.size() || !std::isfinite(x) || x < 1 || x > kMaxHistorySeconds)
    return std::nullopt;
  return x;
}

}  // namespace

bool is_loopback(std::string_view host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.starts_with("127.");
}

struct Server::Impl {
  httplib::Server http;
};

Server::Server(ServerOptions options, Handlers handlers)
    : options_(std::move(options)), handlers_(std::move(handlers)), impl_(std::make_unique<Impl>()) {
  auto& http = impl_->http;
  const int threads = options_.threads > 0 ? options_.threads : 1;
  http.new_task_queue = [threads] { return new NamedPool(static_cast<std::size_t>(threads)); };
  http.set_read_timeout(options_.io_timeout);
  http.set_write_timeout(options_.io_timeout);
  // An idle keep-alive connection costs CPU: httplib polls it every ~10 ms until this timeout. A
  // client that asks again within a second keeps its connection (a load, a dashboard's fetches);
  // Prometheus, every 15 s, connects anew (on loopback or a LAN, a fraction of a millisecond).
  http.set_keep_alive_timeout(1);
  http.set_keep_alive_max_count(1000);  // a scraper keeps its connection: no reconnect every 5 scrapes
  // Answers go out at once: without it Nagle's algorithm holds the last segment of an answer for the
  // client's delayed ACK (~40 ms), capping a keep-alive connection at ~25 requests a second.
  http.set_tcp_nodelay(true);
  // SO_REUSEADDR only: the library's default adds SO_REUSEPORT, with which a second server binds
  // the same port and the kernel splits the scrapes between the two; a port in use must fail.
  http.set_socket_options([](socket_t sock) {
    int yes = 1;
    (void)::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  http.set_payload_max_length(1024);
  http.set_default_headers({{"X-Content-Type-Options", "nosniff"},
                            {"Cache-Control", "no-store"},
                            {"Content-Security-Policy", kContentSecurityPolicy},
                            {"Referrer-Policy", "no-referrer"},
                            {"X-Frame-Options", "DENY"}});
  route_metrics();
  route_api();
  route_events();
  route_assets();
  for (const char* path :
       {"/metrics", "/api/v1/snapshot", "/api/v1/history", "/api/v1/events", "/healthz", "/", "/assets/.*"}) {
    http.Post(path, not_allowed);
    http.Put(path, not_allowed);
    http.Patch(path, not_allowed);
    http.Delete(path, not_allowed);
    http.Options(path, not_allowed);
  }
}

void Server::route_metrics() {
  if (!handlers_.metrics) return;
  impl_->http.Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
    Snapshot s = handlers_.metrics();
    s.self.scrapes = ++scrapes_;
    if (const double last = last_render_seconds_.load(); last >= 0) s.self.last_render_seconds = last;
    const RenderOptions ro{.format = negotiate(req.get_header_value("Accept")),
                           .dcgm_compatible = options_.dcgm_compatible};
    const double t0 = thread_cpu_seconds();
    std::string body;
    render_to(body, s, ro);
    last_render_seconds_.store(thread_cpu_seconds() - t0);
    res.set_content(std::move(body), std::string(content_type(ro.format)));
  });
}

void Server::route_api() {
  auto& http = impl_->http;
  if (handlers_.state)
    http.Get("/api/v1/snapshot", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(handlers_.state(), "application/json");
    });
  if (handlers_.history)
    http.Get("/api/v1/history", [this](const httplib::Request& req, httplib::Response& res) {
      const auto seconds = seconds_param(req);
      if (!seconds) return plain(res, 400, "seconds: a number of seconds from 1 to 86400\n");
      res.set_content(handlers_.history(*seconds), "application/json");
    });
  if (handlers_.healthy)
    http.Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
      if (handlers_.healthy()) return plain(res, 200, "ok\n");
      plain(res, 503, "the sampler is not running\n");
    });
}

void Server::route_events() {
  if (!handlers_.state || !handlers_.wait_for_update) return;
  impl_->http.Get("/api/v1/events", [this](const httplib::Request&, httplib::Response& res) {
    // Each stream holds one of the server's threads: keep some for scrapes.
    if (streams_.fetch_add(1) >= options_.max_streams) {
      streams_.fetch_sub(1);
      res.set_header("Retry-After", "10");
      return plain(res, 503, "too many event streams at once; try again later\n");
    }
    res.set_header("X-Accel-Buffering", "no");
    auto seen = std::make_shared<std::uint64_t>(0);
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, seen](std::size_t, httplib::DataSink& sink) {
          if (stopping_) return false;
          std::string chunk;
          if (*seen == 0) {
            chunk = "retry: 2000\n\n";  // EventSource reconnects after 2 s
          }
          const std::uint64_t now = handlers_.wait_for_update(*seen, kKeepAliveEvery);
          if (now == 0 || stopping_) return false;
          if (now != *seen) {
            *seen = now;
            chunk += "event: snapshot\ndata: ";
            chunk += state_for(now);  // one line: JSON escapes newlines in strings
            chunk += "\n\n";
          } else {
            chunk += ": keep-alive\n\n";
          }
          return sink.write(chunk.data(), chunk.size());
        },
        [this](bool) { streams_.fetch_sub(1); });
  });
}

std::string Server::state_for(std::uint64_t sequence) {
  // Every stream asks for the same state after the same update: rendered once, not once a stream.
  std::lock_guard lock(state_mu_);
  if (sequence != state_sequence_) {
    state_text_ = handlers_.state();
    state_sequence_ = sequence;
  }
  return state_text_;
}

void Server::route_assets() {
  if (!handlers_.asset) return;
  auto serve_asset = [this](const httplib::Request& req, httplib::Response& res) {
    const auto a = handlers_.asset(req.path);
    if (!a) return plain(res, 404, "no such file\n");
    res.set_content(std::string(a->body), std::string(a->content_type));
  };
  impl_->http.Get("/", serve_asset);
  impl_->http.Get("/assets/.*", serve_asset);
}

Server::~Server() { stop(); }

core::Result<int> Server::start() {
  auto& http = impl_->http;
  int port = options_.port;
  if (port == 0) {
    port = http.bind_to_any_port(options_.host);
    if (port < 0) port = 0;
  } else if (!http.bind_to_port(options_.host, port)) {
    port = 0;
  }
  if (port <= 0)
    return core::Error(
        core::ErrorKind::kEnvironment,
        fmt::format("cannot listen on {}:{} (in use, or not an address of this host)", options_.host, options_.port));
  auto ended = std::make_shared<std::atomic<bool>>(false);
  thread_ = std::thread([&http, ended] {
    core::name_this_thread("serve-listen");
    http.listen_after_bind();
    *ended = true;
  });
  // Until the listening thread runs, the library's stop() does nothing and the thread would then
  // wait in accept() for ever: a stop right after the start (a signal, a test) must find it running.
  while (!http.is_running() && !*ended) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return port;
}

void Server::stop() {
  stopping_ = true;
  impl_->http.stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace gpudoc::serve
