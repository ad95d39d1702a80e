// `gpudoc bench` end to end. On a machine without a GPU (CI, this build machine) every benchmark
// is waived with its reason and the exit code is 3; on a GPU machine those two tests are skipped.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_runner.hpp"

namespace gpudoc::testing {
namespace {

const char* const kKeys[] = {"hbm.copy", "hbm.read", "hbm.write", "launch.throughput", "launch.latency", "launch.graph_node"};

bool machine_has_gpu() {
  const CliRun r = run_gpudoc("bench --only launch.latency --quick --json");
  return r.exit_code == 0;
}

TEST(CliBench, ListExitsZeroAndNamesEveryKey) {
  const CliRun r = run_gpudoc("bench --list");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const char* key : kKeys) EXPECT_THAT(r.output, ::testing::HasSubstr(key));
}

TEST(CliBench, HelpTeachesTheFormulas) {
  const CliRun r = run_gpudoc("bench --help");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("2 x buffer bytes / kernel time"));
  EXPECT_THAT(r.output, ::testing::HasSubstr("--only"));
}

TEST(CliBench, UnknownKeyIsUsageErrorListingValidKeys) {
  const CliRun r = run_gpudoc("bench --only nope");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("unknown benchmark 'nope'"));
  EXPECT_THAT(r.output, ::testing::HasSubstr("launch.graph_node"));
}

TEST(CliBench, QuickAndFullExcludeEachOther) {
  EXPECT_EQ(run_gpudoc("bench --quick --full").exit_code, 2);
}

TEST(CliBench, WithoutGpuEveryBenchmarkIsWaivedExit3) {
  if (machine_has_gpu()) GTEST_SKIP() << "this machine has a GPU";
  const CliRun r = run_gpudoc("bench");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("no GPU benchmark can run"));
  for (const char* key : kKeys) EXPECT_THAT(r.output, ::testing::HasSubstr(key));
  EXPECT_THAT(r.output, ::testing::AnyOf(::testing::HasSubstr("waived: no GPU"), ::testing::HasSubstr("waived: built without CUDA")));
}

TEST(CliBench, WithoutGpuJsonRecordsEachWaiver) {
  if (machine_has_gpu()) GTEST_SKIP() << "this machine has a GPU";
  const std::string cmd = std::string(GPUDOC_BINARY_DIR) + "/src/cli/gpudoc bench --json 2>/dev/null";
  std::FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = ::pclose(p);
  EXPECT_EQ(WEXITSTATUS(status), 3);
  const auto j = nlohmann::json::parse(out);
  ASSERT_EQ(j["results"].size(), std::size(kKeys));
  for (const auto& r : j["results"]) {
    EXPECT_EQ(r["status"], "waived") << r.dump();
    EXPECT_THAT(r["reason"].get<std::string>(), ::testing::StartsWith("waived: ")) << r.dump();
  }
  EXPECT_TRUE(j["machine"]["gpu"].is_null());
}

}  // namespace
}  // namespace gpudoc::testing
