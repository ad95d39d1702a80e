// Running a program under the injection library, from outside it: --sample's text, the libraries'
// overrides, the records a run left, and the stop of a program at its deadline.
#include "profile/launch.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "core/temp_dir.hpp"

namespace gpudoc::profile {
namespace {

TEST(ProfileLaunch, SampleTextBecomesMilliseconds) {
  EXPECT_EQ(sample_to_env("2:18"), "2000:18000");
  EXPECT_EQ(sample_to_env("0.5:9.5"), "500:9500");
  EXPECT_EQ(sample_to_env("0.001:86400"), "1:86400000");
  for (const char* bad : {"", "2", "2:", ":18", "0:1", "1:0.0001", "1:86401", "a:b", "1:2:3", "1e400:1"})
    EXPECT_EQ(sample_to_env(bad), "") << bad;
}

TEST(ProfileLaunch, OverridesThatCannotBeReadAreEnvironmentErrors) {
  ::setenv("GPUDOC_PROFILE_LIBRARY", "/nonexistent/libgpudoc_profile.so", 1);
  ::setenv("GPUDOC_CUPTI_LIBRARY", "/nonexistent/libcupti.so", 1);
  auto library = find_injection_library();
  auto cupti = find_cupti();
  ::unsetenv("GPUDOC_PROFILE_LIBRARY");
  ::unsetenv("GPUDOC_CUPTI_LIBRARY");
  ASSERT_FALSE(library.ok());
  EXPECT_EQ(library.error().kind(), core::ErrorKind::kEnvironment);
  EXPECT_EQ(library.error().message(), "GPUDOC_PROFILE_LIBRARY=/nonexistent/libgpudoc_profile.so cannot be read");
  ASSERT_FALSE(cupti.ok());
  EXPECT_EQ(cupti.error().message(), "GPUDOC_CUPTI_LIBRARY=/nonexistent/libcupti.so cannot be read");
}

TEST(ProfileLaunch, AnotherInjectionLibraryIsNotDisplaced) {
  ::unsetenv("CUDA_INJECTION64_PATH");
  EXPECT_TRUE(no_other_injection().ok());
  ::setenv("CUDA_INJECTION64_PATH", "/opt/nsight/libToolsInjection64.so", 1);
  auto other = no_other_injection();
  ::unsetenv("CUDA_INJECTION64_PATH");
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().kind(), core::ErrorKind::kEnvironment);
  EXPECT_NE(other.error().message().find("CUDA_INJECTION64_PATH=/opt/nsight/libToolsInjection64.so"),
            std::string::npos);
}

TEST(ProfileLaunch, NoRecordsMeansNoCudaContext) {
  auto dir = core::PrivateDir::create("gpudoc-test-profile");
  ASSERT_TRUE(dir.ok());
  std::size_t files = 7;
  auto set = pick_records(dir->path(), files);
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(files, 0u);
  EXPECT_EQ(set.error().kind(), core::ErrorKind::kEnvironment);
  EXPECT_NE(set.error().message().find("created no CUDA context"), std::string::npos);
  EXPECT_EQ(records_path("/d", 42), "/d/records-42.txt");
}

TEST(ProfileLaunch, ADeadlineInterruptsTheProgram) {
  std::atomic<int> stops{0};
  const auto t0 = std::chrono::steady_clock::now();
  auto code = run_injected({.command = {"sleep", "30"},
                            .library = "/nonexistent/lib.so",
                            .cupti = {"/nonexistent/libcupti.so"},
                            .output_dir = "/nonexistent",
                            .sample_env = "",
                            .duration_s = 0.2},
                           stops);
  ASSERT_TRUE(code.ok()) << code.error().message();
  EXPECT_EQ(*code, 130);  // SIGINT, as a shell reports it
  // hang guard: normally 0.2 s (the deadline), and the program sleeps 30 s if SIGINT went unsent
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

TEST(ProfileLaunch, AStopRequestStopsTheGroup) {
  std::atomic<int> stops{2};  // a second request: SIGKILL follows SIGTERM at once
  auto code = run_injected({.command = {"sleep", "30"},
                            .library = "/nonexistent/lib.so",
                            .cupti = {"/nonexistent/libcupti.so"},
                            .output_dir = "/nonexistent",
                            .sample_env = ""},
                           stops);
  ASSERT_TRUE(code.ok()) << code.error().message();
  EXPECT_EQ(*code, 143);  // SIGTERM
}

// --input: records saved with --records, copied when asked; a missing or malformed file is the
// user's input (exit 2), named.
TEST(ProfileLaunch, SavedRecordsAreReadAndCopiedAndBadOnesNamed) {
  auto dir = core::PrivateDir::create("gpudoc-test-saved-records");
  ASSERT_TRUE(dir.ok());
  const std::string in = dir->file("records.txt"), copy = dir->file("copy.txt"), bad = dir->file("bad.txt");
  std::ofstream(in)
      << "H\tgpudoc-profile\t1\t7\t130001\nK\t100\t200\t0\t7\t11\t64\t1\t1\t128\t1\t1\t0\tk\nE\t1000\t0\n";
  std::ofstream(bad) << "not records\n";
  auto r = read_saved_records(in, copy);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->records.kernels.size(), 1U);
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(r->processes, 1U);
  EXPECT_EQ(std::filesystem::file_size(copy), std::filesystem::file_size(in));
  for (const std::string& path : {bad, dir->file("missing.txt")}) {
    auto e = read_saved_records(path, "");
    ASSERT_FALSE(e.ok()) << path;
    EXPECT_EQ(e.error().kind(), core::ErrorKind::kBadInput) << path << ": " << e.error().message();
    EXPECT_NE(e.error().message().find(path), std::string::npos) << e.error().message();
  }
}

}  // namespace
}  // namespace gpudoc::profile
