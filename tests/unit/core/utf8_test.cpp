// core::is_valid_utf8 / to_valid_utf8: text from other programs made safe for JSON.
#include "core/utf8.hpp"

#include <gtest/gtest.h>

namespace gpudoc::core {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(Utf8, WellFormedTextIsKeptAsIs) {
  for (const std::string s : {"", "step_ms", "caf\xC3\xA9", "\xE2\x82\xAC 5", "\xF0\x9F\x98\x80", "\xF4\x8F\xBF\xBF"}) {
    EXPECT_TRUE(is_valid_utf8(s)) << s;
    std::size_t n = 9;
    EXPECT_EQ(to_valid_utf8(s, &n), s);
    EXPECT_EQ(n, 0u);
  }
}

TEST(Utf8, EachIllFormedSequenceBecomesOneReplacement) {
  auto check = [](const std::string& in, const std::string& want, std::size_t replaced) {
    EXPECT_FALSE(is_valid_utf8(in));
    std::size_t n = 0;
    EXPECT_EQ(to_valid_utf8(in, &n), want);
    EXPECT_EQ(n, replaced);
  };
  check("caf\xE9", "caf" + kFffd, 1);  // Latin-1
  check(
      "a\xFF\xFE"
      "b",
      "a" + kFffd + kFffd + "b", 2);                            // never in UTF-8
  check("\xC0\xAF", kFffd + kFffd, 2);                          // overlong '/'
  check("\xED\xA0\x80", kFffd + kFffd + kFffd, 3);              // a surrogate
  check("\xF4\x90\x80\x80", kFffd + kFffd + kFffd + kFffd, 4);  // above U+10FFFF
  check("x\xE2\x82", "x" + kFffd, 1);                           // cut at the end: one maximal subpart
  check(
      "\xE2\x82"
      "x",
      kFffd + "x", 1);  // cut in the middle
}

}  // namespace
}  // namespace gpudoc::core
