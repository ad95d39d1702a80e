// core/dynamic_library: the one loader of vendor libraries. Which candidate loads, what an
// environment override does, and that every failure names the library, the file or the symbol and
// why — tested on libm (always there) and on files that are absent or not libraries.
#include "core/dynamic_library.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdlib.h>

#include <fstream>
#include <string>

#include "support/temp_dir.hpp"

namespace gpudoc::core {
namespace {

using ::testing::HasSubstr;

constexpr const char* kEnv = "GPUDOC_TEST_DYNAMIC_LIBRARY";

void not_null() {}

class DynamicLibraryTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(unsetenv(kEnv), 0); }
  void TearDown() override { (void)unsetenv(kEnv); }
};

TEST_F(DynamicLibraryTest, TheFirstCandidateThatLoadsIsUsed) {
  auto lib = open_library({"libm", {"/nonexistent/libm-a.so", "libm.so.6", "/nonexistent/libm-b.so"}, kEnv, "hint"});
  ASSERT_TRUE(lib.ok()) << lib.error().message();
  EXPECT_EQ(lib->file(), "libm.so.6");
  EXPECT_EQ(lib->what(), "libm");
  EXPECT_NE(lib->find("cos"), nullptr);
  EXPECT_EQ(lib->find("gpudoc_no_such_function"), nullptr);
}

TEST_F(DynamicLibraryTest, OneMissingCandidateNamesTheFileTheReasonAndTheHint) {
  auto lib = open_library({"Thing", {"/nonexistent/libthing.so.1"}, "", "install libthing"});
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.error().kind(), ErrorKind::kEnvironment);
  EXPECT_THAT(lib.error().message(), HasSubstr("cannot load Thing from /nonexistent/libthing.so.1 ("));
  EXPECT_THAT(lib.error().message(), HasSubstr("No such file"));
  EXPECT_THAT(lib.error().message(), ::testing::EndsWith("); install libthing"));
}

TEST_F(DynamicLibraryTest, SeveralMissingCandidatesAreListed) {
  auto lib = open_library({"Thing", {"/nonexistent/a.so", "/nonexistent/b.so"}, "", ""});
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.error().kind(), ErrorKind::kEnvironment);
  EXPECT_EQ(lib.error().message(), "cannot load Thing from any of /nonexistent/a.so, /nonexistent/b.so (none found)");
}

TEST_F(DynamicLibraryTest, AFileThatIsNotALibraryGivesTheLoadersReason) {
  testing::TempDir tmp("gpudoc-dl");
  const std::string fake = tmp.file("libfake.so");
  std::ofstream(fake) << "not an ELF file\n";
  auto lib = open_library({"Thing", {"/nonexistent/a.so", fake}, "", ""});
  ASSERT_FALSE(lib.ok());
  EXPECT_THAT(lib.error().message(),
              HasSubstr("cannot load Thing from any of /nonexistent/a.so, " + fake + " (" + fake));
  EXPECT_THAT(lib.error().message(), ::testing::Not(HasSubstr("none found")));
}

TEST_F(DynamicLibraryTest, TheEnvironmentOverrideIsTheOnlyFileTried) {
  ASSERT_EQ(setenv(kEnv, "libm.so.6", 1), 0);
  auto lib = open_library({"libm", {"/nonexistent/a.so"}, kEnv, ""});
  ASSERT_TRUE(lib.ok()) << lib.error().message();
  EXPECT_EQ(lib->file(), "libm.so.6");

  ASSERT_EQ(setenv(kEnv, "/nonexistent/override.so", 1), 0);
  auto missing = open_library({"Thing", {"libm.so.6"}, kEnv, "unset it"});
  ASSERT_FALSE(missing.ok());  // libm.so.6 would load: the override is not a first choice, it is the choice
  EXPECT_EQ(missing.error().kind(), ErrorKind::kEnvironment);
  EXPECT_THAT(missing.error().message(),
              HasSubstr("cannot load Thing from " + std::string(kEnv) + "=/nonexistent/override.so ("));
  EXPECT_THAT(missing.error().message(), ::testing::EndsWith("; unset it"));
}

TEST_F(DynamicLibraryTest, AnEmptyOverrideFallsBackToTheCandidates) {
  ASSERT_EQ(setenv(kEnv, "", 1), 0);
  auto lib = open_library({"libm", {"libm.so.6"}, kEnv, ""});
  ASSERT_TRUE(lib.ok()) << lib.error().message();
  EXPECT_EQ(lib->file(), "libm.so.6");
}

TEST_F(DynamicLibraryTest, NoCandidateIsAnInternalError) {
  auto lib = open_library({"Thing", {}, "", ""});
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.error().kind(), ErrorKind::kInternal);
  EXPECT_THAT(lib.error().message(), HasSubstr("no file named for Thing"));
}

TEST_F(DynamicLibraryTest, ResolverFillsTypedPointersAndNamesEveryMissingRequiredSymbol) {
  auto lib = open_library({"libm", {"libm.so.6"}, "", "a hint"});
  ASSERT_TRUE(lib.ok()) << lib.error().message();
  SymbolResolver symbols(*lib);
  double (*cosine)(double) = nullptr;
  void (*optional_fn)() = &not_null;  // overwritten with nullptr
  void (*required_a)() = nullptr;
  void (*required_b)() = nullptr;
  symbols.resolve(Need::kRequired, "cos", cosine);
  symbols.resolve(Need::kOptional, "gpudoc_optional_absent", optional_fn);
  ASSERT_TRUE(symbols.status().ok());
  ASSERT_NE(cosine, nullptr);
  EXPECT_DOUBLE_EQ(cosine(0.0), 1.0);
  EXPECT_EQ(optional_fn, nullptr);

  symbols.resolve(Need::kRequired, "gpudoc_absent_a", required_a);
  symbols.resolve(Need::kRequired, "gpudoc_absent_b", required_b);
  EXPECT_THAT(symbols.missing(), ::testing::ElementsAre("gpudoc_absent_a", "gpudoc_absent_b"));
  const Status st = symbols.status();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind(), ErrorKind::kEnvironment);
  EXPECT_EQ(st.error().message(), "libm.so.6 lacks required libm functions (gpudoc_absent_a, gpudoc_absent_b); a hint");
}

bool mapped_in_this_process(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);)
    if (line.find("/" + name) != std::string::npos) return true;
  return false;
}

// The lower steps, for a loader with its own search: find_loaded never maps anything new, open_file
// does, and its error is the loader's reason alone.
TEST_F(DynamicLibraryTest, FindLoadedSeesOnlyWhatIsMappedAndOpenFileMapsIt) {
  const LibrarySpec zlib{"zlib", {"/nonexistent/libz.so", "libz.so.1"}, "", "unused hint"};
  if (mapped_in_this_process("libz.so.1")) GTEST_SKIP() << "libz is already mapped into this test";
  EXPECT_FALSE(find_loaded(zlib).has_value());
  EXPECT_FALSE(mapped_in_this_process("libz.so.1"));  // RTLD_NOLOAD: asking loads nothing

  auto opened = open_file(zlib, "libz.so.1");
  if (!opened.ok()) GTEST_SKIP() << "no libz.so.1 here: " << opened.error().message();
  EXPECT_EQ(opened->file(), "libz.so.1");
  EXPECT_NE(opened->find("zlibVersion"), nullptr);
  auto found = find_loaded(zlib);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->file(), "libz.so.1");
  EXPECT_EQ(found->what(), "zlib");
  EXPECT_EQ(found->handle(), opened->handle());

  auto missing = open_file(zlib, "/nonexistent/libz.so");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind(), ErrorKind::kEnvironment);
  EXPECT_THAT(missing.error().message(), ::testing::StartsWith("/nonexistent/libz.so: "));
  EXPECT_THAT(missing.error().message(), HasSubstr("No such file"));
  EXPECT_THAT(missing.error().message(), ::testing::Not(HasSubstr("unused hint")));
}

TEST_F(DynamicLibraryTest, MissingSymbolsErrorWithoutAHint) {
  const Error e = missing_symbols_error("the injected function table", "NVML", {"nvmlInit_v2"}, "");
  EXPECT_EQ(e.kind(), ErrorKind::kEnvironment);
  EXPECT_EQ(e.message(), "the injected function table lacks required NVML functions (nvmlInit_v2)");
}

}  // namespace
}  // namespace gpudoc::core
