#include "core/result.hpp"

#include <gtest/gtest.h>

namespace gpudoc::core {
namespace {

Result<int> parse_positive(int v) {
  if (v <= 0) return Error(ErrorKind::kBadInput, "expected a positive number");
  return v;
}

TEST(Result, CarriesValueOrError) {
  auto good = parse_positive(3);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 3);
  auto bad = parse_positive(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind(), ErrorKind::kBadInput);
  EXPECT_EQ(bad.value_or(7), 7);
}

TEST(Result, ContextIsPrefixedOutermostFirst) {
  Error e(ErrorKind::kBadInput, "expected a number");
  Error wrapped = e.with_context("line 812").with_context("reading run.jsonl");
  EXPECT_EQ(wrapped.message(), "reading run.jsonl: line 812: expected a number");
  EXPECT_EQ(wrapped.kind(), ErrorKind::kBadInput);
}

TEST(Result, ExitCodesAreTheDocumentedOnes) {
  EXPECT_EQ(exit_code(ErrorKind::kUsage), 2);
  EXPECT_EQ(exit_code(ErrorKind::kBadInput), 2);
  EXPECT_EQ(exit_code(ErrorKind::kIo), 2);
  EXPECT_EQ(exit_code(ErrorKind::kEnvironment), 3);
  EXPECT_EQ(exit_code(ErrorKind::kNotSupported), 3);
  EXPECT_EQ(exit_code(ErrorKind::kGpuLost), 3);
  EXPECT_EQ(exit_code(ErrorKind::kTimeout), 3);
  EXPECT_EQ(exit_code(ErrorKind::kInternal), 4);
}

TEST(Status, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  Status bad = Error(ErrorKind::kIo, "disk full");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(), "disk full");
}

}  // namespace
}  // namespace gpudoc::core
