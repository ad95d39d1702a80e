// The NCCL loader without NCCL: a missing library and a library that is not NCCL are clear
// kEnvironment errors; the NVLS guard keeps the user's choice; version codes decode both ways.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "bench/nccl_api.hpp"

namespace gpudoc::bench::nccl {
namespace {

using ::testing::HasSubstr;

TEST(NcclLoader, MissingLibraryIsEnvironmentErrorNamingTheFile) {
  auto lib = load_nccl_library("/nonexistent/libnccl.so.2");
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.error().kind(), core::ErrorKind::kEnvironment);
  EXPECT_THAT(lib.error().message(), HasSubstr("cannot load NCCL from /nonexistent/libnccl.so.2"));
  EXPECT_THAT(lib.error().message(), HasSubstr("GPUDOC_NCCL_LIBRARY"));
}

TEST(NcclLoader, EnvironmentVariableNamesTheLibrary) {
  ASSERT_EQ(setenv(kNcclLibraryEnv, "/nonexistent/other-nccl.so", 1), 0);
  auto lib = load_nccl_library("");
  (void)unsetenv(kNcclLibraryEnv);
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.error().kind(), core::ErrorKind::kEnvironment);
  EXPECT_THAT(lib.error().message(), HasSubstr("/nonexistent/other-nccl.so"));
}

TEST(NcclLoader, ALibraryThatIsNotNcclListsWhatIsMissing) {
  auto lib = load_nccl_library("libm.so.6");
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.error().kind(), core::ErrorKind::kEnvironment);
  EXPECT_THAT(lib.error().message(), HasSubstr("lacks required NCCL functions"));
  EXPECT_THAT(lib.error().message(), HasSubstr("ncclAllReduce"));
  EXPECT_THAT(lib.error().message(), HasSubstr("ncclCommInitAll"));
}

TEST(NcclLoader, EveryRequiredFunctionIsReportedMissingFromAnEmptyTable) {
  const auto missing = missing_required(NcclApi{});
  // Everything but the two optional error-text helpers.
  EXPECT_EQ(missing.size(), kNcclFunctionCount - 2);
  EXPECT_THAT(missing, ::testing::Contains("ncclGroupEnd"));
  EXPECT_THAT(missing, ::testing::Not(::testing::Contains("ncclGetErrorString")));
}

TEST(NcclErrors, KindsAndMessage) {
  const NcclApi api;  // no ncclGetErrorString: a generic text
  const auto e = nccl_error(api, ncclUnhandledCudaError, "ncclCommInitAll");
  EXPECT_EQ(e.kind(), core::ErrorKind::kEnvironment);
  EXPECT_THAT(e.message(), HasSubstr("ncclCommInitAll: NCCL call failed (ncclResult_t 1)"));
  EXPECT_EQ(nccl_error(api, ncclSystemError, "x").kind(), core::ErrorKind::kEnvironment);
  EXPECT_EQ(nccl_error(api, ncclInvalidArgument, "x").kind(), core::ErrorKind::kInternal);
}

TEST(NcclVersion, BothEncodings) {
  EXPECT_EQ(version_string(22809), "2.28.9");  // NCCL_VERSION(2,28,9) from 2.9 on
  EXPECT_EQ(version_string(21903), "2.19.3");
  EXPECT_EQ(version_string(2804), "2.8.4");  // before 2.9: X*1000 + Y*100 + Z
  EXPECT_EQ(version_string(0), "unknown");
}

TEST(NcclNvls, DisabledUnlessTheUserChose) {
  constexpr const char* kName = "NCCL_NVLS_ENABLE";
  const char* before = std::getenv(kName);
  const std::string saved = before != nullptr ? before : "";
  const bool had = before != nullptr;

  ASSERT_EQ(unsetenv(kName), 0);
  auto s = ensure_nvls_disabled_unless_user_set();
  EXPECT_EQ(s.value, "0");
  EXPECT_TRUE(s.set_by_gpudoc);
  EXPECT_STREQ(std::getenv(kName), "0");

  ASSERT_EQ(setenv(kName, "1", 1), 0);  // the user's explicit choice is kept
  s = ensure_nvls_disabled_unless_user_set();
  EXPECT_EQ(s.value, "1");
  EXPECT_FALSE(s.set_by_gpudoc);
  EXPECT_STREQ(std::getenv(kName), "1");

  if (had)
    (void)setenv(kName, saved.c_str(), 1);
  else
    (void)unsetenv(kName);
}

}  // namespace
}  // namespace gpudoc::bench::nccl
