// What `gpudoc health` keeps of a check (health/history.hpp): this node's checks are stored and the
// payload says where; with --no-store, or for GPUs that are not this node's, nothing is written.
#include "health/history.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/temp_dir.hpp"
#include "store/health_history.hpp"

namespace gpudoc::health {
namespace {

NodeReport one_passing_check() {
  NodeReport node;
  node.system.driver_version = "580.159";
  CheckResult ecc;
  ecc.check = "ecc";
  ecc.gpu = 0;
  node.results.push_back(ecc);
  return node;
}

TEST(HealthKeepCheck, StoresThisNodesCheckAndSaysWhere) {
  auto dir = core::PrivateDir::create("gpudoc-test-health-keep");
  ASSERT_TRUE(dir.ok());
  const std::string db = dir->path() + "/gpudoc.db";
  nlohmann::json payload = {{"status", "pass"}};
  keep_check(db, false, "", one_passing_check(), payload);
  ASSERT_TRUE(payload.contains("stored")) << payload.dump();
  EXPECT_EQ(payload["stored"]["path"], db);
  EXPECT_GT(payload["stored"]["id"].get<std::int64_t>(), 0);
}

TEST(HealthKeepCheck, NothingWrittenWithNoStoreOrForAnotherBackendsGpus) {
  auto dir = core::PrivateDir::create("gpudoc-test-health-keep");
  ASSERT_TRUE(dir.ok());
  const std::string db = dir->path() + "/gpudoc.db";
  nlohmann::json payload = {{"status", "pass"}};
  keep_check(db, true, "", one_passing_check(), payload);
  keep_check(db, false, "fake:2", one_passing_check(), payload);
  EXPECT_FALSE(payload.contains("stored"));
  EXPECT_FALSE(std::filesystem::exists(db));
}

}  // namespace
}  // namespace gpudoc::health
