// Where the bundled H200 traces are found: $GPUDOC_DATA_DIR first, the source tree the binary was
// built from last; a miss names every folder looked in and the variable to set.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "support/temp_dir.hpp"
#include "telemetry/bundled_traces.hpp"

namespace gpudoc::telemetry {
namespace {

using ::testing::HasSubstr;

// Sets GPUDOC_DATA_DIR for one test and restores it.
class DataDirEnv {
 public:
  explicit DataDirEnv(const std::string& value) {
    if (const char* old = std::getenv("GPUDOC_DATA_DIR")) old_ = old;
    ::setenv("GPUDOC_DATA_DIR", value.c_str(), 1);
  }
  ~DataDirEnv() {
    if (old_)
      ::setenv("GPUDOC_DATA_DIR", old_->c_str(), 1);
    else
      ::unsetenv("GPUDOC_DATA_DIR");
  }

 private:
  std::optional<std::string> old_;
};

TEST(BundledTraces, TheDataDirVariableComesFirst) {
  testing::TempDir dir("gpudoc-bundled");
  std::ofstream(dir.file("probe.jsonl")) << "{}\n";
  DataDirEnv env(dir.str());
  ASSERT_FALSE(bundled_trace_dirs().empty());
  EXPECT_EQ(bundled_trace_dirs()[0], dir.path());
  auto found = find_bundled_traces("probe.jsonl");
  ASSERT_TRUE(found) << found.error().message();
  EXPECT_EQ(*found, std::filesystem::canonical(dir.path()));
}

TEST(BundledTraces, TheSourceTreeHoldsThemWhenNothingElseDoes) {
  DataDirEnv env("");  // set but empty: not a candidate
  auto found = find_bundled_traces("gemm_saturated.jsonl");
  ASSERT_TRUE(found) << found.error().message();
  EXPECT_TRUE(std::filesystem::is_regular_file(*found / "gemm_saturated.jsonl"));
}

TEST(BundledTraces, AMissNamesEveryFolderLookedInAndTheVariable) {
  testing::TempDir dir("gpudoc-bundled");
  DataDirEnv env(dir.str());
  auto found = find_bundled_traces("no-such-trace.jsonl");
  ASSERT_FALSE(found);
  EXPECT_EQ(found.error().kind(), core::ErrorKind::kEnvironment);
  EXPECT_THAT(found.error().message(), HasSubstr(dir.str()));
  EXPECT_THAT(found.error().message(), HasSubstr("set GPUDOC_DATA_DIR"));
}

}  // namespace
}  // namespace gpudoc::telemetry
