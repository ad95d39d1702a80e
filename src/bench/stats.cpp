#include "bench/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/numeric.hpp"

namespace gpudoc::bench {

Stats summarize(std::span<const double> samples) {
  Stats s;
  s.count = samples.size();
  if (samples.empty()) return s;
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  s.min = sorted.front();
  s.max = sorted.back();
  s.median = core::median(sorted);
  s.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(n);
  double sq = 0;
  for (double v : sorted) sq += (v - s.mean) * (v - s.mean);
  const double stddev = std::sqrt(sq / static_cast<double>(n));
  s.cv = s.mean != 0 ? stddev / std::abs(s.mean) : 0;
  return s;
}

}  // namespace gpudoc::bench
