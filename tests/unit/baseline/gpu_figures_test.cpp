// When a job's GPUs did its steady work, from the utilization samples of its trace: start-up's GPU
// work and the previous job's last sample are left out.
#include "baseline/gpu_figures.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

namespace gpudoc::baseline {
namespace {

// 200 ms samples from 0 to `until` seconds, valued by `at`.
telemetry::Series samples(double until, const std::function<double(double)>& at) {
  telemetry::Series s;
  for (int k = 0; k * 0.2 <= until + 1e-9; ++k) {
    s.t.push_back(k * 0.2);
    s.v.push_back(at(k * 0.2));
  }
  return s;
}

TEST(SteadyBusySpan, StartUpWorkAndThePreviousJobsTailAreNotTheSteadyWork) {
  // The previous job's last sample at 0.0 s (60 %), idle imports, CUDA context and module loading
  // at 5-6 s (a few short blips), then 4 s of training at 40 %, then teardown.
  const telemetry::Series u = samples(14, [](double t) {
    if (t < 0.1) return 60.0;
    if (t > 5.0 && t < 5.5) return 8.0;
    if (t > 5.9 && t < 6.1) return 90.0;
    if (t >= 7.0 - 1e-9 && t <= 11.0 + 1e-9) return 40.0;
    return 0.0;
  });
  const auto span = steady_busy_span({&u}, 4.0);
  ASSERT_TRUE(span);
  EXPECT_NEAR(span->start, 6.8, 1e-9);  // the sample at 7.0 is the busy share of (6.8, 7.0]
  EXPECT_NEAR(span->end, 11.0, 1e-9);
  // Without knowing when the job's process appeared, the tail of the previous job is still not
  // steady work (one sample).
  const auto unbounded = steady_busy_span({&u}, -1e9);
  ASSERT_TRUE(unbounded);
  EXPECT_NEAR(unbounded->start, 6.8, 1e-9);
}

// Work that starts and ends inside a sample period: the edge samples read part of the level, and
// the span follows the work to a fraction of a sample, where whole samples would be off by up to
// two periods (8 % of a 5 s job).
TEST(SteadyBusySpan, EdgesAreReadToAFractionOfASample) {
  // Busy at 80 % from 2.05 s to 7.13 s: the sample at 2.2 s saw 0.15 of 0.2 s, the one at 7.2 s
  // saw 0.13 of 0.2 s.
  const telemetry::Series u = samples(10, [](double t) {
    const double from = std::max(t - 0.2, 2.05), to = std::min(t, 7.13);
    return to > from ? 80.0 * (to - from) / 0.2 : 0.0;
  });
  const auto span = steady_busy_span({&u}, 0);
  ASSERT_TRUE(span);
  EXPECT_NEAR(span->start, 2.05, 1e-6);
  EXPECT_NEAR(span->end, 7.13, 1e-6);
}

TEST(SteadyBusySpan, BurstsShorterThanThreeSamplesFallBackToTheBusySpan) {
  // 200 ms of work every second: never held for 3 samples.
  const telemetry::Series u = samples(10, [](double t) {
    const double phase = t - static_cast<int>(t + 1e-9);
    return t >= 2 - 1e-9 && t <= 8 + 1e-9 && phase < 0.1 ? 100.0 : 0.0;
  });
  const auto span = steady_busy_span({&u}, 0);
  ASSERT_TRUE(span);
  EXPECT_NEAR(span->start, 2.0, 1e-9);
  EXPECT_NEAR(span->end, 8.0, 1e-9);
}

TEST(SteadyBusySpan, NothingBusyIsNoSpanAndSeveralGpusAreUnited) {
  const telemetry::Series idle = samples(5, [](double) { return 0.0; });
  EXPECT_FALSE(steady_busy_span({&idle}, 0));
  const telemetry::Series a = samples(10, [](double t) { return t >= 2 - 1e-9 && t <= 6 + 1e-9 ? 90.0 : 0.0; });
  const telemetry::Series b = samples(10, [](double t) { return t >= 3 - 1e-9 && t <= 8 + 1e-9 ? 90.0 : 0.0; });
  const auto span = steady_busy_span({&a, &b, &idle}, 0);
  ASSERT_TRUE(span);
  EXPECT_NEAR(span->start, 1.8, 1e-9);
  EXPECT_NEAR(span->end, 8.0, 1e-9);
}

}  // namespace
}  // namespace gpudoc::baseline
