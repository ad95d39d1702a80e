// view/error_json: an error as --json output carries it, its exit code the kind's.
#include "view/error_json.hpp"

#include <gtest/gtest.h>

namespace gpudoc::view {
namespace {

TEST(ErrorJson, KindMessageAndExitCode) {
  const auto usage = error_json(core::Error(core::ErrorKind::kUsage, "--quick and --full exclude each other"));
  EXPECT_EQ(usage.dump(), R"({"exit_code":2,"kind":"usage","message":"--quick and --full exclude each other"})");
  const auto env = error_json(core::Error(core::ErrorKind::kEnvironment, "no GPU").with_context("gpudoc slice"));
  EXPECT_EQ(env.dump(), R"({"exit_code":3,"kind":"environment","message":"gpudoc slice: no GPU"})");
  EXPECT_EQ(error_json(core::Error(core::ErrorKind::kInternal, "bug")).dump(),
            R"({"exit_code":4,"kind":"internal","message":"bug"})");
}

}  // namespace
}  // namespace gpudoc::view
