// The HTTP server on a free loopback port, with the real cpp-httplib client.
#include "serve/server.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
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

  Server server_{{.host = "127.0.0.1", .port = 0, .threads = 2, .io_timeout = std::chrono::seconds(2)},
                 [] { return testing::small_snapshot(); }};
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
  // once the read timeout (2 s) has dropped them.
  std::vector<int> fds;
  for (int i = 0; i < 3; ++i) fds.push_back(idle_connection(port_));
  fds.push_back(idle_connection(port_, "GET /metrics HTTP/1.1\r\nHost: x\r\n"));  // never ends its headers
  const auto t0 = std::chrono::steady_clock::now();
  auto c = client();
  c.set_read_timeout(std::chrono::seconds(10));
  auto r = c.Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(7));
  for (int fd : fds) ::close(fd);
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
  Server s({.host = "203.0.113.1", .port = 1, .threads = 1, .io_timeout = std::chrono::seconds(1)},
           [] { return Snapshot{}; });
  auto p = s.start();
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().kind(), core::ErrorKind::kEnvironment);
  EXPECT_NE(p.error().message().find("203.0.113.1:1"), std::string::npos);
}

}  // namespace
}  // namespace gpudoc::serve
