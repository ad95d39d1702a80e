// fleet::parse_url and fleet::Prometheus against a fake Prometheus on a loopback port: the request
// the client sends (a POST of the url-encoded query to the API's path, the prefix kept), the answers
// it reads (vector, scalar, matrix, warnings and infos), and each way a server can fail it: a refused
// query is kBadInput with the server's own words, anything that is not Prometheus's JSON or not an
// answer at all is kEnvironment naming the URL.
#include "fleet/prometheus.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <future>
#include <string>

#include "support/fake_http.hpp"

namespace gpudoc::fleet {
namespace {

using ::testing::HasSubstr;

testing::HttpReply json(std::string body, int status = 200) {
  return {.status = status, .content_type = "application/json", .body = std::move(body), .hang = false};
}

// A server that answers every request with `reply`.
testing::FakeHttp answering(testing::HttpReply reply) {
  return testing::FakeHttp([reply](const testing::HttpRequest&) { return reply; });
}

TEST(ParseUrl, HttpWithAndWithoutPortAndAPrefix) {
  auto plain = parse_url("http://prom.example");
  ASSERT_TRUE(plain) << plain.error().message();
  EXPECT_EQ(plain->scheme, "http");
  EXPECT_EQ(plain->host, "prom.example");
  EXPECT_EQ(plain->port, 80);
  EXPECT_EQ(plain->prefix, "");

  auto port = parse_url("http://10.0.0.7:9090");
  ASSERT_TRUE(port) << port.error().message();
  EXPECT_EQ(port->host, "10.0.0.7");
  EXPECT_EQ(port->port, 9090);
  EXPECT_EQ(port->prefix, "");

  auto prefixed = parse_url("http://prom:9090/prometheus/");
  ASSERT_TRUE(prefixed) << prefixed.error().message();
  EXPECT_EQ(prefixed->port, 9090);
  EXPECT_EQ(prefixed->prefix, "/prometheus");  // the trailing slash goes, the prefix stays

  auto deep = parse_url("http://prom/a/b");
  ASSERT_TRUE(deep) << deep.error().message();
  EXPECT_EQ(deep->prefix, "/a/b");

  auto v6 = parse_url("http://[::1]:9090");
  ASSERT_TRUE(v6) << v6.error().message();
  EXPECT_EQ(v6->host, "[::1]");
  EXPECT_EQ(v6->port, 9090);

  auto slash = parse_url("http://prom:9090/");
  ASSERT_TRUE(slash) << slash.error().message();
  EXPECT_EQ(slash->prefix, "");
}

TEST(ParseUrl, OtherSchemesAndGarbageAreUsageErrorsNamingTheUrl) {
  for (const std::string bad :
       {"https://prom:9090", "ftp://prom", "prom:9090", "//prom:9090", "http://", "http://prom:", "http://prom:abc",
        "http://prom:123456", "http://prom:0", "http://prom:65536", "http://prom:9090?x=1", "http://prom/p#f",
        "http://us er@prom", "http://prom/a b", "http://prom/x\r\nX-Evil: 1", "", "not a url"}) {
    auto u = parse_url(bad);
    ASSERT_FALSE(u) << "'" << bad << "' was taken as host '" << u->host << "' prefix '" << u->prefix << "'";
    EXPECT_EQ(u.error().kind(), core::ErrorKind::kUsage) << bad;
    EXPECT_THAT(u.error().message(), HasSubstr("--prometheus " + bad)) << bad;
  }
  auto open = Prometheus::open("https://prom:9090");
  ASSERT_FALSE(open);
  EXPECT_EQ(open.error().kind(), core::ErrorKind::kUsage);
}

TEST(PrometheusQuery, SendsAPostOfTheEncodedQueryToThePrefixedPath) {
  auto server = answering(json(R"({"status":"success","data":{"resultType":"vector","result":[]}})"));
  auto p = Prometheus::open(server.url("/prom/"));
  ASSERT_TRUE(p) << p.error().message();
  EXPECT_EQ(p->url(), server.url("/prom/"));
  // Every character a form body gives a meaning to, and some it must not break.
  const std::string promql = "sum by (id) (increase(x{a=\"b c\",d=~\"e|f&g\"}[5m])) + 1 / 2 % 3\n# é";
  auto a = p->query(promql, 1700000000.5);
  ASSERT_TRUE(a) << a.error().message();
  EXPECT_TRUE(a->samples.empty());

  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  const testing::HttpRequest& q = requests[0];
  EXPECT_EQ(q.method, "POST");
  EXPECT_EQ(q.path, "/prom/api/v1/query");
  EXPECT_EQ(q.headers.at("content-type"), "application/x-www-form-urlencoded");
  EXPECT_EQ(q.headers.at("content-length"), std::to_string(q.body.size()));
  EXPECT_EQ(q.form.at("query"), promql);
  EXPECT_EQ(std::stod(q.form.at("time")), 1700000000.5);
  EXPECT_EQ(q.form.size(), 2u) << q.body;
  // Nothing a form decoder reads differently is left raw ('+' would be a space, '&' a new field).
  EXPECT_EQ(q.body.find_first_of(" +\"{}[]|\n"), std::string::npos) << q.body;
}

TEST(PrometheusQuery, RangeQueriesPostToTheirPathWithStartEndAndStep) {
  auto server = answering(json(R"({"status":"success","data":{"resultType":"matrix","result":[]}})"));
  auto p = Prometheus::open(server.url("/a/b"));
  ASSERT_TRUE(p) << p.error().message();
  auto a = p->query_range("sum(increase(x[1h]))", 1700000000, 1700086400, 3600);
  ASSERT_TRUE(a) << a.error().message();
  EXPECT_TRUE(a->series.empty());
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].path, "/a/b/api/v1/query_range");
  EXPECT_EQ(requests[0].form.at("query"), "sum(increase(x[1h]))");
  EXPECT_EQ(std::stod(requests[0].form.at("start")), 1700000000);
  EXPECT_EQ(std::stod(requests[0].form.at("end")), 1700086400);
  EXPECT_EQ(std::stod(requests[0].form.at("step")), 3600);
}

TEST(PrometheusQuery, AVectorAnswerWithLabels) {
  auto server = answering(json(R"({"status":"success","data":{"resultType":"vector","result":[
      {"metric":{"id":"sawtooth","instance":"node-a:9400"},"value":[1700000000.5,"12.5"]},
      {"metric":{"namespace":"team \"x\"\nnext"},"value":[1700000000.5,"-3e2"]},
      {"metric":{},"value":[1700000000.5,"NaN"]},
      {"metric":{"le":"+Inf"},"value":[1700000000.5,"+Inf"]}]}})"));
  auto p = Prometheus::open(server.url());
  ASSERT_TRUE(p) << p.error().message();
  auto a = p->query("x", 1700000000.5);
  ASSERT_TRUE(a) << a.error().message();
  ASSERT_EQ(a->samples.size(), 4u);
  EXPECT_EQ(a->samples[0].labels,
            (std::map<std::string, std::string>{{"id", "sawtooth"}, {"instance", "node-a:9400"}}));
  EXPECT_EQ(a->samples[0].value, 12.5);
  EXPECT_EQ(a->samples[1].labels.at("namespace"), "team \"x\"\nnext");
  EXPECT_EQ(a->samples[1].value, -300);
  EXPECT_TRUE(a->samples[2].labels.empty());
  EXPECT_TRUE(std::isnan(a->samples[2].value));
  EXPECT_EQ(a->samples[3].value, HUGE_VAL);
  EXPECT_TRUE(a->warnings.empty());
}

TEST(PrometheusQuery, AScalarIsOneSampleWithoutLabels) {
  auto server = answering(json(R"({"status":"success","data":{"resultType":"scalar","result":[1700000000,"3.25"]}})"));
  auto p = Prometheus::open(server.url());
  ASSERT_TRUE(p) << p.error().message();
  auto a = p->query("scalar(x)", 1700000000);
  ASSERT_TRUE(a) << a.error().message();
  ASSERT_EQ(a->samples.size(), 1u);
  EXPECT_TRUE(a->samples[0].labels.empty());
  EXPECT_EQ(a->samples[0].value, 3.25);
}

TEST(PrometheusQuery, WarningsAndInfosAreKeptAsGiven) {
  auto server = answering(json(R"({"status":"success",
      "warnings":["remote store eu-1 did not answer","query hit the series limit"],
      "infos":["PromQL info: metric might not be a counter"],
      "data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]}]}})"));
  auto p = Prometheus::open(server.url());
  ASSERT_TRUE(p) << p.error().message();
  auto a = p->query("x", 1);
  ASSERT_TRUE(a) << a.error().message();
  EXPECT_EQ(a->warnings, (std::vector<std::string>{"remote store eu-1 did not answer", "query hit the series limit",
                                                   "PromQL info: metric might not be a counter"}));
  auto r = p->query_range("x", 1, 2, 1);  // a vector where a matrix is due: said, warnings or not
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind(), core::ErrorKind::kEnvironment);
  EXPECT_THAT(r.error().message(), HasSubstr("expected a matrix answer, got 'vector'"));
}

TEST(PrometheusQueryRange, AMatrixAnswersPointsInTimeOrderWithTheirLabels) {
  auto server = answering(json(R"({"status":"success","warnings":["partial"],"data":{"resultType":"matrix","result":[
      {"metric":{"instance":"node-a:9400"},"values":[[1700000000,"1"],[1700003600,"2.5"],[1700007200.5,"NaN"]]},
      {"metric":{"instance":"node-b:9400"},"values":[[1700003600,"7"]]},
      {"metric":{"instance":"node-c:9400"}}]}})"));
  auto p = Prometheus::open(server.url());
  ASSERT_TRUE(p) << p.error().message();
  auto a = p->query_range("x", 1700000000, 1700007200, 3600);
  ASSERT_TRUE(a) << a.error().message();
  ASSERT_EQ(a->series.size(), 3u);
  EXPECT_EQ(a->series[0].labels.at("instance"), "node-a:9400");
  ASSERT_EQ(a->series[0].points.size(), 3u);
  EXPECT_EQ(a->series[0].points[0], std::make_pair(1700000000.0, 1.0));
  EXPECT_EQ(a->series[0].points[1], std::make_pair(1700003600.0, 2.5));
  EXPECT_EQ(a->series[0].points[2].first, 1700007200.5);
  EXPECT_TRUE(std::isnan(a->series[0].points[2].second));
  EXPECT_EQ(a->series[1].labels.at("instance"), "node-b:9400");
  EXPECT_EQ(a->series[1].points, (std::vector<std::pair<double, double>>{{1700003600, 7}}));
  EXPECT_TRUE(a->series[2].points.empty());
  EXPECT_EQ(a->warnings, std::vector<std::string>{"partial"});

  auto v = p->query("x", 1700000000);  // a matrix where a vector is due
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().kind(), core::ErrorKind::kEnvironment);
  EXPECT_THAT(v.error().message(), HasSubstr("expected a vector answer, got 'matrix'"));
}

TEST(PrometheusQuery, ARefusedQueryIsBadInputWithTheServersErrorTypeAndWords) {
  for (int status : {400, 422, 503, 200}) {
    auto server = answering(
        json(R"({"status":"error","errorType":"bad_data","error":"1:5: parse error: unexpected <by>"})", status));
    auto p = Prometheus::open(server.url());
    ASSERT_TRUE(p) << p.error().message();
    auto instant = p->query("sum by", 1);
    auto range = p->query_range("sum by", 1, 2, 1);
    ASSERT_FALSE(instant) << status;
    ASSERT_FALSE(range) << status;
    for (const core::Error& e : {instant.error(), range.error()}) {
      EXPECT_EQ(e.kind(), core::ErrorKind::kBadInput) << status << " " << e.message();
      EXPECT_THAT(e.message(), HasSubstr("bad_data: 1:5: parse error: unexpected <by>")) << status;
      EXPECT_THAT(e.message(), HasSubstr(server.url())) << status;
    }
  }
}

TEST(PrometheusQuery, NotPrometheusIsAnEnvironmentErrorNamingTheUrl) {
  struct Case {
    testing::HttpReply reply;
    std::string said;
  };
  for (const Case& c :
       {Case{json("Internal Server Error", 500), "HTTP 500 from /api/v1/query"},
        Case{json(R"({"status":"success","data":{"resultType":"vector","result":[]}})", 404), "HTTP 404"},
        Case{json(R"({"status":"success","data":{"resultType":"vector","result":[]}})", 302), "HTTP 302"},
        Case{{.status = 200, .content_type = "text/html", .body = "<html>Grafana</html>", .hang = false}, "not JSON"},
        Case{json("", 200), "not JSON"}, Case{json("[1,2]", 200), "not JSON"},
        Case{json("<html>bad gateway</html>", 503), "not JSON"}}) {
    auto server = answering(c.reply);
    const std::string url = server.url("/prom");
    auto p = Prometheus::open(url);
    ASSERT_TRUE(p) << p.error().message();
    auto a = p->query("up", 1);
    ASSERT_FALSE(a) << c.reply.body;
    EXPECT_EQ(a.error().kind(), core::ErrorKind::kEnvironment) << c.reply.body;
    EXPECT_THAT(a.error().message(), HasSubstr("Prometheus at " + url)) << c.reply.body;
    EXPECT_THAT(a.error().message(), HasSubstr(c.said)) << c.reply.body;
    auto r = p->query_range("up", 1, 2, 1);
    ASSERT_FALSE(r) << c.reply.body;
    EXPECT_EQ(r.error().kind(), core::ErrorKind::kEnvironment) << c.reply.body;
    EXPECT_THAT(r.error().message(), HasSubstr("Prometheus at " + url)) << c.reply.body;
  }
}

TEST(PrometheusQuery, AServerThatIsNotListeningIsAnEnvironmentError) {
  // A port bound but not listening: a connection there is refused, and no other test can take it.
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const std::string url = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  auto p = Prometheus::open(url);
  ASSERT_TRUE(p) << p.error().message();
  auto q = p->query("up", 1);
  ASSERT_FALSE(q);
  EXPECT_EQ(q.error().kind(), core::ErrorKind::kEnvironment);
  EXPECT_THAT(q.error().message(), HasSubstr("Prometheus at " + url + ": cannot be reached"));
  auto r = p->query_range("up", 1, 2, 1);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind(), core::ErrorKind::kEnvironment);
  ::close(fd);

  auto unknown = Prometheus::open("http://host.invalid:9090");
  ASSERT_TRUE(unknown) << unknown.error().message();
  auto u = unknown->query("up", 1);
  ASSERT_FALSE(u);
  EXPECT_EQ(u.error().kind(), core::ErrorKind::kEnvironment);
  EXPECT_THAT(u.error().message(), HasSubstr("Prometheus at http://host.invalid:9090: cannot be reached"));
}

TEST(PrometheusQuery, AServerThatNeverAnswersIsAnEnvironmentErrorAfterTheTimeout) {
  // Whole seconds and a fraction of one: both must end (a timeval of 0 s would wait for ever).
  for (double timeout_s : {1.0, 0.3}) {
    auto server = testing::FakeHttp(
        [](const testing::HttpRequest&) { return testing::HttpReply{.status = 0, .body = "", .hang = true}; });
    auto p = Prometheus::open(server.url(), timeout_s);
    ASSERT_TRUE(p) << p.error().message();
    auto pending = std::async(std::launch::async, [&] { return p->query("up", 1); });
    // hang guard: the client gives up after timeout_s; 30 s is far beyond it.
    const bool ended = pending.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
    EXPECT_TRUE(ended) << "still waiting 30 s into a " << timeout_s << " s timeout";
    if (!ended) server.stop();  // closes the connection: the client's wait ends
    auto a = pending.get();
    ASSERT_FALSE(a);
    EXPECT_EQ(a.error().kind(), core::ErrorKind::kEnvironment);
    EXPECT_THAT(a.error().message(), HasSubstr("Prometheus at " + server.url()));
    EXPECT_THAT(a.error().message(), HasSubstr("timed out"));
    EXPECT_EQ(server.requests().size(), 1u);  // it did reach the server
  }
}

}  // namespace
}  // namespace gpudoc::fleet
