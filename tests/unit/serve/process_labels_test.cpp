// serve's per-process labels (a cgroup read once per pid, again after a minute) and the settings
// serve runs with (flags over the config file over the defaults, the sampler's periods among them).
#include "serve/process_labels.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "core/temp_dir.hpp"
#include "serve/config.hpp"
#include "telemetry/sampler.hpp"

namespace gpudoc::serve {
namespace {

TEST(ServeCgroupLabeler, ReadsAPidOnceAMinute) {
  int reads = 0;
  auto now = std::chrono::steady_clock::time_point{};
  CgroupLabeler labeler(
      [&](pid_t pid) {
        ++reads;
        return core::CgroupIdentity{.container_id = "c" + std::to_string(pid) + "-" + std::to_string(reads),
                                    .pod_uid = "pod",
                                    .slurm_job_id = "77"};
      },
      [&] { return now; });
  ProcessSnapshot p;
  p.pid = 7;
  labeler(p);
  EXPECT_EQ(p.container_id, "c7-1");
  EXPECT_EQ(p.pod_uid, "pod");
  EXPECT_EQ(p.slurm_job_id, "77");
  now += std::chrono::seconds(60);
  ProcessSnapshot again;
  again.pid = 7;
  labeler(again);
  EXPECT_EQ(again.container_id, "c7-1");  // within the minute: not read again
  now += std::chrono::seconds(1);
  labeler(again);
  EXPECT_EQ(again.container_id, "c7-2");  // the pid may have been reused
  EXPECT_EQ(reads, 2);
}

TEST(ServeSettings, FlagsOverTheFileOverTheDefaults) {
  auto defaults = resolve_settings({}, {});
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->listen.host, "127.0.0.1");
  EXPECT_EQ(defaults->listen.port, kDefaultPort);
  EXPECT_DOUBLE_EQ(defaults->diagnose_window_s, 120);
  EXPECT_DOUBLE_EQ(defaults->diagnose_every_s, 10);
  EXPECT_DOUBLE_EQ(defaults->history_s, 600);
  EXPECT_FALSE(defaults->dcgm_compatible);

  ConfigFile file;
  file.listen = "0.0.0.0:9500";
  file.dcgm_compatible = true;
  file.diagnose_window_s = 60;
  file.history_s = 900;
  auto mixed = resolve_settings({.listen = "9600", .diagnose_window_s = 30}, file);
  ASSERT_TRUE(mixed.ok());
  EXPECT_EQ(mixed->listen.port, 9600);
  EXPECT_TRUE(mixed->dcgm_compatible);
  EXPECT_DOUBLE_EQ(mixed->diagnose_window_s, 30);
  EXPECT_DOUBLE_EQ(mixed->diagnose_every_s, 10);
  EXPECT_DOUBLE_EQ(mixed->history_s, 900);

  auto bad = resolve_settings({.listen = "host:"}, file);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind(), core::ErrorKind::kUsage);
}

TEST(ServeSettings, AConfigFileThatCannotBeReadIsAUsageError) {
  auto missing = load_config("/nonexistent/serve.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind(), core::ErrorKind::kUsage);
  EXPECT_EQ(missing.error().message().rfind("--config: ", 0), 0u) << missing.error().message();

  auto dir = core::PrivateDir::create("gpudoc-test-serve");
  ASSERT_TRUE(dir.ok());
  const std::string path = dir->path() + "/serve.json";
  std::ofstream(path) << R"({"history_s": 120, "periods": {"fast": 100}})";
  auto file = load_config(path);
  ASSERT_TRUE(file.ok()) << file.error().message();
  EXPECT_EQ(file->history_s, 120);
  EXPECT_EQ(file->periods.at("fast"), 100);
}

TEST(ServeSettings, PeriodsAreTheRecordersButGpmThenTheFileThenTheFlags) {
  const auto periods = default_periods();
  const auto recorder = telemetry::SamplerConfig::default_periods();
  for (std::size_t g = 0; g < periods.size(); ++g)
    if (g != gpu::index(gpu::MetricGroup::kGpm)) {
      EXPECT_EQ(periods[g], recorder[g]) << g;
    }
  EXPECT_EQ(periods[gpu::index(gpu::MetricGroup::kGpm)], std::chrono::milliseconds(1000));
  ConfigFile file;
  file.periods = {{"fast", 100}, {"gpm", 200}};
  EXPECT_EQ(period_overrides(file, {"fast=50"}), (std::vector<std::string>{"fast=100", "gpm=200", "fast=50"}));
  EXPECT_TRUE(period_overrides({}, {}).empty());
}

// serve::resolve: the file read when given, its store and periods under the flags'.
TEST(ServeSettings, ResolveReadsTheFileThenLaysTheFlagsOverIt) {
  auto dir = core::PrivateDir::create("gpudoc-test-serve");
  ASSERT_TRUE(dir.ok());
  const std::string path = dir->path() + "/serve.json";
  std::ofstream(path) << R"({"listen": "9700", "store": "/srv/file.db", "periods": {"fast": 100}})";
  SettingFlags flags;
  flags.config = path;
  flags.periods = {"fast=50"};
  auto s = resolve(flags);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(s->listen.port, 9700);
  EXPECT_EQ(s->store, std::optional<std::string>("/srv/file.db"));
  EXPECT_EQ(s->periods, (std::vector<std::string>{"fast=100", "fast=50"}));
  flags.store = "/srv/flag.db";
  EXPECT_EQ(resolve(flags)->store, std::optional<std::string>("/srv/flag.db"));
  flags.no_store = true;
  EXPECT_FALSE(resolve(flags)->store);
  flags.config = dir->path() + "/missing.json";
  auto missing = resolve(flags);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind(), core::ErrorKind::kUsage);
}

}  // namespace
}  // namespace gpudoc::serve
