// The HTTP server on a free loopback port, with the real cpp-httplib client.
#include "serve/server.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

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
