// telemetry/live_loop: a live view's sampler periods are the catalog's but for utilization, drained
// every 500 ms so the bars are not seconds behind.
#include "telemetry/live_loop.hpp"

#include <gtest/gtest.h>

namespace gpudoc::telemetry {
namespace {

TEST(LiveLoop, DefaultPeriodsDrainUtilizationEvery500Ms) {
  const auto view = LiveLoop::default_periods();
  const auto catalog = SamplerConfig::default_periods();
  const std::size_t util = gpu::index(gpu::MetricGroup::kUtilization);
  EXPECT_EQ(view[util], std::chrono::milliseconds(500));
  EXPECT_GT(catalog[util], view[util]);  // a recording drains it less often
  for (std::size_t g = 0; g < view.size(); ++g) {
    if (g != util) {
      EXPECT_EQ(view[g], catalog[g]) << "group " << g;
    }
  }
}

}  // namespace
}  // namespace gpudoc::telemetry
