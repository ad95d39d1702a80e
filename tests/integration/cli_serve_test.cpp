// gpudoc serve from the command line: it serves fake GPUs on a free loopback port and stops at
// --duration; bad --listen, --config, --web-config-file, --log-format and range flags are usage
// errors (2) naming what was wrong; an address in use is an environment error (3); a non-loopback
// address is served with a warning unless a web config authenticates clients; --log-format logfmt
// and json say the same things as records.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "support/temp_dir.hpp"
#include "unit/serve/test_certificates.hpp"

namespace {

using gpudoc::testing::CliRun;
using gpudoc::testing::run_gpudoc;

TEST(CliServe, ServesFakeGpusAndStopsAtItsDuration) {
  const CliRun r = run_gpudoc("--backend fake:2 serve --listen 127.0.0.1:0 --duration 2 --no-store");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("FAKE GPUs"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("serving 2 GPUs on http://127.0.0.1:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("stopped after 0 scrapes"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("no authentication"), std::string::npos) << r.output;  // loopback: no warning
}

TEST(CliServe, SigtermStopsItWithinASecond) {
  // serve sleeps until a signal (no polling loop): SIGTERM wakes it, the sampler and the server stop,
  // exit 0. Timed from the signal to the exit.
  const CliRun r = gpudoc::testing::run_shell(
      "sh -c '" + gpudoc::testing::gpudoc_binary() +
      " --backend fake:2 serve --listen 127.0.0.1:0 --no-store 2>&1 & pid=$!; sleep 1.5; "
      "t0=$(date +%s%N); kill -TERM $pid; wait $pid; rc=$?; echo \"exit=$rc ms=$(( ($(date +%s%N) - t0) / 1000000 "
      "))\"'");
  EXPECT_NE(r.output.find("exit=0 "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("stopped after 0 scrapes"), std::string::npos) << r.output;
  const auto at = r.output.find("ms=");
  ASSERT_NE(at, std::string::npos) << r.output;
  EXPECT_LT(std::stoi(r.output.substr(at + 3)), 900) << r.output;
}

TEST(CliServe, AnAddressBeyondLoopbackIsServedWithAWarning) {
  const CliRun r = run_gpudoc("--backend fake:1 serve --listen 0.0.0.0:0 --duration 1 --no-store");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("reachable from other machines and gpudoc serve has no authentication"), std::string::npos)
      << r.output;
}

TEST(CliServe, BadFlagsAreUsageErrors) {
  const std::pair<const char*, const char*> cases[] = {
      {"--listen 127.0.0.1:70000", "the port must be a number from 0 to 65535"},
      {"--listen ::1:9401", "an IPv6 address goes in brackets"},
      {"--listen :9401", "127.0.0.1:9401 for this machine only, or 0.0.0.0:9401 for every interface"},
      {"--diagnose-window 1", "--diagnose-window 1: out of range; expected seconds, from 2 to 3600"},
      {"--history 10", "--history 10: out of range; expected seconds, from 60 to 86400"},
      {"--diagnose-every nan", "--diagnose-every nan: not a finite number; expected seconds, from 1 to 3600"},
      {"--config /nonexistent/serve.json", "--config: "},
  };
  for (const auto& [args, says] : cases) {
    const CliRun r = run_gpudoc(std::string("--backend fake:1 serve --no-store ") + args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(says), std::string::npos) << args << "\n" << r.output;
  }
}

TEST(CliServe, ConfigFileErrorsNameTheFileAndKey) {
  gpudoc::testing::TempDir dir("gpudoc-serve-config");
  std::ofstream(dir.file("serve.json")) << R"({"listen": "127.0.0.1:0", "diagnose_windows_s": 60})";
  const CliRun r = run_gpudoc("--backend fake:1 serve --no-store --duration 1 --config " + dir.file("serve.json"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(dir.file("serve.json") + ": unknown setting \"diagnose_windows_s\""), std::string::npos)
      << r.output;
  std::ofstream(dir.file("good.json")) << R"({"listen": "127.0.0.1:0", "diagnose_window_s": 30})";
  const CliRun ok = run_gpudoc("--backend fake:1 serve --no-store --duration 1 --config " + dir.file("good.json"));
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
}

TEST(CliServe, AMalformedWebConfigIsAUsageErrorNamingTheKeyOrFile) {
  gpudoc::testing::TempDir dir("gpudoc-serve-web");
  const auto pki = gpudoc::testing::make_pki(dir);
  const std::string web = dir.file("web.yml");
  std::ofstream(web) << "tls_server_config:\n  cert_file: " << pki.server_cert << "\n  key_fle: x\n";
  const CliRun r = run_gpudoc("--backend fake:1 serve --no-store --duration 1 --web-config-file " + web);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--web-config-file " + web + " line 3: unknown key \"key_fle\" in tls_server_config"),
            std::string::npos)
      << r.output;
  std::ofstream(web) << "tls_server_config:\n  cert_file: " << dir.file("gone.crt")
                     << "\n  key_file: " << pki.server_key << "\n";
  const CliRun gone = run_gpudoc("--backend fake:1 serve --no-store --duration 1 --web-config-file " + web);
  EXPECT_EQ(gone.exit_code, 2) << gone.output;
  EXPECT_NE(gone.output.find("cert_file: reading " + dir.file("gone.crt")), std::string::npos) << gone.output;
  // the same file named by the config file
  std::ofstream(dir.file("serve.json")) << R"({"web_config_file": ")" << web << R"("})";
  const CliRun via = run_gpudoc("--backend fake:1 serve --no-store --duration 1 --config " + dir.file("serve.json"));
  EXPECT_EQ(via.exit_code, 2) << via.output;
  EXPECT_NE(via.output.find(dir.file("gone.crt")), std::string::npos) << via.output;
  const CliRun format = run_gpudoc("--backend fake:1 serve --no-store --duration 1 --log-format xml");
  EXPECT_EQ(format.exit_code, 2) << format.output;
  EXPECT_NE(format.output.find("--log-format xml: expected text, logfmt or json"), std::string::npos) << format.output;
}

TEST(CliServe, TlsAndBasicAuthAreSaidAndSilenceTheWarning) {
  gpudoc::testing::TempDir dir("gpudoc-serve-web");
  const auto pki = gpudoc::testing::make_pki(dir);
  const std::string web = dir.file("web.yml");
  std::ofstream(web) << "tls_server_config:\n  cert_file: " << pki.server_cert << "\n  key_file: " << pki.server_key
                     << "\nbasic_auth_users:\n  prometheus: " << gpudoc::testing::bcrypt("s3cret") << "\n";
  ::chmod(web.c_str(), 0600);
  const CliRun r =
      run_gpudoc("--backend fake:1 serve --no-store --duration 1 --listen 0.0.0.0:0 --web-config-file " + web);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("serving 1 GPU on https://0.0.0.0:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("; TLS, basic authentication)"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("no authentication"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("warning"), std::string::npos) << r.output;  // the file is not world-readable
}

TEST(CliServe, LogfmtAndJsonRecords) {
  const CliRun json =
      run_gpudoc("--backend fake:2 serve --no-store --duration 1 --listen 127.0.0.1:0 --log-format json");
  EXPECT_EQ(json.exit_code, 0) << json.output;
  std::istringstream lines(json.output);
  std::vector<std::string> msgs;
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << "not one JSON object a line: " << line;
    ASSERT_TRUE(j.contains("time") && j.contains("level")) << line;
    msgs.push_back(j["msg"].get<std::string>());
    if (j["msg"] == "listening") {
      EXPECT_EQ(j["gpus"], 2);
      EXPECT_EQ(j["scheme"], "http");
      EXPECT_EQ(j["tls"], false);
    }
  }
  EXPECT_EQ(msgs, (std::vector<std::string>{"backend", "listening", "stopped"})) << json.output;
  const CliRun logfmt =
      run_gpudoc("--backend fake:1 serve --no-store --duration 1 --listen 0.0.0.0:0 --log-format logfmt");
  EXPECT_EQ(logfmt.exit_code, 0) << logfmt.output;
  EXPECT_NE(logfmt.output.find(" level=warn msg=\"listening beyond loopback without authentication\" address=0.0.0.0:"),
            std::string::npos)
      << logfmt.output;
  EXPECT_NE(logfmt.output.find(" level=info msg=\"stopped\" scrapes=0\n"), std::string::npos) << logfmt.output;
  // an error once the format is known is a record too
  const CliRun bad = run_gpudoc("--backend fake:1 serve --no-store --listen 127.0.0.1:70000 --log-format json");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  const auto j = nlohmann::json::parse(bad.output.substr(0, bad.output.find('\n')), nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << bad.output;
  EXPECT_EQ(j["level"], "error");
  EXPECT_EQ(j["kind"], "usage");
  EXPECT_NE(j["msg"].get<std::string>().find("the port must be a number"), std::string::npos) << bad.output;
}

// A loopback port nobody listens on (bound, read, closed).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    return 0;
  ::close(fd);
  return ntohs(a.sin_port);
}

// The sampler_period_seconds lines of one scrape of serve on a fake GPU started with `flags`.
std::string served_periods(const std::string& flags) {
  const std::string url = "http://127.0.0.1:" + std::to_string(free_port()) + "/metrics";
  const std::string listen = url.substr(7, url.size() - 7 - 8);
  const CliRun r = gpudoc::testing::run_shell(
      "sh -c '" + gpudoc::testing::gpudoc_binary() + " --backend fake:1 serve --no-store --duration 20 --listen " +
      listen + " " + flags + " 2>/dev/null & pid=$!; for i in $(seq 50); do python3 -c \"import sys, urllib.request; " +
      "sys.stdout.write(urllib.request.urlopen(sys.argv[1]).read().decode())\" " + url +
      " 2>/dev/null | grep ^gpudoc_sampler_period && break; sleep 0.2; done; kill $pid; wait $pid'");
  return r.output;
}

TEST(CliServe, GpmIsReadEverySecondUnlessToldAndThePeriodsAreServed) {
  // serve's own default (docs/serve.md: it halves serve's CPU on an H200), the recorder's elsewhere
  const std::string dflt = served_periods("");
  EXPECT_NE(dflt.find("gpudoc_sampler_period_seconds{group=\"gpm\"} 1\n"), std::string::npos) << dflt;
  EXPECT_NE(dflt.find("gpudoc_sampler_period_seconds{group=\"fast\"} 0.1\n"), std::string::npos) << dflt;
  const std::string asked = served_periods("--period gpm=200,energy=0");
  EXPECT_NE(asked.find("gpudoc_sampler_period_seconds{group=\"gpm\"} 0.2\n"), std::string::npos) << asked;
  EXPECT_EQ(asked.find("group=\"energy\""), std::string::npos) << asked;  // off: not served
}

TEST(CliServe, AnAddressInUseIsAnEnvironmentError) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const int port = ntohs(a.sin_port);
  const CliRun r = run_gpudoc("--backend fake:1 serve --no-store --listen 127.0.0.1:" + std::to_string(port));
  ::close(fd);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("cannot listen on 127.0.0.1:" + std::to_string(port)), std::string::npos) << r.output;
}

}  // namespace
