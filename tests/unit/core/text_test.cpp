#include "core/text.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

namespace gpudoc::core {
namespace {

TEST(Text, SparklineScalesAndShowsGaps) {
  std::vector<std::optional<double>> v = {0.0, 50.0, 100.0, std::nullopt, 200.0};
  EXPECT_EQ(sparkline(v, 0, 100), "▁▅█ █");
  std::vector<double> flat = {5, 5};
  EXPECT_EQ(sparkline(flat, 5, 5), "▁▁");
}

TEST(Text, SplitListDropsEmptyItems) {
  EXPECT_EQ(split_list("a,b,,c"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(split_list(",loader,"), (std::vector<std::string>{"loader"}));
  EXPECT_EQ(split_list("one"), (std::vector<std::string>{"one"}));
  EXPECT_TRUE(split_list("").empty());
  EXPECT_TRUE(split_list(",,").empty());
  EXPECT_EQ(split_list("x:y", ':'), (std::vector<std::string>{"x", "y"}));
}

TEST(Text, HumanUnits) {
  EXPECT_EQ(human_bytes(512), "512 B");
  EXPECT_EQ(human_bytes(1536), "1.5 KiB");
  EXPECT_EQ(human_bytes(143771.0 * 1024 * 1024), "140.4 GiB");
  EXPECT_EQ(human_duration(0.85), "850 ms");
  EXPECT_EQ(human_duration(3.25), "3.2 s");
  EXPECT_EQ(human_duration(3725), "1h 02m");
}

TEST(Text, ValuesWithUnitsAndUtcTimes) {
  EXPECT_EQ(value_with_unit(95.5449, "ms"), "95.54 ms");
  EXPECT_EQ(value_with_unit(71.61, "percent"), "71.61 %");
  EXPECT_EQ(value_with_unit(1004.0 * 1024 * 1024, "By"), "1004.0 MiB");
  EXPECT_EQ(value_with_unit(0.9451, "1"), "0.9451");
  EXPECT_EQ(value_with_unit(12345678, ""), "1.235e+07");
  EXPECT_EQ(value_with_unit(std::nullopt, "ms"), "—");
  EXPECT_EQ(value_with_unit(std::numeric_limits<double>::infinity(), "ms"), "—");
  EXPECT_EQ(utc_seconds_text(0), "1970-01-01 00:00:00Z");
  EXPECT_EQ(utc_seconds_text(1796007836'500'000'000), "2026-11-30 03:03:56Z");
}

TEST(Text, FitAndTableCountColumnsNotBytes) {
  EXPECT_EQ(display_width("▁▂▃"), 3u);
  EXPECT_EQ(fit("▁▂▃", 5), "▁▂▃  ");
  EXPECT_EQ(fit("abcdef", 3), "abc");
  EXPECT_EQ(render_table({{"gpu", "util"}, {"0", "87%"}}), "gpu  util\n0    87%\n");
}

TEST(Text, TerminalSafeEscapesWhatCouldDriveTheTerminal) {
  // OSC (retitle the window), CSI (clear the screen), a newline that would forge a line.
  EXPECT_EQ(terminal_safe("node\x1b]0;owned\x07"), "node\\x1b]0;owned\\x07");
  EXPECT_EQ(terminal_safe("gpu\x1b[2J\nERROR"), "gpu\\x1b[2J\\x0aERROR");
  EXPECT_EQ(terminal_safe(std::string("a\0b\tc\x7f", 6)), "a\\x00b\\x09c\\x7f");
  // C1 controls: the 8-bit CSI as a raw byte (not UTF-8) and encoded as U+009B.
  EXPECT_EQ(terminal_safe("x\x9b"
                          "31m"),
            "x\\x9b31m");
  EXPECT_EQ(terminal_safe("x\xc2\x9b"
                          "31m"),
            "x\\u{009b}31m");
  // Bidirectional overrides and line separators.
  EXPECT_EQ(terminal_safe("abc\xe2\x80\xae"
                          "def"),
            "abc\\u{202e}def");
  EXPECT_EQ(terminal_safe("a\xe2\x80\xa8"
                          "b"),
            "a\\u{2028}b");
  // Truncated and overlong sequences are bytes, not characters.
  EXPECT_EQ(terminal_safe("\xe2\x80"), "\\xe2\\x80");
  EXPECT_EQ(terminal_safe("\xc0\xaf"), "\\xc0\\xaf");
  // Everything else is kept as it is.
  EXPECT_EQ(terminal_safe("NVIDIA H200 · 87 °C ▁▂█ 日本"), "NVIDIA H200 · 87 °C ▁▂█ 日本");
  EXPECT_EQ(terminal_safe("C:\\path"), "C:\\path");
  EXPECT_EQ(terminal_safe(""), "");
}

TEST(Text, TerminalSafeKeepsNewlinesOnlyWhenAskedAndChangesNothingTwice) {
  const std::string hostile = "a\nb\x1b[2J\xc2\x9b\xff\r";
  EXPECT_EQ(terminal_safe(hostile), "a\\x0ab\\x1b[2J\\u{009b}\\xff\\x0d");
  EXPECT_EQ(terminal_safe(hostile, Newlines::kKeep), "a\nb\\x1b[2J\\u{009b}\\xff\\x0d");
  EXPECT_EQ(terminal_safe(terminal_safe(hostile)), terminal_safe(hostile));
  EXPECT_EQ(terminal_safe(terminal_safe(hostile, Newlines::kKeep), Newlines::kKeep),
            terminal_safe(hostile, Newlines::kKeep));
}

TEST(Text, RenderTableShowsEveryCellTerminalSafeAndKeepsItsColumns) {
  EXPECT_EQ(render_table({{"name", "gpu"}, {"tr\x1b]0;x\x07", "H200"}, {"ok", "H100"}}),
            "name            gpu\n"
            "tr\\x1b]0;x\\x07  H200\n"
            "ok              H100\n");
}

TEST(FirstClause, UpToTheFirstParenthesisSemicolonOrNewline) {
  EXPECT_EQ(first_clause("cannot load libnvidia-ml.so.1 (no such file); the driver is missing"),
            "cannot load libnvidia-ml.so.1");
  EXPECT_EQ(first_clause("no GPU; try fake:2"), "no GPU");
  EXPECT_EQ(first_clause("line one\nline two"), "line one");
  EXPECT_EQ(first_clause("(all in parentheses)"), "(all in parentheses)");
  EXPECT_EQ(first_clause(""), "");
}

}  // namespace
}  // namespace gpudoc::core
