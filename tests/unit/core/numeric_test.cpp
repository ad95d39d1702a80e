// core/numeric: the correlation of two series (NaN pairs skipped, too few pairs or no variance:
// none).
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
  EXPECT_FALSE(correlation(a, b, 9));  // only 8 complete pairs
  EXPECT_FALSE(correlation(a, std::vector<double>(9, 3.0), 2));  // no variance
}

}  // namespace
}  // namespace gpudoc::core
