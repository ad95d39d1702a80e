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

}  // namespace
}  // namespace gpudoc::core
