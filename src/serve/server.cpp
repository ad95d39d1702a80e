#include "serve/server.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/host.hpp"
#include "serve/http.hpp"
#include "serve/process_metrics.hpp"
#include "serve/tls.hpp"
#include "serve/web_state.hpp"

namespace gpudoc::serve {
namespace {

using Clock = std::chrono::steady_clock;

constexpr double kDefaultHistorySeconds = 600;
constexpr double kMaxHistorySeconds = 86400;
constexpr auto kKeepAliveEvery = std::chrono::seconds(15);
constexpr auto kPauseOnNoFiles = std::chrono::milliseconds(100);  // accept again after EMFILE
constexpr auto kLinger = std::chrono::milliseconds(1000);         // reading what a refused client still sends
constexpr std::size_t kLingerBytes = 256 * 1024;
constexpr std::size_t kStreamPendingMax = 1 << 20;           // an event stream's client this far behind: closed
constexpr auto kAnswerTimeLimit = std::chrono::seconds(60);  // a 2 MB history at ~35 kB/s still arrives
constexpr std::uint64_t kListenId = 0;
constexpr std::uint64_t kWakeId = 1;

double thread_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

http::Answer make(int status, std::string content_type, std::string body) {
  http::Answer a;
  a.status = status;
  a.content_type = std::move(content_type);
  a.body = std::move(body);
  return a;
}

http::Answer plain(int status, std::string text) { return make(status, "text/plain; charset=utf-8", std::move(text)); }

http::Answer busy(std::string text) {
  http::Answer a = plain(503, std::move(text));
  a.headers.emplace_back("Retry-After", "10");
  return a;
}

// ?seconds=S: a number in [1, 86400]; absent: the default. nullopt: not a number in range.
std::optional<double> seconds_param(const http::Request& req) {
  const auto v = req.param("seconds");
  if (!v)
    return req.query.find("seconds") == std::string::npos ? std::optional<double>(kDefaultHistorySeconds)
                                                          : std::nullopt;
  double x = 0;
  const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), x);
  if (ec != std::errc() || end != v->data() + v->size() || !std::isfinite(x) || x < 1 || x > kMaxHistorySeconds)
    return std::nullopt;
  return x;
}

// gpudoc's own headers with a web config's in place of those of the same name (case aside), and
// the web config's others after them.
std::vector<std::pair<std::string, std::string>> merged_headers(
    std::vector<std::pair<std::string, std::string>> own, const std::vector<std::pair<std::string, std::string>>& web) {
  const auto same = [](std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
             return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
  };
  for (const auto& [name, value] : web) {
    const auto it = std::find_if(own.begin(), own.end(), [&](const auto& h) { return same(h.first, name); });
    if (it != own.end())
      it->second = value;
    else
      own.emplace_back(name, value);
  }
  return own;
}

// The peer's address without its port: what "one client" is when the server is full.
std::string peer_address(const sockaddr_storage& a) {
  char text[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET)
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(a).sin_addr, text, sizeof text);
  else if (a.ss_family == AF_INET6)
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(a).sin6_addr, text, sizeof text);
  return text;
}

// Raises the soft open-file limit to the hard one (systemd's default soft limit is 1024): a
// connection is a file. Returns the soft limit then in force.
rlim_t raise_open_file_limit() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return 1024;
  if (rl.rlim_cur < rl.rlim_max) {
    rlimit want = rl;
    want.rlim_cur = std::min<rlim_t>(rl.rlim_max, 1 << 20);
    if (::setrlimit(RLIMIT_NOFILE, &want) == 0) rl = want;
  }
  return rl.rlim_cur;
}

// A socket listening on host:port (SO_REUSEADDR, not SO_REUSEPORT: a port another server holds
// must fail, not be shared with it), with the kernel's largest listen queue; -1 when none can be.
int listen_on(const std::string& host, int port) {
  std::string h = host;
  if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  if (::getaddrinfo(h.empty() ? nullptr : h.c_str(), service.c_str(), &hints, &res) != 0) return -1;
  int fd = -1;
  for (addrinfo* ai = res; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    int yes = 1;
    (void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(res);
  return fd;
}

int bound_port(int fd) {
  sockaddr_storage a{};
  socklen_t n = sizeof a;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n) != 0) return 0;
  if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port);
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(a).sin6_port);
  return 0;
}

enum class Phase {
  kHandshaking,  // TLS: the handshake, bounded by the same deadline as the request's head
  kReading,      // waiting for a request's head (at most kMaxHead bytes are kept)
  kHandling,     // a handler thread makes the answer
  kWriting,      // the answer goes out as fast as the client takes it
  kStreaming,    // an event stream: answered, more to come
  kLingering,    // refused: our end is shut, what the client still sends is read and dropped, briefly
};

struct Conn {
  int fd = -1;
  std::uint64_t id = 0;
  std::string client;
  Phase phase = Phase::kReading;
  std::string in;
  std::string out;
  std::size_t sent = 0;
  bool stream = false;  // the answer is an event stream
  bool heavy = false;   // holds one of max_heavy
  bool close_after = false;
  Clock::time_point deadline;  // kReading: the whole head; kWriting/kStreaming: the next progress; kLingering: the end
  Clock::time_point waiting_since;
  Clock::time_point answer_started;
  std::uint64_t stream_sequence = 0;
  std::size_t lingered = 0;
  std::uint32_t interest = 0;
  std::unique_ptr<TlsConnection> tls{};  // null: plain HTTP
  bool want_flip = false;                // TLS: the phase's read waits to write, or its write to read
};

struct Job {
  std::uint64_t conn;
  http::Request request;
  bool heavy;
  std::shared_ptr<BasicAuth> verify_with{};  // not null: bcrypt first (the credentials are not known yet)
};

struct Done {
  std::uint64_t conn;
  http::Answer answer;
  bool head_request;
  bool keep_alive;
  std::uint64_t stream_sequence;
  bool verified = false;  // held one of max_verifying
};

http::Answer unauthorized() {
  http::Answer a = plain(401, "unauthorized\n");
  a.headers.emplace_back("WWW-Authenticate", "Basic realm=\"gpudoc\", charset=\"UTF-8\"");
  return a;
}

struct Broadcast {
  std::uint64_t sequence;  // 0: a keep-alive comment, for every stream
  std::string text;
};

}  // namespace

bool is_loopback(std::string_view host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.starts_with("127.");
}

struct Server::Impl {
  Server& s;
  // gpudoc's own headers; a web config's http_server_config.headers replace those of their names
  const std::vector<std::pair<std::string, std::string>> own_headers{
      {"X-Content-Type-Options", "nosniff"},
      {"Cache-Control", "no-store"},
      {"Content-Security-Policy", kContentSecurityPolicy},
      {"Referrer-Policy", "no-referrer"},
      {"X-Frame-Options", "DENY"}};
  int listen_fd = -1;
  int epoll_fd = -1;
  int wake_fd = -1;
  std::atomic<bool> stopping{false};
  std::thread loop_thread;
  std::thread notifier_thread;
  std::vector<std::thread> workers;

  // loop thread only
  std::vector<std::pair<std::string, std::string>> common_headers = own_headers;  // sent with every answer
  std::unique_ptr<WebWatch> web;                                                  // null: no web config
  std::shared_ptr<const WebState> web_state;                                      // the one in force
  int verifying = 0;  // requests holding one of max_verifying
  std::unordered_map<std::uint64_t, std::unique_ptr<Conn>> conns;
  std::map<std::string, int> per_client;
  std::uint64_t next_id = 2;
  std::size_t pending_bytes = 0;
  int heavy_in_flight = 0;
  int max_connections = 0;
  bool listen_paused = false;
  Clock::time_point listen_resume;
  // The earliest deadline of any connection (or later: a deadline that moved on is found then);
  // the loop sleeps until it, not on a tick: an idle server does not wake.
  Clock::time_point next_sweep = Clock::time_point::max();

  void set_deadline(Conn& c, Clock::time_point t) {
    c.deadline = t;
    next_sweep = std::min(next_sweep, t);
  }

  // shared with the handler threads and the notifier
  std::mutex mu;
  std::condition_variable work_cv;
  std::deque<Job> light_jobs;  // any handler thread
  std::deque<Job> heavy_jobs;  // every handler thread but the first
  std::vector<Done> done;
  std::vector<Broadcast> broadcasts;
  std::atomic<double> last_render_seconds{-1};
  std::mutex state_mu;
  std::uint64_t state_sequence = 0;
  std::string state_text;

  explicit Impl(Server& server) : s(server) {}

  void wake() {
    const std::uint64_t one = 1;
    (void)!::write(wake_fd, &one, sizeof one);
  }

  // ---- answers (handler threads) ----

  std::string state_for(std::uint64_t sequence) {
    // Every stream asks for the same state after the same update: rendered once, not once a stream.
    std::lock_guard lock(state_mu);
    if (sequence != state_sequence || state_text.empty()) {
      state_text = s.handlers_.state();
      state_sequence = sequence;
    }
    return state_text;
  }

  http::Answer metrics(const http::Request& req) {
    Snapshot snap = s.handlers_.metrics();
    snap.self.scrapes = ++s.scrapes_;
    snap.process = read_process_self();
    if (const double last = last_render_seconds.load(); last >= 0) snap.self.last_render_seconds = last;
    const RenderOptions ro{.format = negotiate(req.header("Accept").value_or("")),
                           .dcgm_compatible = s.options_.dcgm_compatible};
    const double t0 = thread_cpu_seconds();
    http::Answer a = make(200, std::string(content_type(ro.format)), {});
    render_to(a.body, snap, ro);
    last_render_seconds.store(thread_cpu_seconds() - t0);
    return a;
  }

  // An event stream's first answer: its headers, the reconnect delay and the current state.
  http::Answer open_stream(std::uint64_t& sequence) {
    if (s.streams_.fetch_add(1) >= s.options_.max_streams) {
      s.streams_.fetch_sub(1);
      return busy("too many event streams at once; try again later\n");
    }
    http::Answer a = make(200, "text/event-stream", "retry: 2000\n\n");
    a.headers.emplace_back("X-Accel-Buffering", "no");
    a.stream = true;
    sequence = s.handlers_.wait_for_update(0, std::chrono::milliseconds(0));
    if (sequence != 0) a.body += "event: snapshot\ndata: " + state_for(sequence) + "\n\n";
    return a;
  }

  http::Answer answer(const http::Request& req, std::uint64_t& stream_sequence) {
    const auto& h = s.handlers_;
    const std::string& p = req.path;
    if (p == "/metrics" && h.metrics) return metrics(req);
    if (p == "/api/v1/snapshot" && h.state) return make(200, "application/json", h.state());
    if (p == "/api/v1/history" && h.history) {
      const auto seconds = seconds_param(req);
      if (!seconds) return plain(400, "seconds: a number of seconds from 1 to 86400\n");
      return make(200, "application/json", h.history(*seconds));
    }
    if (p == "/api/v1/events" && h.state && h.wait_for_update) {
      if (req.method == "HEAD") return make(200, "text/event-stream", {});
      return open_stream(stream_sequence);
    }
    if (p == "/healthz" && h.liveness) {
      const Alive a = h.liveness();
      return a.ok ? plain(200, "ok\n") : plain(503, "not alive: " + a.reason + "\n");
    }
    if ((p == "/" || p.starts_with("/assets/")) && h.asset) {
      const auto a = h.asset(p);
      if (!a) return plain(404, "no such file\n");
      return make(200, std::string(a->content_type), std::string(a->body));
    }
    return plain(404, "no such path\n");
  }

  void work(bool takes_heavy) {
    core::name_this_thread("serve-http");
    std::unique_lock lock(mu);
    while (true) {
      work_cv.wait(lock, [&] { return stopping || !light_jobs.empty() || (takes_heavy && !heavy_jobs.empty()); });
      if (stopping) return;
      auto& q = !light_jobs.empty() ? light_jobs : heavy_jobs;
      Job job = std::move(q.front());
      q.pop_front();
      lock.unlock();
      std::uint64_t sequence = 0;
      http::Answer a;
      try {
        if (job.verify_with && !job.verify_with->verify(job.request.header("Authorization")))
          a = unauthorized();
        else
          a = answer(job.request, sequence);
      } catch (const std::exception&) {
        a = plain(500, "the answer could not be made\n");
      }
      lock.lock();
      done.push_back(Done{.conn = job.conn,
                          .answer = std::move(a),
                          .head_request = job.request.method == "HEAD",
                          .keep_alive = job.request.keep_alive,
                          .stream_sequence = sequence,
                          .verified = job.verify_with != nullptr});
      wake();
    }
  }

  // ---- event streams (notifier thread) ----

  void notify() {
    core::name_this_thread("serve-events");
    std::uint64_t last = 0;
    auto last_sent = Clock::now();
    while (!stopping) {
      const std::uint64_t now = s.handlers_.wait_for_update(last, std::chrono::milliseconds(1000));
      if (stopping) return;
      if (now == 0) {  // not running (yet, or any more)
        std::unique_lock lock(mu);
        work_cv.wait_for(lock, std::chrono::milliseconds(200), [&] { return stopping.load(); });
        continue;
      }
      Broadcast b;
      if (now != last) {
        last = now;
        if (s.streams_.load() == 0) continue;
        b = Broadcast{.sequence = now, .text = "event: snapshot\ndata: " + state_for(now) + "\n\n"};
      } else if (Clock::now() - last_sent >= kKeepAliveEvery) {
        b = Broadcast{.sequence = 0, .text = ": keep-alive\n\n"};
      } else {
        continue;
      }
      last_sent = Clock::now();
      std::lock_guard lock(mu);
      broadcasts.push_back(std::move(b));
      wake();
    }
  }

  // ---- the loop ----

  void say(core::LogRecord r) {
    if (s.options_.log) s.options_.log(std::move(r));
  }

  // The web config in force (its files looked at again at most once a second); null without one.
  const WebState* web_now() {
    if (!web) return nullptr;
    std::vector<core::LogRecord> said;
    auto state = web->current(Clock::now(), said);
    if (state != web_state) {
      web_state = std::move(state);
      common_headers = merged_headers(own_headers, web_state->headers);
    }
    for (auto& r : said) say(std::move(r));
    return web_state.get();
  }

  // What the connection sent: > 0 bytes; 0: it ended; -1: nothing more now; -2: a failure (close).
  ssize_t receive(Conn& c, char* buf, std::size_t n) {
    if (!c.tls) {
      while (true) {
        const ssize_t r = ::recv(c.fd, buf, n, 0);
        if (r >= 0) return r;
        if (errno != EINTR) return errno == EAGAIN || errno == EWOULDBLOCK ? -1 : -2;
      }
    }
    const TlsResult r = c.tls->read(buf, n);
    c.want_flip = r.io == TlsIo::kWantWrite;  // (a key update's answer waits for room)
    set_interest(c, EPOLLIN | EPOLLRDHUP | (c.want_flip ? std::uint32_t{EPOLLOUT} : 0u));
    switch (r.io) {
      case TlsIo::kDone: return static_cast<ssize_t>(r.bytes);
      case TlsIo::kWantRead:
      case TlsIo::kWantWrite: return -1;
      case TlsIo::kClosed: return 0;
      default: return -2;
    }
  }

  // Sends from `data`: > 0 bytes taken; -1: none now (wait for the socket); -2: a failure (close).
  ssize_t transmit(Conn& c, const char* data, std::size_t n) {
    if (!c.tls) {
      while (true) {
        const ssize_t r = ::send(c.fd, data, n, MSG_NOSIGNAL);
        if (r > 0) return r;
        if (r == 0 || errno != EINTR) return r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? -1 : -2;
      }
    }
    const TlsResult r = c.tls->write(data, n);
    c.want_flip = r.io == TlsIo::kWantRead;
    if (r.io == TlsIo::kDone) return static_cast<ssize_t>(r.bytes);
    return r.io == TlsIo::kWantRead || r.io == TlsIo::kWantWrite ? -1 : -2;
  }

  // TLS: the handshake, as far as the socket lets it go now; then the request, when it came along.
  void handshake(Conn& c) {
    switch (c.tls->handshake()) {
      case TlsIo::kDone:
        c.phase = Phase::kReading;
        set_interest(c, EPOLLIN | EPOLLRDHUP);
        return readable(c);
      case TlsIo::kWantRead: return set_interest(c, EPOLLIN | EPOLLRDHUP);
      case TlsIo::kWantWrite: return set_interest(c, EPOLLOUT);
      case TlsIo::kFailed:
        if (core::log_level() <= core::LogLevel::kDebug)
          say({.level = core::LogLevel::kDebug,
               .msg = "TLS handshake failed",
               .fields = {{"client", c.client}, {"err", c.tls->error()}},
               .text = fmt::format("a TLS handshake from {} failed: {}", c.client, c.tls->error())});
        return close_conn(c.id);
      case TlsIo::kClosed: return close_conn(c.id);
    }
  }

  void set_interest(Conn& c, std::uint32_t events) {
    if (c.interest == events) return;
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = c.id;
    (void)::epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c.fd, &ev);
    c.interest = events;
  }

  void close_conn(std::uint64_t id) {
    const auto it = conns.find(id);
    if (it == conns.end()) return;
    Conn& c = *it->second;
    pending_bytes -= c.out.size() - c.sent;
    if (c.heavy) --heavy_in_flight;
    if (c.stream) s.streams_.fetch_sub(1);
    if (auto pc = per_client.find(c.client); pc != per_client.end() && --pc->second <= 0) per_client.erase(pc);
    (void)::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c.fd, nullptr);
    if (c.tls) c.tls->close_notify();
    ::close(c.fd);
    conns.erase(it);
    s.connections_.store(static_cast<int>(conns.size()));
    if (listen_paused) resume_listening();
  }

  void pause_listening(Clock::duration for_how_long) {
    epoll_event ev{};
    ev.data.u64 = kListenId;
    (void)::epoll_ctl(epoll_fd, EPOLL_CTL_MOD, listen_fd, &ev);
    listen_paused = true;
    listen_resume = Clock::now() + for_how_long;
    next_sweep = std::min(next_sweep, listen_resume);
  }

  void resume_listening() {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kListenId;
    (void)::epoll_ctl(epoll_fd, EPOLL_CTL_MOD, listen_fd, &ev);
    listen_paused = false;
  }

  // The server is full: the client holding the most connections loses its longest-waiting idle one.
  // False when no connection is idle (then the newcomer is the one turned away).
  bool evict() {
    const auto biggest = std::max_element(per_client.begin(), per_client.end(),
                                          [](const auto& a, const auto& b) { return a.second < b.second; });
    if (biggest == per_client.end()) return false;
    Conn* oldest = nullptr;
    for (auto& [id, c] : conns)
      if (c->client == biggest->first && (c->phase == Phase::kReading || c->phase == Phase::kHandshaking) &&
          (oldest == nullptr || c->waiting_since < oldest->waiting_since))
        oldest = c.get();
    if (oldest == nullptr) return false;
    close_conn(oldest->id);
    return true;
  }

  void accept_all() {
    const WebState* web_config = web_now();
    while (true) {
      sockaddr_storage peer{};
      socklen_t n = sizeof peer;
      const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&peer), &n, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) pause_listening(kPauseOnNoFiles);
        return;  // EAGAIN: all taken; anything else: the next readiness tries again
      }
      const std::string client = peer_address(peer);
      // a web config that has become invalid: refused, not served without it
      if ((static_cast<int>(conns.size()) >= max_connections && !evict()) ||
          (web_config != nullptr && !web_config->failure.empty())) {
        ::close(fd);
        continue;
      }
      int yes = 1;
      (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
      auto c = std::make_unique<Conn>();
      c->fd = fd;
      c->id = next_id++;
      c->client = client;
      c->waiting_since = Clock::now();
      set_deadline(*c, c->waiting_since + s.options_.request_timeout);
      if (web_config != nullptr && web_config->tls) {
        c->tls = std::make_unique<TlsConnection>(*web_config->tls, fd);
        c->phase = Phase::kHandshaking;
        if (!c->tls->ok()) {
          ::close(fd);
          continue;
        }
      }
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLRDHUP;
      ev.data.u64 = c->id;
      if (::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        ::close(fd);
        continue;
      }
      c->interest = ev.events;
      ++per_client[client];
      conns.emplace(c->id, std::move(c));
      s.connections_.store(static_cast<int>(conns.size()));
    }
  }

  // Sends what it can of c.out; false when the connection was closed.
  bool flush(Conn& c) {
    while (c.sent < c.out.size()) {
      const ssize_t n = transmit(c, c.out.data() + c.sent, c.out.size() - c.sent);
      if (n > 0) {
        c.sent += static_cast<std::size_t>(n);
        pending_bytes -= static_cast<std::size_t>(n);
        c.deadline = Clock::now() + s.options_.io_timeout;
        continue;
      }
      if (n == -1) {
        set_interest(c, c.want_flip ? std::uint32_t{EPOLLIN | EPOLLRDHUP} : std::uint32_t{EPOLLOUT});
        return true;
      }
      close_conn(c.id);
      return false;
    }
    c.out.clear();
    c.sent = 0;
    return written(c);
  }

  // Everything queued has gone out: what the connection does next. False when it was closed.
  bool written(Conn& c) {
    if (c.heavy) {
      c.heavy = false;
      --heavy_in_flight;
    }
    if (c.stream) {
      c.phase = Phase::kStreaming;
      set_interest(c, EPOLLIN | EPOLLRDHUP);  // only to notice the client leaving
      return true;
    }
    if (c.close_after) {
      // Refused mid-request: shut our end and read what the client still sends for a moment, so
      // the answer is not lost to a reset.
      if (c.tls) c.tls->close_notify();
      (void)::shutdown(c.fd, SHUT_WR);
      c.phase = Phase::kLingering;
      set_deadline(c, Clock::now() + kLinger);
      set_interest(c, EPOLLIN | EPOLLRDHUP);
      return true;
    }
    c.phase = Phase::kReading;
    c.waiting_since = Clock::now();
    set_deadline(c, c.waiting_since + s.options_.request_timeout);
    set_interest(c, EPOLLIN | EPOLLRDHUP);
    if (!take_request(c)) return false;  // a pipelined request may be here already
    if (c.tls && c.phase == Phase::kReading && c.tls->pending()) {
      // TLS: bytes already decrypted (or in OpenSSL's buffer) that no readiness will announce
      const std::uint64_t id = c.id;
      readable(c);
      return conns.contains(id);
    }
    return true;
  }

  // Queues `bytes` on c and starts sending; the connection ends after them when `close`. False when
  // the connection was closed.
  bool send_answer(Conn& c, std::string bytes, bool close) {
    c.close_after = c.close_after || close;
    pending_bytes += bytes.size();
    c.out = std::move(bytes);
    c.sent = 0;
    c.phase = Phase::kWriting;
    c.answer_started = Clock::now();
    set_deadline(c, c.answer_started + s.options_.io_timeout);
    next_sweep = std::min(next_sweep, c.answer_started + kAnswerTimeLimit);
    return flush(c);
  }

  bool refuse(Conn& c, const http::Parsed& p) {
    http::Answer a = plain(p.status, p.reason + "\n");
    if (p.status == 405) a.headers.emplace_back("Allow", "GET, HEAD");
    a.close = true;
    return send_answer(c, http::format(a, false, false, common_headers), true);
  }

  // A whole head in c.in: answer it (refusals here, the rest on a handler thread). False when the
  // connection was closed.
  bool take_request(Conn& c) {
    const auto end = http::head_end(c.in);
    if (!end) {
      if (c.in.size() >= http::kMaxHead) return refuse(c, http::too_long(c.in));
      return true;
    }
    http::Parsed p = http::parse_head(std::string_view(c.in).substr(0, *end));
    c.in.erase(0, *end);
    if (p.status != 0) return refuse(c, p);
    const bool head = p.request.method == "HEAD";
    const auto answer_now = [&](const http::Answer& a) {
      return send_answer(c, http::format(a, head, p.request.keep_alive && !a.close, common_headers),
                         !p.request.keep_alive || a.close);
    };
    std::shared_ptr<BasicAuth> verify_with;
    if (const WebState* web_config = web_now(); web_config != nullptr) {
      if (!web_config->failure.empty()) {
        http::Answer a = busy("the server's web config file is invalid (its log says why); try again later\n");
        a.close = true;
        return answer_now(a);
      }
      if (web_config->auth) {
        switch (web_config->auth->check_cached(p.request.header("Authorization"))) {
          case BasicAuth::Verdict::kAllowed: break;
          case BasicAuth::Verdict::kDenied: return answer_now(unauthorized());
          case BasicAuth::Verdict::kUnknown:
            // bcrypt on a handler thread; a flood of new passwords waits its turn or is turned away
            if (verifying >= std::max(1, s.options_.max_verifying))
              return answer_now(busy("too many logins being checked at once; try again later\n"));
            ++verifying;
            verify_with = web_config->auth;
        }
      }
    }
    const bool heavy = p.request.path == "/api/v1/history" && s.handlers_.history;
    if (heavy) {
      if (heavy_in_flight >= s.options_.max_heavy) {
        if (verify_with) --verifying;
        return answer_now(busy("too many history requests at once; try again later\n"));
      }
      ++heavy_in_flight;
      c.heavy = true;
    }
    c.phase = Phase::kHandling;
    set_interest(c, 0);  // nothing is read until it is answered (a half-closed client still gets its answer)
    {
      std::lock_guard lock(mu);
      // bcrypt, like history, never on the first handler thread: /metrics waits for neither
      (heavy || verify_with ? heavy_jobs : light_jobs)
          .push_back(Job{.conn = c.id, .request = std::move(p.request), .heavy = heavy, .verify_with = verify_with});
    }
    work_cv.notify_all();
    return true;
  }

  void readable(Conn& c) {
    char buf[16384];
    while (true) {
      std::size_t room = sizeof buf;
      if (c.phase == Phase::kReading) room = std::min(room, http::kMaxHead + 1 - std::min(c.in.size(), http::kMaxHead));
      const ssize_t n = receive(c, buf, room);
      if (n == 0) return close_conn(c.id);
      if (n < 0) {
        if (n == -2) close_conn(c.id);
        return;
      }
      switch (c.phase) {
        case Phase::kReading:
          c.in.append(buf, static_cast<std::size_t>(n));
          if (!take_request(c)) return;
          if (c.phase != Phase::kReading) return;  // the rest waits until this request is answered
          break;
        case Phase::kLingering:
        case Phase::kStreaming:  // what a stream's client sends is not read: dropped, up to a bound
          c.lingered += static_cast<std::size_t>(n);
          if (c.lingered > kLingerBytes) return close_conn(c.id);
          break;
        case Phase::kHandshaking:
        case Phase::kHandling:
        case Phase::kWriting:  // not polled for input until the answer is out
          return;
      }
    }
  }

  void take_done() {
    std::vector<Done> ready;
    std::vector<Broadcast> news;
    {
      std::lock_guard lock(mu);
      ready.swap(done);
      news.swap(broadcasts);
    }
    for (Done& d : ready) {
      if (d.verified) --verifying;
      const auto it = conns.find(d.conn);
      if (it == conns.end()) {
        if (d.answer.stream) s.streams_.fetch_sub(1);  // its client left while it was made
        continue;
      }
      Conn& c = *it->second;
      if (!d.answer.stream && pending_bytes + d.answer.body.size() > s.options_.max_pending_bytes)
        d.answer = busy("the server holds too many unread answers; try again later\n");
      c.stream = d.answer.stream;
      c.stream_sequence = d.stream_sequence;
      (void)send_answer(c, http::format(d.answer, d.head_request, d.keep_alive, common_headers),
                        !d.keep_alive || d.answer.close);
    }
    for (const Broadcast& b : news) {
      std::vector<std::uint64_t> behind, idle;
      for (auto& [id, c] : conns) {
        if (!c->stream || (b.sequence != 0 && b.sequence <= c->stream_sequence)) continue;
        if (b.sequence != 0) c->stream_sequence = b.sequence;
        if (c->out.size() - c->sent + b.text.size() > kStreamPendingMax) {
          behind.push_back(id);  // its client does not keep up
          continue;
        }
        c->out += b.text;
        pending_bytes += b.text.size();
        if (c->phase == Phase::kStreaming) idle.push_back(id);
      }
      for (std::uint64_t id : behind) close_conn(id);
      for (std::uint64_t id : idle) {
        Conn& c = *conns.at(id);
        c.phase = Phase::kWriting;
        set_deadline(c, Clock::now() + s.options_.io_timeout);
        (void)flush(c);
      }
    }
  }

  // Closes every connection past its deadline; finds the next one.
  void sweep(Clock::time_point now) {
    std::vector<std::uint64_t> expired;
    next_sweep = Clock::time_point::max();
    for (auto& [id, c] : conns) {
      if (c->phase == Phase::kHandling || c->phase == Phase::kStreaming) continue;
      // A whole answer, however slowly taken, within kAnswerTimeLimit (an event stream: each update).
      const bool limited = c->phase == Phase::kWriting && !c->stream;
      const auto due = limited ? std::min(c->deadline, c->answer_started + kAnswerTimeLimit) : c->deadline;
      if (now >= due)
        expired.push_back(id);
      else
        next_sweep = std::min(next_sweep, due);
    }
    for (std::uint64_t id : expired) close_conn(id);
    if (listen_paused) {
      if (now >= listen_resume && static_cast<int>(conns.size()) < max_connections)
        resume_listening();
      else
        next_sweep = std::min(next_sweep, std::max(listen_resume, now + kPauseOnNoFiles));
    }
  }

  // Milliseconds until the next deadline (-1: none), rounded up.
  int wait_ms() const {
    if (next_sweep == Clock::time_point::max()) return -1;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(next_sweep - Clock::now()).count();
    return static_cast<int>(std::clamp<long long>(left, 0, 60'000));
  }

  void run() {
    core::name_this_thread("serve-http");
    // OpenSSL writes with write(2), not send(MSG_NOSIGNAL): a client gone mid-answer would raise
    // SIGPIPE. Blocked on this thread only, it stays pending and the write fails with EPIPE.
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    (void)::pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
    std::array<epoll_event, 256> events{};
    while (!stopping) {
      const int n = ::epoll_wait(epoll_fd, events.data(), static_cast<int>(events.size()), wait_ms());
      for (int i = 0; i < n; ++i) {
        const std::uint64_t id = events[static_cast<std::size_t>(i)].data.u64;
        const std::uint32_t ev = events[static_cast<std::size_t>(i)].events;
        if (id == kListenId) {
          accept_all();
          continue;
        }
        if (id == kWakeId) {
          std::uint64_t count = 0;
          (void)!::read(wake_fd, &count, sizeof count);
          continue;
        }
        const auto it = conns.find(id);
        if (it == conns.end()) continue;
        Conn& c = *it->second;
        if ((ev & EPOLLERR) != 0) {
          close_conn(id);
          continue;
        }
        if (c.phase == Phase::kHandshaking) {
          handshake(c);  // whatever the readiness: the handshake says what it waits for
          continue;
        }
        const bool in = (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP)) != 0;
        const bool out = (ev & EPOLLOUT) != 0;
        if (c.phase == Phase::kWriting && (out || (c.want_flip && in))) {
          if (!flush(c)) continue;
        } else if (out && c.want_flip && c.phase != Phase::kHandling) {
          readable(c);  // TLS: a read that waited to write
          continue;
        }
        if ((ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP)) != 0) {
          if (c.phase == Phase::kHandling || c.phase == Phase::kWriting) {
            // Nothing is read until the answer is out; a client gone both ways is gone.
            if ((ev & EPOLLHUP) != 0) close_conn(id);
            continue;
          }
          readable(c);
        }
      }
      take_done();
      if (const auto now = Clock::now(); now >= next_sweep) sweep(now);
    }
    while (!conns.empty()) close_conn(conns.begin()->first);
  }
};

Server::Server(ServerOptions options, Handlers handlers)
    : options_(std::move(options)), handlers_(std::move(handlers)), impl_(std::make_unique<Impl>(*this)) {}

Server::~Server() { stop(); }

core::Status Server::open_web_config() {
  Impl& m = *impl_;
  std::vector<std::string> warnings;
  auto watch = WebWatch::open(options_.web_config_file, &warnings);
  if (!watch) return watch.error();
  m.web = std::move(*watch);
  (void)m.web_now();
  const WebState& w = *m.web_state;
  security_ = {.tls = w.tls != nullptr,
               .basic_auth = w.auth != nullptr,
               .client_certificates = w.client_auth == ClientAuth::kRequireAndVerify};
  for (const std::string& text : warnings)
    m.say({.level = core::LogLevel::kWarn,
           .msg = "web config",
           .fields = {{"file", options_.web_config_file}, {"warning", text}},
           .text = text});
  return core::ok_status();
}

core::Result<int> Server::start() {
  Impl& m = *impl_;
  if (!options_.web_config_file.empty())
    if (auto st = open_web_config(); !st) return st.error();
  const int fd = listen_on(options_.host, options_.port);
  if (fd < 0)
    return core::Error(
        core::ErrorKind::kEnvironment,
        fmt::format("cannot listen on {}:{} (in use, or not an address of this host)", options_.host, options_.port));
  const rlim_t files = raise_open_file_limit();
  m.max_connections = static_cast<int>(std::max<rlim_t>(
      16, std::min<rlim_t>(static_cast<rlim_t>(std::max(1, options_.max_connections)), files > 64 ? files - 64 : 16)));
  m.listen_fd = fd;
  m.epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  m.wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (m.epoll_fd < 0 || m.wake_fd < 0) {
    const int e = errno;
    stop();
    return core::Error(core::ErrorKind::kEnvironment, fmt::format("cannot start serving: {}", std::strerror(e)));
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenId;
  (void)::epoll_ctl(m.epoll_fd, EPOLL_CTL_ADD, m.listen_fd, &ev);
  ev.data.u64 = kWakeId;
  (void)::epoll_ctl(m.epoll_fd, EPOLL_CTL_ADD, m.wake_fd, &ev);
  const int threads = std::max(2, options_.threads);
  for (int i = 0; i < threads; ++i) m.workers.emplace_back([&m, i] { m.work(i != 0); });
  if (handlers_.state && handlers_.wait_for_update) m.notifier_thread = std::thread([&m] { m.notify(); });
  m.loop_thread = std::thread([&m] { m.run(); });
  return bound_port(fd);
}

void Server::stop() {
  Impl& m = *impl_;
  {
    std::lock_guard lock(m.mu);
    m.stopping = true;
  }
  m.work_cv.notify_all();
  if (m.wake_fd >= 0) m.wake();
  if (m.loop_thread.joinable()) m.loop_thread.join();
  for (auto& t : m.workers)
    if (t.joinable()) t.join();
  m.workers.clear();
  if (m.notifier_thread.joinable()) m.notifier_thread.join();
  for (int* fd : {&m.listen_fd, &m.epoll_fd, &m.wake_fd})
    if (*fd >= 0) {
      ::close(*fd);
      *fd = -1;
    }
}

}  // namespace gpudoc::serve
