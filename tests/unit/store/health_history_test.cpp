// `gpudoc health` keeps its node checks in the store and `gpudoc report` reads them back: the
// machine context and worst status go with each, and reading never creates a store.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "health/history.hpp"
#include "store/health_history.hpp"
#include "support/temp_dir.hpp"

namespace gpudoc::store {
namespace {

using ::testing::ElementsAre;

health::NodeReport node_with(health::Status worst_status) {
  health::NodeReport node;
  node.system.driver_version = "580.95.05";
  node.system.cuda_driver_version = "13.0";
  health::GpuInput gpu;
  gpu.info.name = "NVIDIA H200";
  node.gpus.push_back(gpu);
  health::CheckResult pass;
  pass.check = "ecc";
  health::CheckResult other = pass;
  other.check = "pcie_link";
  other.status = worst_status;
  node.results = {pass, other};
  return node;
}

TEST(HealthResults, AKeptCheckIsReadBackWithItsMachineAndWorstStatus) {
  testing::TempDir dir("gpudoc-health-results");
  const std::optional<std::string> store = dir.file("s.db");
  auto at = health::keep_health_result(store, node_with(health::Status::kWarn), {{"status", "warn"}});
  ASSERT_TRUE(at) << at.error().message();
  EXPECT_EQ(at->path, *store);
  EXPECT_GT(at->id, 0);

  auto rows = health_results_since(store, 0);
  ASSERT_TRUE(rows) << rows.error().message();
  ASSERT_EQ(rows->size(), 1u);
  const StoredResult& r = (*rows)[0];
  EXPECT_EQ(r.id, at->id);
  EXPECT_EQ(r.kind, "health");
  EXPECT_EQ(r.status, "warn");
  EXPECT_THAT(r.machine.gpus, ElementsAre("NVIDIA H200"));
  EXPECT_EQ(r.machine.driver_version, "580.95.05");
  EXPECT_EQ(r.machine.cuda_version, "13.0");
  EXPECT_EQ(r.payload.value("status", ""), "warn");
  auto later = health_results_since(store, r.time_unix_ns + 1);
  ASSERT_TRUE(later);
  EXPECT_TRUE(later->empty());
}

TEST(HealthResults, ReadingAMissingStoreFailsAndCreatesNothing) {
  testing::TempDir dir("gpudoc-health-results");
  const std::optional<std::string> store = dir.file("none.db");
  auto rows = health_results_since(store, 0);
  ASSERT_FALSE(rows);
  EXPECT_FALSE(std::filesystem::exists(*store));
}

}  // namespace
}  // namespace gpudoc::store
