// gpudoc health / report without a GPU: exit 3 with valid JSON saying so; report on an empty store.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <unistd.h>

#include "cli_runner.hpp"
#include "support/temp_dir.hpp"

namespace {

using gpudoc::testing::CliRun;
using gpudoc::testing::nvml_present;
using gpudoc::testing::run_gpudoc_stdout;
using gpudoc::testing::TempDir;

struct CliOut {
  int exit_code = -1;
  std::string out;  // stdout only
};

CliOut gpudoc(const std::string& args) {
  const CliRun r = run_gpudoc_stdout(args);
  return {r.exit_code, r.output};
}

TEST(CliHealth, NoGpuExits3WithValidJson) {
  if (nvml_present()) GTEST_SKIP() << "NVML is installed here";
  const CliOut r = gpudoc("health --json --no-store");
  EXPECT_EQ(r.exit_code, 3);
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["status"], "no_gpu");
  EXPECT_EQ(j["error"]["kind"], "environment");
  EXPECT_EQ(j["error"]["exit_code"], 3);
  ASSERT_TRUE(j["checks"].is_array());
  for (const auto& c : j["checks"]) {
    EXPECT_TRUE(c.contains("finding_id"));
    EXPECT_NE(c["status"], "fail") << c.dump();  // host advice never fails a node without GPUs
  }
}

TEST(CliHealth, NoGpuTerminalFormExits3) {
  if (nvml_present()) GTEST_SKIP() << "NVML is installed here";
  const CliOut r = gpudoc("health --no-load --no-store");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.out.find("No GPU checks"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cpu_governor"), std::string::npos) << r.out;
}

// A prolog reads one line and drains the node on exit 3 (deploy/slurm/prolog.sh): a node whose
// driver is broken must not take jobs.
TEST(CliHealth, GateWithoutAGpuIsOneLineAndExit3) {
  if (nvml_present()) GTEST_SKIP() << "NVML is installed here";
  const CliOut r = gpudoc("health --gate --no-store");
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_EQ(r.out.rfind("cannot check this node: ", 0), 0u) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  const CliOut j = gpudoc("health --gate --json --no-store");
  EXPECT_EQ(j.exit_code, 3);
  const auto doc = nlohmann::json::parse(j.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << j.out;
  EXPECT_EQ(doc["gate"]["pass"], false);
}

TEST(CliHealth, GateOnHealthyFakeGpusIsOneOkLineAndExit0) {
  const CliOut r = gpudoc("--backend fake:2 health --gate --no-store");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.rfind("ok: ", 0), 0u) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  const CliOut j = gpudoc("--backend fake:2 health --gate --json --no-store");
  EXPECT_EQ(j.exit_code, 0);
  const auto doc = nlohmann::json::parse(j.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << j.out;
  EXPECT_EQ(doc["gate"]["pass"], true);
  EXPECT_EQ(doc["gate"]["reason"], "");
}

TEST(CliHealth, BadGpusFlagIsUsage) {
  const CliOut r = gpudoc("health --load-seconds 0");
  EXPECT_EQ(r.exit_code, 2);
}

TEST(CliReport, MissingStoreAndBadSinceAreUsageErrors) {
  const TempDir dir("gpudoc-report");
  const std::string store = dir.file("s.db");
  // A missing store is bad input (the report never creates one).
  EXPECT_EQ(gpudoc("report --store " + store).exit_code, 2);
  CliOut r = gpudoc("report --since 7x --store " + store);
  EXPECT_EQ(r.exit_code, 2);
}

}  // namespace
