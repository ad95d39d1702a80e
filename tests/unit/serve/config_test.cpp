// serve config: --listen's forms and errors, and the --config file's keys, types and ranges.
#include "serve/config.hpp"

#include <gtest/gtest.h>

namespace gpudoc::serve {
namespace {

TEST(ServeConfig, ListenForms) {
  auto a = parse_listen("10.0.0.7:9401");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->host, "10.0.0.7");
  EXPECT_EQ(a->port, 9401);
  auto v6 = parse_listen("[::1]:9500");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 9500);
  auto l = parse_listen("9402");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->host, "127.0.0.1");
  EXPECT_EQ(l->port, 9402);
  // ":PORT" is every interface to other exporters and was loopback here: refused, naming both.
  auto bare = parse_listen(":9402");
  ASSERT_FALSE(bare);
  EXPECT_EQ(bare.error().kind(), core::ErrorKind::kUsage);
  EXPECT_NE(bare.error().message().find("127.0.0.1:9402"), std::string::npos) << bare.error().message();
  EXPECT_NE(bare.error().message().find("0.0.0.0:9402"), std::string::npos) << bare.error().message();
  EXPECT_EQ(parse_listen("localhost:0")->port, 0);
}

TEST(ServeConfig, TheSamplerStartsFromServesPeriodsWithTheOverridesOverThem) {
  Settings s;
  s.periods = {"fast=250", "gpm=200"};
  auto c = sampler_config(s, {0, 2}, false);
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->periods[gpu::index(gpu::MetricGroup::kFast)].count(), 250);
  EXPECT_EQ(c->periods[gpu::index(gpu::MetricGroup::kGpm)].count(), 200);
  EXPECT_EQ(c->periods[gpu::index(gpu::MetricGroup::kSlow)], default_periods()[gpu::index(gpu::MetricGroup::kSlow)]);
  EXPECT_EQ(c->gpus, (std::vector<int>{0, 2}));
  EXPECT_FALSE(c->read_events);
  auto plain = sampler_config({}, {}, true);
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->periods, default_periods());  // GPM every kGpmPeriod, not the recorder's 200 ms
  EXPECT_TRUE(plain->read_events);
  s.periods = {"fast=10"};
  auto fast = sampler_config(s, {}, true);
  ASSERT_FALSE(fast);
  EXPECT_EQ(fast.error().kind(), core::ErrorKind::kUsage);
  EXPECT_NE(fast.error().message().find("faster than the sensor allows"), std::string::npos) << fast.error().message();
}

TEST(ServeConfig, ListenErrorsSayWhatWasExpected) {
  for (const char* bad :
       {"", "10.0.0.7:", "10.0.0.7:99999", "10.0.0.7:-1", "10.0.0.7:94x", "::1:9401", "[]:9401", "[::1]9401", "[::1"}) {
    auto r = parse_listen(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().kind(), core::ErrorKind::kUsage) << bad;
    EXPECT_NE(r.error().message().find("HOST:PORT"), std::string::npos) << r.error().message();
  }
}

TEST(ServeConfig, FileWithEveryKey) {
  auto c = parse_config(R"({"listen": "[::1]:9401", "dcgm_compatible": true, "diagnose_window_s": 60,
                            "diagnose_every_s": 5, "history_s": 900, "store": "/var/lib/gpudoc/gpudoc.db",
                            "periods": {"fast": 200, "energy": 0}})",
                        "serve.json");
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->listen, "[::1]:9401");
  EXPECT_EQ(c->dcgm_compatible, true);
  EXPECT_EQ(c->diagnose_window_s, 60);
  EXPECT_EQ(c->diagnose_every_s, 5);
  EXPECT_EQ(c->history_s, 900);
  EXPECT_EQ(c->store, "/var/lib/gpudoc/gpudoc.db");
  EXPECT_EQ(c->periods.at("fast"), 200);
  EXPECT_EQ(c->periods.at("energy"), 0);
  auto empty = parse_config("{}", "serve.json");
  ASSERT_TRUE(empty);
  EXPECT_FALSE(empty->listen);
}

TEST(ServeConfig, FileErrorsNameTheFileAndTheKey) {
  const std::pair<const char*, const char*> cases[] = {
      {"not json", "not valid JSON"},
      {"[1]", "expected a JSON object"},
      {R"({"lisen": "x"})", "unknown setting \"lisen\""},
      {R"({"listen": 9401})", "\"listen\" must be a non-empty string"},
      {R"({"dcgm_compatible": "yes"})", "\"dcgm_compatible\" must be true or false"},
      {R"({"diagnose_window_s": 1})", "\"diagnose_window_s\" must be a number of seconds from 2 to 3600"},
      {R"({"history_s": 1e9})", "\"history_s\" must be a number of seconds from 60 to 86400"},
      {R"({"periods": {"fast": "100"}})", "periods.fast must be a whole number"},
      {R"({"periods": [1]})", "\"periods\" must be an object"},
  };
  for (const auto& [text, says] : cases) {
    auto r = parse_config(text, "/etc/gpudoc/serve.json");
    ASSERT_FALSE(r) << text;
    EXPECT_EQ(r.error().kind(), core::ErrorKind::kUsage);
    EXPECT_NE(r.error().message().find("/etc/gpudoc/serve.json: "), std::string::npos) << r.error().message();
    EXPECT_NE(r.error().message().find(says), std::string::npos) << r.error().message();
  }
}

TEST(ServeConfig, TheWebConfigAndTheLogFormatFromFlagsOrFile) {
  auto c = parse_config(R"({"web_config_file": "/etc/gpudoc/web.yml", "log_format": "logfmt"})", "serve.json");
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->web_config_file, "/etc/gpudoc/web.yml");
  EXPECT_EQ(c->log_format, core::LogFormat::kLogfmt);
  auto from_file = resolve_settings(SettingFlags{}, *c);
  ASSERT_TRUE(from_file);
  EXPECT_EQ(from_file->web_config_file, "/etc/gpudoc/web.yml");
  EXPECT_EQ(from_file->log_format, core::LogFormat::kLogfmt);
  SettingFlags f;
  f.web_config_file = "/run/web.yml";
  f.log_format = "json";
  auto flags = resolve_settings(f, *c);  // flags win
  ASSERT_TRUE(flags);
  EXPECT_EQ(flags->web_config_file, "/run/web.yml");
  EXPECT_EQ(flags->log_format, core::LogFormat::kJson);
  auto none = resolve_settings(SettingFlags{}, ConfigFile{});
  ASSERT_TRUE(none);
  EXPECT_EQ(none->web_config_file, "");
  EXPECT_EQ(none->log_format, core::LogFormat::kText);
  EXPECT_EQ(flag_log_format(f), core::LogFormat::kJson);
  f.log_format = "yaml";
  auto bad = resolve_settings(f, ConfigFile{});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message(), "--log-format yaml: expected text, logfmt or json");
  EXPECT_EQ(flag_log_format(f), core::LogFormat::kText);  // the error itself is said as text
  for (const char* text : {R"({"log_format": "xml"})", R"({"log_format": 1})"}) {
    auto r = parse_config(text, "serve.json");
    ASSERT_FALSE(r) << text;
    EXPECT_EQ(r.error().message(), "serve.json: \"log_format\" must be \"text\", \"logfmt\" or \"json\"");
  }
  auto empty = parse_config(R"({"web_config_file": ""})", "serve.json");
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().message().find("\"web_config_file\" must be a non-empty string"), std::string::npos);
}

TEST(ServeConfig, WhoHoldsEachGpuFromFlagsOrFile) {
  auto c = parse_config(
      R"({"kubernetes_pod_resources": true, "hpc_job_mapping_dir": "/run/gpu-jobs", "attribution_every_s": 30})",
      "serve.json");
  ASSERT_TRUE(c) << c.error().message();
  auto from_file = resolve_settings(SettingFlags{}, *c);
  ASSERT_TRUE(from_file);
  EXPECT_EQ(from_file->attribution.pod_resources_socket, "/var/lib/kubelet/pod-resources/kubelet.sock");
  EXPECT_EQ(from_file->attribution.hpc_job_mapping_dir, "/run/gpu-jobs");
  EXPECT_EQ(from_file->attribution.every, std::chrono::seconds(30));
  SettingFlags f;  // flags win
  f.kubernetes_pod_resources = "/run/kubelet.sock";
  f.hpc_job_mapping_dir = "/srv/jobs";
  f.attribution_every_s = 2.5;
  auto flags = resolve_settings(f, *c);
  ASSERT_TRUE(flags);
  EXPECT_EQ(flags->attribution.pod_resources_socket, "/run/kubelet.sock");
  EXPECT_EQ(flags->attribution.hpc_job_mapping_dir, "/srv/jobs");
  EXPECT_EQ(flags->attribution.every, std::chrono::milliseconds(2500));
  // Neither asked for: nothing read, every 10 s when something is.
  auto none = resolve_settings(SettingFlags{}, ConfigFile{});
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->attribution.enabled());
  EXPECT_EQ(none->attribution.every, std::chrono::seconds(10));
  auto path = parse_config(R"({"kubernetes_pod_resources": "/k.sock"})", "serve.json");
  ASSERT_TRUE(path);
  EXPECT_EQ(resolve_settings(SettingFlags{}, *path)->attribution.pod_resources_socket, "/k.sock");
  auto off = parse_config(R"({"kubernetes_pod_resources": false})", "serve.json");
  ASSERT_TRUE(off);
  EXPECT_FALSE(resolve_settings(SettingFlags{}, *off)->attribution.pod_resources_socket);
  const std::pair<const char*, const char*> bad[] = {
      {R"({"kubernetes_pod_resources": 1})",
       "\"kubernetes_pod_resources\" must be true, false or the kubelet's socket"},
      {R"({"kubernetes_pod_resources": ""})",
       "\"kubernetes_pod_resources\" must be true, false or the kubelet's socket"},
      {R"({"hpc_job_mapping_dir": ""})", "\"hpc_job_mapping_dir\" must be a non-empty string"},
      {R"({"attribution_every_s": 0})", "\"attribution_every_s\" must be a number of seconds from 1 to 3600"},
      {R"({"attribution_every": 5})", "unknown setting \"attribution_every\""},
  };
  for (const auto& [text, says] : bad) {
    auto r = parse_config(text, "serve.json");
    ASSERT_FALSE(r) << text;
    EXPECT_NE(r.error().message().find(says), std::string::npos) << r.error().message();
  }
}

TEST(ServeConfig, AWebConfigIsCheckedBeforeAnythingStarts) {
  // resolve reads it as the server will: a missing file is a usage error naming it
  SettingFlags f;
  f.web_config_file = "/nonexistent/web.yml";
  f.no_store = true;
  auto r = resolve(f);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind(), core::ErrorKind::kUsage);
  EXPECT_NE(r.error().message().find("--web-config-file: reading /nonexistent/web.yml"), std::string::npos)
      << r.error().message();
}

}  // namespace
}  // namespace gpudoc::serve
