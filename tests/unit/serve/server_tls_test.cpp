// The server with a web config: TLS scraped with cpp-httplib's OpenSSL client (certificates made
// by the test), client certificates under each policy, basic authentication on every route, the
// file re-read when it changes, and silent or slow TLS clients that hold nothing (hang guards
// only: no time is asserted but as a bound far above the normal one).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sample_snapshot.hpp"
#include "serve/server.hpp"
#include "serve/web_state.hpp"
#include "support/temp_dir.hpp"
#include "test_certificates.hpp"

namespace gpudoc::serve {
namespace {

Handlers small_handlers() {
  Handlers h;
  h.metrics = [] { return testing::small_snapshot(); };
  h.state = [] { return std::string("{\"seq\":1}"); };
  h.liveness = [] { return Alive{.ok = true, .reason = ""}; };
  h.asset = [](std::string_view path) -> std::optional<Asset> {
    if (path == "/") return Asset{"<!doctype html><title>t</title>", "text/html; charset=utf-8"};
    return std::nullopt;
  };
  return h;
}

class TlsServer : public ::testing::Test {
 protected:
  void SetUp() override { pki_ = gpudoc::testing::make_pki(dir_); }
  void TearDown() override {
    if (server_) server_->stop();
  }

  void write_config(const std::string& yaml) {
    std::ofstream(web_) << yaml;
    std::filesystem::permissions(web_, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  }
  std::string tls_config(const std::string& extra = "") const {
    return "tls_server_config:\n  cert_file: " + pki_.server_cert + "\n  key_file: " + pki_.server_key + "\n" + extra;
  }
  void start(const std::string& yaml, int threads = 3, int max_verifying = 16) {
    write_config(yaml);
    server_ = std::make_unique<Server>(ServerOptions{.host = "127.0.0.1",
                                                     .port = 0,
                                                     .threads = threads,
                                                     .request_timeout = std::chrono::seconds(2),
                                                     .io_timeout = std::chrono::seconds(2),
                                                     .web_config_file = web_,
                                                     .max_verifying = max_verifying,
                                                     .log =
                                                         [this](core::LogRecord r) {
                                                           std::lock_guard lock(said_mu_);
                                                           said_.push_back(r.msg);
                                                         }},
                                       small_handlers());
    auto p = server_->start();
    ASSERT_TRUE(p) << p.error().message();
    port_ = *p;
  }
  httplib::Client https(const std::string& cert = "", const std::string& key = "", const std::string& ca = "") const {
    httplib::Client c("https://127.0.0.1:" + std::to_string(port_), cert, key);
    c.set_ca_cert_path(ca.empty() ? pki_.ca : ca);
    c.enable_server_certificate_verification(true);
    c.set_connection_timeout(std::chrono::seconds(20));  // hang guard
    c.set_read_timeout(std::chrono::seconds(20));
    return c;
  }
  httplib::Client http() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(std::chrono::seconds(20));
    return c;
  }
  bool said(const std::string& msg) {
    std::lock_guard lock(said_mu_);
    return std::find(said_.begin(), said_.end(), msg) != said_.end();
  }

  gpudoc::testing::TempDir dir_{"gpudoc-tls"};
  gpudoc::testing::Pki pki_;
  std::string web_ = dir_.file("web.yml");
  std::unique_ptr<Server> server_;
  int port_ = 0;
  std::mutex said_mu_;
  std::vector<std::string> said_;
};

TEST_F(TlsServer, AScrapeOverTlsWithTheRightCa) {
  start(tls_config());
  EXPECT_TRUE(server_->security().tls);
  EXPECT_FALSE(server_->security().basic_auth);
  auto c = https();
  auto r = c.Get("/metrics");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(r->body.find("\ngpudoc_power_watts{gpu=\"0\""), std::string::npos);
  EXPECT_NE(r->body.find("\nprocess_cpu_seconds_total "), std::string::npos);
  EXPECT_NE(r->body.find("\nprocess_open_fds "), std::string::npos);
  // keep-alive over TLS: a second answer on the same connection
  auto again = c.Get("/healthz");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->body, "ok\n");
}

TEST_F(TlsServer, AnotherCaIsRefusedAndPlainHttpGetsNothing) {
  start(tls_config());
  auto wrong = https("", "", pki_.other_ca);
  auto r = wrong.Get("/metrics");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), httplib::Error::SSLServerVerification);
  auto plain = http().Get("/metrics");
  EXPECT_FALSE(plain && plain->status == 200);
  // the server goes on: the right client still gets its scrape
  auto ok = https().Get("/metrics");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

TEST_F(TlsServer, MutualTlsRequireAndVerify) {
  start(tls_config("  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: " + pki_.ca + "\n"));
  EXPECT_TRUE(server_->security().client_certificates);
  auto none = https().Get("/metrics");
  EXPECT_FALSE(none && none->status == 200);
  auto other = https(pki_.other_client_cert, pki_.other_client_key).Get("/metrics");
  EXPECT_FALSE(other && other->status == 200);
  auto mine = https(pki_.client_cert, pki_.client_key).Get("/metrics");
  ASSERT_TRUE(mine) << httplib::to_string(mine.error());
  EXPECT_EQ(mine->status, 200);
}

TEST_F(TlsServer, TheOtherClientCertificatePolicies) {
  start(tls_config("  client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: " + pki_.ca + "\n"));
  EXPECT_FALSE(server_->security().client_certificates);  // a client without one gets in
  auto none = https().Get("/metrics");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 200);
  auto other = https(pki_.other_client_cert, pki_.other_client_key).Get("/metrics");
  EXPECT_FALSE(other && other->status == 200);  // given, so verified, and not ours
  server_->stop();

  start(tls_config("  client_auth_type: RequireAnyClientCert\n"));
  auto any = https(pki_.other_client_cert, pki_.other_client_key).Get("/metrics");
  ASSERT_TRUE(any) << httplib::to_string(any.error());
  EXPECT_EQ(any->status, 200);  // any certificate, not verified
  auto without = https().Get("/metrics");
  EXPECT_FALSE(without && without->status == 200);
}

TEST_F(TlsServer, BasicAuthOnEveryRoute) {
  start(tls_config("basic_auth_users:\n  prometheus: " + gpudoc::testing::bcrypt("s3cret") + "\n"));
  EXPECT_TRUE(server_->security().basic_auth);
  for (const char* path : {"/metrics", "/healthz", "/", "/api/v1/snapshot", "/nope"}) {
    auto missing = https().Get(path);
    ASSERT_TRUE(missing) << path;
    EXPECT_EQ(missing->status, 401) << path;
    EXPECT_EQ(missing->get_header_value("WWW-Authenticate"), "Basic realm=\"gpudoc\", charset=\"UTF-8\"");
  }
  auto c = https();
  c.set_basic_auth("prometheus", "wrong");
  auto wrong = c.Get("/metrics");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  c.set_basic_auth("nobody", "s3cret");
  auto nobody = c.Get("/metrics");
  ASSERT_TRUE(nobody);
  EXPECT_EQ(nobody->status, 401);
  c.set_basic_auth("prometheus", "s3cret");
  for (int i = 0; i < 3; ++i) {  // the first pays bcrypt, the others find the verdict kept
    auto right = c.Get("/metrics");
    ASSERT_TRUE(right);
    EXPECT_EQ(right->status, 200);
    EXPECT_NE(right->body.find("gpudoc_scrapes_total"), std::string::npos);
  }
  auto health = c.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto head = https().Head("/metrics");
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 401);
}

TEST_F(TlsServer, BasicAuthWithoutTlsAndTheConfiguredHeaders) {
  start(
      "http_server_config:\n  headers:\n    Strict-Transport-Security: max-age=60\n    X-Frame-Options: sameorigin\n"
      "basic_auth_users:\n  prometheus: " +
      gpudoc::testing::bcrypt("s3cret", 4, "$2y$") + "\n");
  EXPECT_FALSE(server_->security().tls);
  auto c = http();
  EXPECT_EQ(c.Get("/metrics")->status, 401);
  c.set_basic_auth("prometheus", "s3cret");
  auto r = c.Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Strict-Transport-Security"), "max-age=60");
  EXPECT_EQ(r->get_header_value("X-Frame-Options"), "sameorigin");  // in place of gpudoc's DENY
  EXPECT_EQ(r->get_header_value_count("X-Frame-Options"), 1u);
  EXPECT_EQ(r->get_header_value("X-Content-Type-Options"), "nosniff");  // gpudoc's own, kept
}

// A TCP connection that sends `bytes` (a TLS record's first bytes, say) and then nothing.
int silent_client(int port, const std::string& bytes) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  if (!bytes.empty()) (void)::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  return fd;
}

TEST_F(TlsServer, SilentAndSlowTlsClientsHoldNothing) {
  // Two handler threads and more clients that never finish their handshake: silent ones, one that
  // sent half a ClientHello record, one that sent garbage. A TLS scrape still gets through (the
  // handshakes are the event loop's, never a thread's), and each of them is closed once the
  // request timeout (2 s) has passed.
  start(tls_config(), 2);
  std::vector<int> fds;
  for (int i = 0; i < 4; ++i) fds.push_back(silent_client(port_, ""));
  fds.push_back(silent_client(port_, std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11)));
  fds.push_back(silent_client(port_, "GET /metrics HTTP/1.1\r\n"));
  auto r = https().Get("/metrics");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  for (int fd : fds) {
    ASSERT_GE(fd, 0);
    timeval tv{.tv_sec = 30, .tv_usec = 0};  // hang guard: closed after ~2 s normally
    ASSERT_EQ(::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
    char buf[4096];
    ssize_t n = 0;
    while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) {
    }
    // closed: an end, or a reset where the server had bytes of it left unread
    EXPECT_TRUE(n == 0 || (n < 0 && errno == ECONNRESET)) << "a client that never finished its handshake was not "
                                                             "closed: "
                                                          << std::strerror(errno);
    ::close(fd);
  }
}

TEST_F(TlsServer, BcryptWaitsOnItsOwnThreadsAndIsBounded) {
  // bcrypt at cost 13 (about half a second) and one check at a time: of two new
  // passwords sent together, one is checked (401) and the other turned away (503). Meanwhile the
  // scrape with credentials already checked is answered by the thread kept for it.
  start("basic_auth_users:\n  prometheus: " + gpudoc::testing::bcrypt("s3cret", 13) + "\n", 3, 1);
  auto c = http();
  c.set_basic_auth("prometheus", "s3cret");
  ASSERT_EQ(c.Get("/metrics")->status, 200);  // checked once, kept
  const auto guess = [this](const std::string& password) {
    auto g = http();
    g.set_basic_auth("prometheus", password);
    auto r = g.Get("/metrics");
    return r ? r->status : -1;
  };
  auto first = std::async(std::launch::async, guess, "guess1");
  auto second = std::async(std::launch::async, guess, "guess2");
  auto scrape = c.Get("/metrics");
  ASSERT_TRUE(scrape);
  EXPECT_EQ(scrape->status, 200);
  const int a = first.get(), b = second.get();
  EXPECT_TRUE((a == 401 && b == 503) || (a == 503 && b == 401)) << a << " " << b;
}

TEST_F(TlsServer, TheFileIsReadAgainWhenItChanges) {
  start("basic_auth_users:\n  prometheus: " + gpudoc::testing::bcrypt("old") + "\n");
  auto c = http();
  c.set_basic_auth("prometheus", "old");
  ASSERT_EQ(c.Get("/metrics")->status, 200);
  write_config("basic_auth_users:\n  prometheus: " + gpudoc::testing::bcrypt("new") + "\n");
  std::this_thread::sleep_for(WebWatch::kLookEvery + std::chrono::milliseconds(200));
  EXPECT_EQ(c.Get("/metrics")->status, 401);  // looked at, read again: the old password is gone
  EXPECT_TRUE(said("web config reloaded"));
  c.set_basic_auth("prometheus", "new");
  EXPECT_EQ(c.Get("/metrics")->status, 200);

  // an invalid file: refused (every request 503, new connections closed), said once; fixed: served
  write_config("basic_auth_users:\n  prometheus: not-a-hash\n");
  std::this_thread::sleep_for(WebWatch::kLookEvery + std::chrono::milliseconds(200));
  auto refused = c.Get("/metrics");
  EXPECT_FALSE(refused && refused->status == 200);
  EXPECT_TRUE(said("web config refused"));
  write_config("basic_auth_users:\n  prometheus: " + gpudoc::testing::bcrypt("new") + "\n");
  std::this_thread::sleep_for(WebWatch::kLookEvery + std::chrono::milliseconds(200));
  (void)http().Get("/healthz");  // the look happens as a connection arrives
  auto back = c.Get("/metrics");
  ASSERT_TRUE(back);
  EXPECT_EQ(back->status, 200);
}

TEST_F(TlsServer, AWrongCertificateStopsTheStartNamingTheFile) {
  write_config("tls_server_config:\n  cert_file: " + pki_.server_cert + "\n  key_file: " + pki_.client_key + "\n");
  Server s({.host = "127.0.0.1", .port = 0, .web_config_file = web_}, small_handlers());
  auto p = s.start();
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().kind(), core::ErrorKind::kUsage);
  EXPECT_NE(p.error().message().find("key_file " + pki_.client_key + " is not the key of cert_file"), std::string::npos)
      << p.error().message();
}

}  // namespace
}  // namespace gpudoc::serve
