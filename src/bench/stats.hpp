// gpudoc::bench stats — the summary every benchmark figure is reported with: median, min, max,
// mean and coefficient of variation of raw samples (which are kept beside the summary).
//
//   bench::Stats s = bench::summarize({4100.0, 4120.0, 4090.0});
//   s.median;  // 4100
//   s.cv;      // stddev / mean (population stddev), 0 for fewer than 2 samples
//
// Pure functions, thread-safe.
#pragma once

#include <span>

namespace gpudoc::bench {

struct Stats {
  double median = 0;  // middle sample; mean of the two middle samples for an even count
  double min = 0;
  double max = 0;
  double mean = 0;
  double cv = 0;  // population standard deviation / mean (a fraction, not %); 0 when mean is 0
  std::size_t count = 0;
};

// Summarizes `samples` (any order). An empty span gives all zeros and count 0.
[[nodiscard]] Stats summarize(std::span<const double> samples);

}  // namespace gpudoc::bench
