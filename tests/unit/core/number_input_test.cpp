// core::parse_number: the one checked reading of a number flag. Only a plain decimal number that is
// finite and inside the range passes; everything else is a usage error that names the flag, the
// value as given and the range.
#include "core/number_input.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace gpudoc::core {
namespace {

constexpr NumberRange kSeconds{.min = 0, .max = 1e9, .above_min = true, .unit = "seconds"};
constexpr NumberRange kCount{.min = 1, .max = 1000, .whole = true};

std::string why(std::string_view text, const NumberRange& range, std::string_view flag = "--timeout") {
  auto r = parse_number(flag, text, range);
  if (r.ok()) return "ok";
  EXPECT_EQ(r.error().kind(), ErrorKind::kUsage);
  return r.error().message();
}

TEST(ParseNumber, AcceptsPlainFiniteNumbersInTheRange) {
  EXPECT_EQ(*parse_number("--timeout", "600", kSeconds), 600);
  EXPECT_EQ(*parse_number("--timeout", "0.5", kSeconds), 0.5);
  EXPECT_EQ(*parse_number("--timeout", "1e9", kSeconds), 1e9);  // the bound itself
  EXPECT_EQ(*parse_number("--repeat", "1", kCount), 1);
  EXPECT_EQ(*parse_number("--repeat", "1e3", kCount), 1000);  // a whole number, however written
}

TEST(ParseNumber, RefusesWhatIsNotAFiniteNumberInTheRangeNamingFlagValueAndRange) {
  const std::string seconds = "; expected seconds, more than 0 and at most 1000000000";
  EXPECT_EQ(why("inf", kSeconds), "--timeout inf: not a finite number" + seconds);
  EXPECT_EQ(why("-inf", kSeconds), "--timeout -inf: not a finite number" + seconds);
  EXPECT_EQ(why("nan", kSeconds), "--timeout nan: not a finite number" + seconds);
  EXPECT_EQ(why("1e300", kSeconds), "--timeout 1e300: out of range" + seconds);
  EXPECT_EQ(why("1e400", kSeconds), "--timeout 1e400: out of range" + seconds);
  EXPECT_EQ(why("1e10", kSeconds), "--timeout 1e10: out of range" + seconds);
  EXPECT_EQ(why("0", kSeconds), "--timeout 0: out of range" + seconds);
  EXPECT_EQ(why("-1", kSeconds), "--timeout -1: out of range" + seconds);
  EXPECT_EQ(why("", kSeconds), "--timeout '': not a number" + seconds);
  for (const char* bad : {" 5", "5 ", "+5", "5s", "0x10", "1e", "five", "1,5"})
    EXPECT_EQ(why(bad, kSeconds), "--timeout " + std::string(bad) + ": not a number" + seconds) << bad;
  const std::string count = "; expected a whole number from 1 to 1000";
  EXPECT_EQ(why("0", kCount, "--repeat"), "--repeat 0: out of range" + count);
  EXPECT_EQ(why("2.5", kCount, "--repeat"), "--repeat 2.5: not a whole number" + count);
  EXPECT_EQ(why("1001", kCount, "--repeat"), "--repeat 1001: out of range" + count);
}

TEST(ParseNumber, TheMessageShowsTheValueAsGivenOnOneLineWithTheNote) {
  const NumberRange ms{.min = 0, .max = 100, .whole = true, .unit = "milliseconds", .note = "0 turns it off"};
  EXPECT_EQ(parse_number("--period", "1.5", ms, "fast=1.5").error().message(),
            "--period fast=1.5: not a whole number; expected milliseconds, a whole number from 0 to 100 (0 turns it "
            "off)");
  EXPECT_EQ(parse_number("", "x", ms, "fast=x").error().message().rfind("fast=x: not a number; ", 0), 0u);
  EXPECT_EQ(parse_number("--n", "1\n2", kCount).error().message().rfind("--n 1?2: not a number", 0), 0u);
  EXPECT_EQ(parse_number("--n", std::string(100, '9'), kCount).error().message(),
            "--n " + std::string(40, '9') + "...: out of range; expected a whole number from 1 to 1000");
}

TEST(ParseNumber, DescribesRanges) {
  EXPECT_EQ(describe(kSeconds), "seconds, more than 0 and at most 1000000000");
  EXPECT_EQ(describe(kCount), "a whole number from 1 to 1000");
  EXPECT_EQ(describe({.min = 100, .max = 3'600'000, .whole = true, .unit = "milliseconds"}),
            "milliseconds, a whole number from 100 to 3600000");
  EXPECT_EQ(describe({.min = 2, .max = 1e6, .unit = "seconds"}), "seconds, from 2 to 1000000");
  EXPECT_EQ(describe({.min = 0.5, .max = 1e300}), "a number from 0.5 to 1e+300");
}

TEST(Duration, MoreThanZeroAndAtMostWhatEveryClockHoldsInNanoseconds) {
  EXPECT_EQ(describe(kDurationRange), "seconds, more than 0 and at most 1000000000");
  EXPECT_EQ(why("0", kDurationRange, "--duration"),
            "--duration 0: out of range; expected seconds, more than 0 and at most 1000000000 (leave the flag out to "
            "run until the end or Ctrl-C)");
  EXPECT_EQ(why("1e10", kDurationRange, "--duration").substr(0, 28), "--duration 1e10: out of rang");
  EXPECT_EQ(why("1e9", kDurationRange, "--duration"), "ok");
  EXPECT_FALSE(duration_of(0));  // not given
  EXPECT_EQ(duration_of(1.5), std::chrono::milliseconds(1500));
  // The longest duration in nanoseconds, far from the overflow of a 64-bit count (9.2e18).
  EXPECT_EQ(duration_of(kMaxDurationSeconds)->count(), 1'000'000'000'000'000'000);
  EXPECT_EQ(duration_of(1e12), duration_of(kMaxDurationSeconds));  // never more
}

TEST(ParseSpan, ANumberAndAUnitToNanoseconds) {
  EXPECT_EQ(*parse_span("--since", "90s", 1e9), 90'000'000'000LL);
  EXPECT_EQ(*parse_span("--since", "7d", 1e9), 7LL * 86400 * 1'000'000'000);
  EXPECT_EQ(*parse_span("--since", "2w", 1e9), 14LL * 86400 * 1'000'000'000);
  for (const char* bad : {"", "7", "d", "7x", "1.5h", "0h", "-1d", "99999999999w"}) {
    auto r = parse_span("--since", bad, 1e9);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().kind(), ErrorKind::kUsage) << bad;
    EXPECT_NE(r.error().message().find("--since"), std::string::npos) << bad;
  }
}

TEST(ParseInstant, UnixSecondsOrRfc3339) {
  EXPECT_EQ(*parse_instant("--until", "1764547200"), 1764547200.0);
  EXPECT_EQ(*parse_instant("--until", "1764547200.5"), 1764547200.5);
  EXPECT_EQ(*parse_instant("--until", "2025-12-01T00:00:00Z"), 1764547200.0);
  EXPECT_EQ(*parse_instant("--until", "2025-12-01 00:00:00z"), 1764547200.0);
  EXPECT_EQ(*parse_instant("--until", "2025-12-01T01:30:00.25+01:30"), 1764547200.25);
  EXPECT_EQ(*parse_instant("--until", "2025-11-30T19:00:00-05:00"), 1764547200.0);
  EXPECT_EQ(*parse_instant("--until", "1970-01-01T00:00:00Z"), 0.0);
  EXPECT_EQ(*parse_instant("--until", "2024-02-29T12:00:00Z"), 1709208000.0);  // a leap day
  for (const char* bad : {"", "now", "-1", "1e12", "2025-12-01", "2025-12-01T00:00:00", "2025-02-29T00:00:00Z",
                          "2025-12-01T24:00:00Z", "2025-12-01T00:00:00.Z", "2025-12-01T00:00:00+0100",
                          "2025-13-01T00:00:00Z", "2025-12-01T00:00:00Zx", "1969-12-31T23:59:59Z"}) {
    auto r = parse_instant("--until", bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().kind(), ErrorKind::kUsage) << bad;
    EXPECT_NE(r.error().message().find("--until"), std::string::npos) << bad;
  }
}

}  // namespace
}  // namespace gpudoc::core
