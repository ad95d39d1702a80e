// The HTTP/1.1 that gpudoc serve accepts, without sockets: heads, limits, refusals, answers.
#include "serve/http.hpp"

#include <gtest/gtest.h>

#include <string>

namespace gpudoc::serve::http {
namespace {

TEST(HttpHead, EndsAtTheBlankLine) {
  EXPECT_FALSE(head_end("GET / HTTP/1.1\r\nHost: x\r\n"));
  EXPECT_EQ(head_end("GET / HTTP/1.1\r\nHost: x\r\n\r\nGET"), 27u);
  EXPECT_EQ(head_end("GET / HTTP/1.1\n\n"), 16u);
  EXPECT_FALSE(head_end(""));
}

TEST(HttpHead, AGetWithItsHeadersAndQuery) {
  const Parsed p =
      parse_head("GET /api/v1/history?seconds=120&x=a%20b+c HTTP/1.1\r\nHost: h\r\nACCEPT:  text/plain \r\n\r\n");
  ASSERT_EQ(p.status, 0) << p.reason;
  EXPECT_EQ(p.request.method, "GET");
  EXPECT_EQ(p.request.path, "/api/v1/history");
  EXPECT_EQ(p.request.param("seconds"), "120");
  EXPECT_EQ(p.request.param("x"), "a b c");
  EXPECT_FALSE(p.request.param("y"));
  EXPECT_EQ(p.request.header("accept"), "text/plain");
  EXPECT_TRUE(p.request.keep_alive);
}

TEST(HttpHead, KeepAliveByVersionAndConnection) {
  EXPECT_FALSE(parse_head("GET / HTTP/1.1\r\nConnection: Close\r\n\r\n").request.keep_alive);
  EXPECT_FALSE(parse_head("GET / HTTP/1.0\r\n\r\n").request.keep_alive);
  EXPECT_TRUE(parse_head("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").request.keep_alive);
}

TEST(HttpHead, EveryMethodButGetAndHeadIs405) {
  for (const char* m : {"POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT", "BREW"}) {
    const Parsed p = parse_head(std::string(m) + " /metrics HTTP/1.1\r\n\r\n");
    EXPECT_EQ(p.status, 405) << m;
  }
  // a body announced with another method: still 405, the body is never waited for
  EXPECT_EQ(parse_head("POST /metrics HTTP/1.1\r\nContent-Length: 1000000\r\n\r\n").status, 405);
  EXPECT_EQ(parse_head("HEAD /metrics HTTP/1.1\r\n\r\n").status, 0);
}

TEST(HttpHead, NoBodyIsAccepted) {
  EXPECT_EQ(parse_head("GET / HTTP/1.1\r\nContent-Length: 5\r\n\r\n").status, 400);
  EXPECT_EQ(parse_head("GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n").status, 400);
  EXPECT_EQ(parse_head("GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n").status, 400);
  EXPECT_EQ(parse_head("GET / HTTP/1.1\r\nContent-Length: 0\r\n\r\n").status, 0);
}

TEST(HttpHead, MalformedHeads) {
  EXPECT_EQ(parse_head("GET\r\n\r\n").status, 400);
  EXPECT_EQ(parse_head("GET / HTTP/1.1 extra\r\n\r\n").status, 400);
  EXPECT_EQ(parse_head("GET / FTP/1.0\r\n\r\n").status, 400);
  EXPECT_EQ(parse_head("GET / HTTP/2.0\r\n\r\n").status, 505);
  EXPECT_EQ(parse_head("GET http://x/ HTTP/1.1\r\n\r\n").status, 400);
  EXPECT_EQ(parse_head("GET / HTTP/1.1\r\nno colon\r\n\r\n").status, 400);
  EXPECT_EQ(parse_head("GET / HTTP/1.1\r\nA: b\r\n  folded\r\n\r\n").status, 400);
  EXPECT_EQ(parse_head("G(T / HTTP/1.1\r\n\r\n").status, 400);
  std::string many = "GET / HTTP/1.1\r\n";
  for (std::size_t i = 0; i <= kMaxHeaders; ++i) many += "A: b\r\n";
  EXPECT_EQ(parse_head(many + "\r\n").status, 431);
}

TEST(HttpHead, TooLongHeads) {
  EXPECT_EQ(too_long(std::string(kMaxHead, 'a')).status, 414);
  EXPECT_EQ(too_long("GET / HTTP/1.1\r\n" + std::string(kMaxHead, 'a')).status, 431);
}

TEST(HttpHead, BadPercentEncodingIsNoValue) {
  const Parsed p = parse_head("GET /?seconds=%zz&a=%4 HTTP/1.1\r\n\r\n");
  ASSERT_EQ(p.status, 0);
  EXPECT_FALSE(p.request.param("seconds"));
  EXPECT_FALSE(p.request.param("a"));
}

TEST(HttpAnswer, HeadersBodyAndConnection) {
  const std::vector<std::pair<std::string, std::string>> common{{"X-A", "1"}};
  Answer a;
  a.content_type = "text/plain";
  a.body = "hello";
  const std::string get = format(a, false, true, common);
  EXPECT_EQ(get,
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nX-A: 1\r\n"
            "Connection: keep-alive\r\n\r\nhello");
  const std::string head = format(a, true, false, common);
  EXPECT_TRUE(head.ends_with("Content-Length: 5\r\nX-A: 1\r\nConnection: close\r\n\r\n")) << head;
  a.stream = true;
  const std::string stream = format(a, false, true, {});
  EXPECT_EQ(stream.find("Content-Length"), std::string::npos);
  EXPECT_NE(stream.find("Connection: close\r\n"), std::string::npos);
  Answer refused;
  refused.status = 405;
  refused.headers = {{"Allow", "GET, HEAD"}};
  refused.close = true;
  EXPECT_NE(format(refused, false, true, {}).find("405 Method Not Allowed\r\n"), std::string::npos);
}

}  // namespace
}  // namespace gpudoc::serve::http
