// The HTTP server on a free loopback port, with the real cpp-httplib client.
#include "serve/server.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sample_snapshot.hpp"

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
    h.history = [](double seconds) { return "{\"seconds\":" + std::to_string(static_cast<int>(seconds)) + "}"; };
    h.wait_for_update = [this](std::uint64_t seen, std::chrono::milliseconds timeout) -> std::uint64_t {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, timeout, [&] { return sequence_ != seen || stopped_; });
      return stopped_ ? 0 : sequence_;
    };
    h.healthy = [] { return true; };
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
  Server server_{
      {.host = "127.0.0.1", .port = 0, .threads = 4, .max_streams = 2, .io_timeout = std::chrono::seconds(2)},
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
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
}

// A TCP connection to the server that sends `bytes` and then nothing, and never reads.
int idle_connection(int port, const std::string& bytes = {}) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
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

TEST_F(ServerTest, AnIdleKeepAliveConnectionIsClosedAfterASecond) {
  // httplib polls an idle keep-alive connection every ~10 ms: the server ends it after 1 s (not
  // after the I/O timeout), so a scraper that comes every 15 s costs nothing in between. A server
  // whose I/O timeout is 30 s here keeps the two far apart, whatever the machine's load.
  Server server(
      {.host = "127.0.0.1", .port = 0, .threads = 2, .max_streams = 1, .io_timeout = std::chrono::seconds(30)},
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
  // cpp-httplib stops reading a header line longer than its limit (8 KiB) and answers 400, or
  // closes the connection: either way no scrape, no crash, and the next client is served.
  if (r) {
    EXPECT_EQ(r->status, 400);
  }
  auto ok = client().Get("/metrics");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
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
