// The HTTP server on a free loopback port: with an independent client (cpp-httplib's) for what
// clients do, and with raw sockets for what hostile ones do (docs/serve.md, "Serving under load").
#include "serve/server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sample_snapshot.hpp"
#include "serve/http.hpp"

namespace gpudoc::serve {
namespace {

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto p = server_.start();
    ASSERT_TRUE(p) << p.error().message();
    port_ = *p;
  }
  httplib::Client client() { return httplib::Client("127.0.0.1", port_); }

  void TearDown() override {
    {
      std::lock_guard lock(mu_);
      stopped_ = true;
    }
    cv_.notify_all();
    server_.stop();
  }
  // One more state for the event streams.
  void advance() {
    {
      std::lock_guard lock(mu_);
      ++sequence_;
    }
    cv_.notify_all();
  }
  Handlers handlers() {
    Handlers h;
    h.metrics = [] { return testing::small_snapshot(); };
    h.state = [this] {
      std::lock_guard lock(mu_);
      return "{\"seq\":" + std::to_string(sequence_) + ",\"text\":\"a\\nb\"}";
    };
    h.history = [this](double seconds) {
      if (big_history_) return std::string(4 << 20, 'h');
      return "{\"seconds\":" + std::to_string(static_cast<int>(seconds)) + "}";
    };
    h.wait_for_update = [this](std::uint64_t seen, std::chrono::milliseconds timeout) -> std::uint64_t {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, timeout, [&] { return sequence_ != seen || stopped_; });
      return stopped_ ? 0 : sequence_;
    };
    h.liveness = [] { return Alive{.ok = true, .reason = ""}; };
    h.asset = [](std::string_view path) -> std::optional<Asset> {
      if (path == "/") return Asset{"<!doctype html><title>t</title>", "text/html; charset=utf-8"};
      if (path == "/assets/app.js") return Asset{"console.log(1)", "text/javascript; charset=utf-8"};
      return std::nullopt;
    };
    return h;
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::uint64_t sequence_ = 1;
  bool stopped_ = false;
  std::atomic<bool> big_history_{false};  // /api/v1/history answers 4 MiB
  Server server_{{.host = "127.0.0.1",
                  .port = 0,
                  .threads = 4,
                  .max_streams = 2,
                  .max_heavy = 2,
                  .request_timeout = std::chrono::seconds(2),
                  .io_timeout = std::chrono::seconds(2)},
                 handlers()};
  int port_ = 0;
};

TEST_F(ServerTest, MetricsInThePrometheusFormat) {
  auto c = client();
  auto r = c.Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(r->get_header_value("X-Content-Type-Options"), "nosniff");
  EXPECT_NE(r->body.find("\ngpudoc_power_watts{gpu=\"0\""), std::string::npos);
  EXPECT_NE(r->body.find("\ngpudoc_scrapes_total 1\n"), std::string::npos);
  auto again = c.Get("/metrics");
  ASSERT_TRUE(again);
  EXPECT_NE(again->body.find("\ngpudoc_scrapes_total 2\n"), std::string::npos);
  EXPECT_NE(again->body.find("\ngpudoc_scrape_render_seconds "), std::string::npos);
  EXPECT_EQ(server_.scrapes(), 2u);
}

TEST_F(ServerTest, OpenMetricsWhenAsked) {
  auto c = client();
  auto r = c.Get("/metrics", {{"Accept", "application/openmetrics-text; version=1.0.0,text/plain;q=0.5"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/openmetrics-text; version=1.0.0; charset=utf-8");
  EXPECT_TRUE(r->body.ends_with("# EOF\n"));
}

TEST_F(ServerTest, BadPathsAndMethods) {
  auto c = client();
  auto r = c.Get("/nope");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  auto p = c.Post("/metrics", "x", "text/plain");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->status, 405);
  EXPECT_EQ(p->get_header_value("Allow"), "GET, HEAD");
  auto big = c.Post("/metrics", std::string(1 << 20, 'x'), "text/plain");
  // 405 at once, the body never read: the client may see the answer or, having sent on, a reset
  if (big) {
    EXPECT_EQ(big->status, 405);
  }
}

// A TCP connection to the server that sends `bytes` and then nothing, and never reads; from the
// loopback address `from` (another client than 127.0.0.1) when given.
int idle_connection(int port, const std::string& bytes = {}, const char* from = nullptr) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (from != nullptr) {
    sockaddr_in self{};
    self.sin_family = AF_INET;
    ::inet_pton(AF_INET, from, &self.sin_addr);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&self), sizeof self) != 0) {
      ::close(fd);
      return -1;
    }
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  if (!bytes.empty()) {
    EXPECT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  }
  return fd;
}

TEST_F(ServerTest, SilentAndHalfSentClientsAreDroppedAfterTheTimeout) {
  // More idle clients than the server has threads (2): a scrape still gets through, at the latest
  // once the read timeout (2 s) has dropped them. Had they held the server, the scrape would wait
  // for the client's own read timeout and fail.
  std::vector<int> fds;
  for (int i = 0; i < 3; ++i) fds.push_back(idle_connection(port_));
  fds.push_back(idle_connection(port_, "GET /metrics HTTP/1.1\r\nHost: x\r\n"));  // never ends its headers
  auto c = client();
  c.set_read_timeout(std::chrono::seconds(30));  // hang guard: normally answered in ~1-2 s; 15x margin
  auto r = c.Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  for (int fd : fds) ::close(fd);
}

// The server's ends of the TCP connections to `port` in this process (the server runs here): the
// sockets whose own port is `port` and that have a peer (the listening socket has none).
std::vector<int> server_connections(int port) {
  std::vector<int> fds;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    const int fd = std::stoi(e.path().filename().string());
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_in self{}, peer{};
    socklen_t n = sizeof self, m = sizeof peer;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&self), &n) != 0 || self.sin_family != AF_INET) continue;
    if (ntohs(self.sin_port) != port) continue;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &m) != 0) continue;
    fds.push_back(fd);
  }
  return fds;
}

TEST_F(ServerTest, KeepAliveAnswersAreNotHeldBack) {
  // 100 scrapes in a row on one keep-alive connection. Without TCP_NODELAY the last segment of each
  // answer waits for the client's delayed ACK (~40 ms on Linux): 4 s or more; with it, well under 1 s.
  // What is checked is the cause, on the server's end of the connection: TCP_NODELAY is set, not
  // the seconds the scrapes took.
  auto c = client();
  c.set_keep_alive(true);
  for (int i = 0; i < 100; ++i) {
    auto r = c.Get("/metrics");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200);
  }
  const std::vector<int> ends = server_connections(port_);
  ASSERT_FALSE(ends.empty()) << "the keep-alive connection was not kept";
  for (int fd : ends) {
    int nodelay = 0;
    socklen_t len = sizeof nodelay;
    ASSERT_EQ(::getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, &len), 0);
    EXPECT_NE(nodelay, 0) << "the server's answers wait for the client's delayed ACK";
  }
}

TEST_F(ServerTest, AnIdleKeepAliveConnectionIsClosedAfterTheRequestTimeout) {
  // A connection waiting for its next request is closed once the request timeout (1 s here) has
  // passed, not after the I/O timeout (30 s here): an idle keep-alive and a silent client alike.
  Server server({.host = "127.0.0.1",
                 .port = 0,
                 .threads = 2,
                 .max_streams = 1,
                 .request_timeout = std::chrono::seconds(1),
                 .io_timeout = std::chrono::seconds(30)},
                handlers());
  auto port = server.start();
  ASSERT_TRUE(port) << port.error().message();
  const int fd = idle_connection(*port, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_GE(fd, 0);
  const auto t0 = std::chrono::steady_clock::now();
  std::string got;
  char buf[4096];
  timeval tv{.tv_sec = 40, .tv_usec = 0};
  ASSERT_EQ(::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
  ssize_t n = 0;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) got.append(buf, static_cast<std::size_t>(n));
  const auto closed_after = std::chrono::steady_clock::now() - t0;
  ::close(fd);
  server.stop();
  EXPECT_EQ(n, 0) << "the server did not close the connection within 40 s";
  EXPECT_NE(got.find("200 OK"), std::string::npos);
  EXPECT_GE(closed_after, std::chrono::milliseconds(900));
  // hang guard: normally ~1 s; 10x+ margin, and half the 30 s I/O timeout
  EXPECT_LT(closed_after, std::chrono::seconds(15));
}

TEST_F(ServerTest, OversizedHeadersAreRefused) {
  auto c = client();
  auto r = c.Get("/metrics", {{"X-Big", std::string(64 * 1024, 'a')}});
  // The server reads 8 KiB of it and answers 431; a client still sending may see a reset instead.
  if (r) {
    EXPECT_EQ(r->status, 431);
  }
  auto ok = client().Get("/metrics");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

// All a raw connection receives until the server closes it or `guard` passes (a hang guard).
std::string read_until_closed(int fd, std::chrono::seconds guard = std::chrono::seconds(20)) {
  timeval tv{.tv_sec = static_cast<long>(guard.count()), .tv_usec = 0};
  (void)::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string got;
  char buf[16384];
  ssize_t n = 0;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) got.append(buf, static_cast<std::size_t>(n));
  return got;
}

// The resident memory of this process (the server runs in it), in bytes.
std::size_t resident_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoul(line.substr(6)) * 1024;
  return 0;
}

// The kernel's count of connections dropped because a listen queue was full (this network namespace).
long listen_overflows() {
  std::ifstream f("/proc/net/netstat");
  std::string names, values;
  while (std::getline(f, names) && std::getline(f, values)) {
    if (names.rfind("TcpExt:", 0) != 0) continue;
    std::istringstream n(names), v(values);
    std::string name, value;
    while (n >> name && v >> value)
      if (name == "ListenOverflows") return std::stol(value);
  }
  return -1;
}

TEST_F(ServerTest, SlowSendersDoNotHoldTheScrape) {
  // 20 clients (five times the handler threads) each send their head a byte every 100 ms: each
  // stays within the I/O timeout, never within the whole-request one. A scrape meanwhile is
  // answered at once; with a thread per connection it waited for them all.
  std::vector<int> fds;
  for (int i = 0; i < 20; ++i) fds.push_back(idle_connection(port_, "G", "127.0.0.2"));
  std::atomic<bool> done{false};
  std::thread trickle([&] {
    const std::string rest = "ET /metrics HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    for (std::size_t k = 0; k < rest.size() && !done; ++k) {
      for (int fd : fds) (void)::send(fd, &rest[k], 1, MSG_NOSIGNAL);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto c = client();
  c.set_read_timeout(std::chrono::seconds(5));  // hang guard: answered in milliseconds
  auto r = c.Get("/metrics");
  done = true;
  trickle.join();
  ASSERT_TRUE(r) << "the scrape was not answered while 20 clients sent slowly";
  EXPECT_EQ(r->status, 200);
  // and the slow senders themselves are cut off at the request timeout (2 s here)
  for (int fd : fds) {
    const std::string got = read_until_closed(fd);
    EXPECT_EQ(got.find("200 OK"), std::string::npos);
    ::close(fd);
  }
}

TEST_F(ServerTest, ClientsThatNeverReadALargeAnswerDoNotHoldTheScrape) {
  // 20 clients ask for a 4 MiB history and never read it: 2 (max_heavy) are being sent, the others
  // are told 503 at once; a scrape is answered meanwhile, and memory holds 2 answers, not 20.
  big_history_ = true;
  const std::size_t before = resident_bytes();
  std::vector<int> fds;
  for (int i = 0; i < 20; ++i)
    fds.push_back(idle_connection(port_, "GET /api/v1/history HTTP/1.1\r\n\r\n", "127.0.0.3"));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto c = client();
  c.set_read_timeout(std::chrono::seconds(5));  // hang guard: answered in milliseconds
  auto r = c.Get("/metrics");
  ASSERT_TRUE(r) << "the scrape was not answered while 20 clients did not read";
  EXPECT_EQ(r->status, 200);
  const std::size_t during = resident_bytes();
  int refused = 0;
  for (int fd : fds) {
    char buf[64] = {};
    if (::recv(fd, buf, sizeof buf - 1, MSG_DONTWAIT) > 0 && std::string(buf).find(" 503 ") != std::string::npos)
      ++refused;
  }
  EXPECT_GE(refused, 18 - 4);  // some may still be in the handler's queue when looked at
  EXPECT_LT(during, before + (32u << 20)) << "unread answers held: " << (during - before) / (1 << 20) << " MiB";
  for (int fd : fds) ::close(fd);
}

TEST_F(ServerTest, AHugeRequestLineIsRefusedWithoutBeingBuffered) {
  // 64 MiB of request line: the server keeps 8 KiB of it and answers 414; the memory of this
  // process (the server's) does not grow by the line.
  const std::size_t before = resident_bytes();
  const int fd = idle_connection(port_, "GET /");
  ASSERT_GE(fd, 0);
  const std::string chunk(64 * 1024, 'a');
  std::size_t sent = 0;
  while (sent < (64u << 20)) {
    const ssize_t n = ::send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL);
    if (n <= 0) break;  // the server has closed: what it read it refused
    sent += static_cast<std::size_t>(n);
  }
  const std::size_t after = resident_bytes();
  ::close(fd);
  EXPECT_LT(sent, 64u << 20) << "the server read the whole 64 MiB line";
  EXPECT_LT(after, before + (16u << 20));
  // a line just over the limit, sent whole, gets its 414
  const int small = idle_connection(port_, "GET /" + std::string(http::kMaxHead, 'a') + " HTTP/1.1\r\n\r\n");
  ASSERT_GE(small, 0);
  EXPECT_NE(read_until_closed(small).find("HTTP/1.1 414 "), std::string::npos);
  ::close(small);
  auto ok = client().Get("/metrics");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

TEST_F(ServerTest, EveryOtherMethodIs405AtOnce) {
  for (const char* head :
       {"POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\n", "PUT /metrics HTTP/1.1\r\n\r\n",
        "TRACE / HTTP/1.1\r\n\r\n", "CONNECT example.com:443 HTTP/1.1\r\n\r\n", "DELETE /healthz HTTP/1.1\r\n\r\n",
        // a PATCH that announces no length: answered, not waited on for a body
        "PATCH /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"}) {
    const int fd = idle_connection(port_, head);
    ASSERT_GE(fd, 0);
    const auto t0 = std::chrono::steady_clock::now();
    const std::string got = read_until_closed(fd);
    ::close(fd);
    EXPECT_EQ(got.rfind("HTTP/1.1 405 ", 0), 0u) << head << got;
    EXPECT_NE(got.find("Allow: GET, HEAD\r\n"), std::string::npos) << head;
    // closed right after the answer, not at the request timeout (2 s); hang guard at 10x
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1)) << head;
  }
}

TEST_F(ServerTest, PipelinedAndHalfClosedRequestsAreAnswered) {
  const int fd = idle_connection(port_,
                                 "GET /healthz HTTP/1.1\r\n\r\nHEAD /metrics HTTP/1.1\r\n\r\n"
                                 "GET /api/v1/history?seconds=5 HTTP/1.1\r\nConnection: close\r\n\r\n");
  ASSERT_GE(fd, 0);
  (void)::shutdown(fd, SHUT_WR);  // nothing more from this client: it still gets its answers
  const std::string got = read_until_closed(fd);
  ::close(fd);
  const auto first = got.find("HTTP/1.1 200 OK"), second = got.find("HTTP/1.1 200 OK", first + 1),
             third = got.find("HTTP/1.1 200 OK", second + 1);
  ASSERT_NE(third, std::string::npos) << got;
  EXPECT_NE(got.find("ok\n", first), std::string::npos);
  EXPECT_TRUE(got.ends_with("{\"seconds\":5}")) << got;
}

TEST_F(ServerTest, AFullServerTakesFromTheClientHoldingTheMost) {
  // 16 connections at most: one client (127.0.0.2) takes them all and sends nothing; another
  // client's scrape is served, in place of the first client's oldest connection.
  Server small({.host = "127.0.0.1",
                .port = 0,
                .threads = 2,
                .max_connections = 16,
                .request_timeout = std::chrono::seconds(30),
                .io_timeout = std::chrono::seconds(30)},
               handlers());
  auto port = small.start();
  ASSERT_TRUE(port) << port.error().message();
  std::vector<int> fds;
  for (int i = 0; i < 16; ++i) fds.push_back(idle_connection(*port, "", "127.0.0.2"));
  for (int i = 0; i < 100 && small.connections() < 16; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(small.connections(), 16);
  httplib::Client c("127.0.0.1", *port);
  c.set_read_timeout(std::chrono::seconds(5));  // hang guard
  auto r = c.Get("/metrics");
  ASSERT_TRUE(r) << "a full server turned the other client away";
  EXPECT_EQ(r->status, 200);
  // the first client's oldest connection is the one that was closed
  char b = 0;
  timeval tv{.tv_sec = 5, .tv_usec = 0};
  ASSERT_EQ(::setsockopt(fds[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
  EXPECT_EQ(::recv(fds[0], &b, 1, 0), 0);
  for (int fd : fds) ::close(fd);
  small.stop();
}

TEST_F(ServerTest, ManyConcurrentConnectionsAreNotDropped) {
  // 1000 clients connect at once and then ask: the listen queue holds them all (with a queue of 5
  // the kernel dropped their SYNs, and they waited seconds to retry), and each is answered.
  const long overflows = listen_overflows();
  std::vector<int> fds;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port_));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < 1000; ++i) {  // every SYN sent before any handshake is waited for
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    ASSERT_GE(fd, 0) << std::strerror(errno);
    const int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ASSERT_TRUE(rc == 0 || errno == EINPROGRESS) << std::strerror(errno);
    fds.push_back(fd);
  }
  for (int fd : fds) {
    const int flags = ::fcntl(fd, F_GETFL);
    ASSERT_EQ(::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK), 0);
  }
  for (int fd : fds) {
    const std::string get = "GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n";
    ASSERT_EQ(::send(fd, get.data(), get.size(), MSG_NOSIGNAL), static_cast<ssize_t>(get.size()));
  }
  int answered = 0;
  for (int fd : fds) {
    if (read_until_closed(fd).rfind("HTTP/1.1 200 OK", 0) == 0) ++answered;
    ::close(fd);
  }
  EXPECT_EQ(answered, 1000);
  if (overflows >= 0) {
    EXPECT_EQ(listen_overflows(), overflows) << "connections were dropped from a full listen queue";
  }
}

TEST_F(ServerTest, AClientThatNeverReadsItsAnswer) {
  // Ask for /metrics many times on connections that never read: the answers fill the socket
  // buffers, the write timeout (2 s) frees the threads, and a reading client is served.
  std::vector<int> fds;
  std::string requests;
  for (int i = 0; i < 50; ++i) requests += "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  for (int i = 0; i < 3; ++i) fds.push_back(idle_connection(port_, requests));
  auto c = client();
  c.set_read_timeout(std::chrono::seconds(10));
  auto r = c.Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  for (int fd : fds) ::close(fd);
}

TEST(Server, LoopbackAndBindErrors) {
  EXPECT_TRUE(is_loopback("127.0.0.1"));
  EXPECT_TRUE(is_loopback("::1"));
  EXPECT_TRUE(is_loopback("localhost"));
  EXPECT_FALSE(is_loopback("0.0.0.0"));
  EXPECT_FALSE(is_loopback("10.0.0.7"));
  Server s({.host = "203.0.113.1", .port = 1, .threads = 1, .io_timeout = std::chrono::seconds(1)}, Handlers());
  auto p = s.start();
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().kind(), core::ErrorKind::kEnvironment);
  EXPECT_NE(p.error().message().find("203.0.113.1:1"), std::string::npos);
}

// A second server on a port one already serves must fail, not share it: with SO_REUSEPORT (the
// HTTP library's default) the kernel split the scrapes between the two.
TEST_F(ServerTest, ASecondServerOnTheSamePortIsRefused) {
  Server second({.host = "127.0.0.1", .port = port_, .threads = 1, .io_timeout = std::chrono::seconds(1)}, Handlers());
  auto p = second.start();
  ASSERT_FALSE(p) << "a second server listens on port " << port_;
  EXPECT_EQ(p.error().kind(), core::ErrorKind::kEnvironment);
  EXPECT_NE(p.error().message().find("127.0.0.1:" + std::to_string(port_)), std::string::npos);
}

TEST_F(ServerTest, SecurityHeadersOnEveryAnswer) {
  auto c = client();
  for (const char* path : {"/metrics", "/api/v1/snapshot", "/", "/nope"}) {
    auto r = c.Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->get_header_value("Content-Security-Policy"), kContentSecurityPolicy) << path;
    EXPECT_EQ(r->get_header_value("X-Content-Type-Options"), "nosniff") << path;
    EXPECT_EQ(r->get_header_value("Referrer-Policy"), "no-referrer") << path;
    EXPECT_EQ(r->get_header_value("X-Frame-Options"), "DENY") << path;
  }
}

TEST_F(ServerTest, JsonApiAndHistoryParameter) {
  auto c = client();
  auto s = c.Get("/api/v1/snapshot");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->status, 200);
  EXPECT_EQ(s->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(s->body, "{\"seq\":1,\"text\":\"a\\nb\"}");
  auto h = c.Get("/api/v1/history?seconds=120");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->body, "{\"seconds\":120}");
  auto d = c.Get("/api/v1/history");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->body, "{\"seconds\":600}");
  for (const char* bad : {"0", "-5", "1e9", "abc", "12x", "nan", ""}) {
    auto r = c.Get(std::string("/api/v1/history?seconds=") + bad);
    ASSERT_TRUE(r) << bad;
    EXPECT_EQ(r->status, 400) << bad;
    EXPECT_NE(r->body.find("seconds"), std::string::npos) << bad;
  }
  auto post = c.Post("/api/v1/snapshot", "x", "text/plain");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  auto hz = c.Get("/healthz");
  ASSERT_TRUE(hz);
  EXPECT_EQ(hz->body, "ok\n");
}

// /healthz says what liveness says: 200 "ok" while alive, else 503 with the reason.
TEST(ServerHealthz, LivenessAnswersWithTheReason) {
  std::atomic<bool> ok{true};
  Handlers h;
  h.liveness = [&ok]() -> Alive {
    if (ok) return {.ok = true, .reason = ""};
    return {.ok = false, .reason = "the sampler's last tick was 12.0 s ago"};
  };
  ServerOptions options;
  options.port = 0;
  Server server(options, std::move(h));
  auto port = server.start();
  ASSERT_TRUE(port) << port.error().message();
  httplib::Client c("127.0.0.1", *port);
  auto up = c.Get("/healthz");
  ASSERT_TRUE(up);
  EXPECT_EQ(up->status, 200);
  EXPECT_EQ(up->body, "ok\n");
  ok = false;
  auto down = c.Get("/healthz");
  ASSERT_TRUE(down);
  EXPECT_EQ(down->status, 503);
  EXPECT_EQ(down->body, "not alive: the sampler's last tick was 12.0 s ago\n");
  EXPECT_EQ(down->get_header_value("Content-Type"), "text/plain; charset=utf-8");
  server.stop();
}

TEST_F(ServerTest, AssetsAndUnknownAssets) {
  auto c = client();
  auto page = c.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  auto js = c.Get("/assets/app.js");
  ASSERT_TRUE(js);
  EXPECT_EQ(js->body, "console.log(1)");
  auto none = c.Get("/assets/../etc/passwd");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 404);
}

// Reads an event stream until `events` snapshot events arrived; returns what was read.
std::string read_events(int port, int events) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(std::chrono::seconds(10));
  std::string got;
  int seen = 0;
  auto r = c.Get("/api/v1/events", [&](const char* data, std::size_t n) {
    got.append(data, n);
    seen = 0;
    for (std::size_t p = 0; (p = got.find("event: snapshot\n", p)) != std::string::npos; ++p) ++seen;
    return seen < events;  // false: stop reading
  });
  return got;
}

TEST_F(ServerTest, EventStreamSendsEachNewState) {
  std::thread ticker([this] {
    for (int i = 0; i < 3; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      advance();
    }
  });
  const std::string got = read_events(port_, 3);
  ticker.join();
  EXPECT_EQ(got.rfind("retry: 2000\n\n", 0), 0u) << got;
  EXPECT_NE(got.find("event: snapshot\ndata: {\"seq\":1,"), std::string::npos) << got;
  EXPECT_NE(got.find("event: snapshot\ndata: {\"seq\":3,"), std::string::npos) << got;
  // Each event's data is one line (the JSON's own newlines are escaped).
  EXPECT_NE(got.find("\"text\":\"a\\nb\"}\n\n"), std::string::npos) << got;
}

TEST_F(ServerTest, EventStreamsAreLimitedAndScrapesStillServed) {
  // Two streams (max_streams) held open by readers that read on; the third is refused with 503,
  // and /metrics still answers from the remaining threads.
  std::atomic<bool> done{false};
  std::vector<std::thread> readers;
  for (int i = 0; i < 2; ++i)
    readers.emplace_back([this, &done] {
      httplib::Client c("127.0.0.1", port_);
      c.set_read_timeout(std::chrono::seconds(10));
      (void)c.Get("/api/v1/events", [&](const char*, std::size_t) { return !done.load(); });
    });
  for (int i = 0; i < 100 && server_.streams() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(server_.streams(), 2);
  auto c = client();
  auto third = c.Get("/api/v1/events");
  ASSERT_TRUE(third);
  EXPECT_EQ(third->status, 503);
  EXPECT_EQ(third->get_header_value("Retry-After"), "10");
  auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
  done = true;
  advance();  // the readers stop at the next event and close their connections
  for (auto& t : readers) t.join();
  // A stream notices a closed client when a write fails: within a few updates (one a second in serve).
  for (int i = 0; i < 20 && server_.streams() > 0; ++i) {
    advance();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (int i = 0; i < 100 && server_.streams() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(server_.streams(), 0);
}

}  // namespace
}  // namespace gpudoc::serve
