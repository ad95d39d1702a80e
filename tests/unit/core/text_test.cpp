#include "core/text.hpp"

#include <gtest/gtest.h>

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

TEST(Text, FitAndTableCountColumnsNotBytes) {
  EXPECT_EQ(display_width("▁▂▃"), 3u);
  EXPECT_EQ(fit("▁▂▃", 5), "▁▂▃  ");
  EXPECT_EQ(fit("abcdef", 3), "abc");
  EXPECT_EQ(render_table({{"gpu", "util"}, {"0", "87%"}}), "gpu  util\n0    87%\n");
}

}  // namespace
}  // namespace gpudoc::core
