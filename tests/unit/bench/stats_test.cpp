#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "bench/stats.hpp"

namespace gpudoc::bench {
namespace {

TEST(BenchStats, OddCountMedianAndSpread) {
  const std::vector<double> v{5, 1, 3};
  const Stats s = summarize(v);
  EXPECT_EQ(s.count, 3u);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  // population stddev = sqrt((4 + 0 + 4) / 3)
  EXPECT_DOUBLE_EQ(s.cv, std::sqrt(8.0 / 3.0) / 3.0);
}

TEST(BenchStats, EvenCountMedianIsMeanOfMiddleTwo) {
  const std::vector<double> v{4, 2, 8, 6};
  const Stats s = summarize(v);
  EXPECT_DOUBLE_EQ(s.median, 5);
  EXPECT_DOUBLE_EQ(s.mean, 5);
  EXPECT_DOUBLE_EQ(s.cv, std::sqrt(5.0) / 5.0);  // deviations 1,9,9,1 -> variance 5
}

TEST(BenchStats, KnownTextbookSample) {
  const std::vector<double> v{2, 4, 4, 4, 5, 5, 7, 9};  // mean 5, population stddev 2
  const Stats s = summarize(v);
  EXPECT_DOUBLE_EQ(s.median, 4.5);
  EXPECT_DOUBLE_EQ(s.cv, 0.4);
}

TEST(BenchStats, ConstantSamplesHaveZeroCv) {
  const std::vector<double> v{4238, 4238, 4238};
  EXPECT_DOUBLE_EQ(summarize(v).cv, 0);
}

TEST(BenchStats, SingleAndEmpty) {
  const std::vector<double> one{7};
  const Stats s = summarize(one);
  EXPECT_DOUBLE_EQ(s.median, 7);
  EXPECT_DOUBLE_EQ(s.cv, 0);
  const Stats e = summarize(std::vector<double>{});
  EXPECT_EQ(e.count, 0u);
  EXPECT_DOUBLE_EQ(e.median, 0);
  EXPECT_DOUBLE_EQ(e.cv, 0);
}

}  // namespace
}  // namespace gpudoc::bench
