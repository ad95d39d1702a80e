// core/numeric: the median of samples, and the correlation of two series (NaN pairs skipped, too few pairs or no
// variance: none).
#include "core/numeric.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace gpudoc::core {
namespace {

TEST(Correlation, SignAndMissingPairs) {
  const std::vector<double> a{0, 100, 0, 100, 0, 100, 0, 100, NAN};
  const std::vector<double> b{100, 0, 100, 0, 100, 0, 100, 0, 5};
  ASSERT_TRUE(correlation(a, b, 8));
  EXPECT_NEAR(*correlation(a, b, 8), -1.0, 1e-12);
  EXPECT_NEAR(*correlation(a, a, 8), 1.0, 1e-12);
  EXPECT_FALSE(correlation(a, b, 9));                            // only 8 complete pairs
  EXPECT_FALSE(correlation(a, std::vector<double>(9, 3.0), 2));  // no variance
}

}  // namespace
}  // namespace gpudoc::core

namespace gpudoc::core {
namespace {

TEST(Median, OddEvenAndEmpty) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median({7}), 7);
  EXPECT_DOUBLE_EQ(median({}), 0);
}

}  // namespace
}  // namespace gpudoc::core
