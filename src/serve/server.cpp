#include "serve/server.hpp"

#include <fmt/format.h>
#include <httplib.h>
#include <time.h>

namespace gpudoc::serve {
namespace {

double thread_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

bool is_loopback(std::string_view host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.starts_with("127.");
}

struct Server::Impl {
  httplib::Server http;
};

Server::Server(ServerOptions options, SnapshotFn snapshot)
    : options_(std::move(options)), snapshot_(std::move(snapshot)), impl_(std::make_unique<Impl>()) {
  auto& http = impl_->http;
  const int threads = options_.threads > 0 ? options_.threads : 1;
  http.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<std::size_t>(threads)); };
  http.set_read_timeout(options_.io_timeout);
  http.set_write_timeout(options_.io_timeout);
  http.set_keep_alive_timeout(static_cast<time_t>(options_.io_timeout.count()));
  http.set_payload_max_length(1024);
  http.set_default_headers({{"X-Content-Type-Options", "nosniff"}, {"Cache-Control", "no-store"}});
  http.Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
    Snapshot s = snapshot_();
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
  const auto not_allowed = [](const httplib::Request&, httplib::Response& res) {
    res.status = 405;
    res.set_header("Allow", "GET, HEAD");
  };
  http.Post("/metrics", not_allowed);
  http.Put("/metrics", not_allowed);
  http.Patch("/metrics", not_allowed);
  http.Delete("/metrics", not_allowed);
  http.Options("/metrics", not_allowed);
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
  thread_ = std::thread([&http] { http.listen_after_bind(); });
  return port;
}

void Server::stop() {
  impl_->http.stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace gpudoc::serve
