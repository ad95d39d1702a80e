#include "core/numeric.hpp"

#include <algorithm>
#include <cmath>

namespace gpudoc::core {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double hi = v[mid];
  if (v.size() % 2 == 1) return hi;
  const double lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lo + hi) / 2;
}

std::optional<double> correlation(std::span<const double> a, std::span<const double> b, std::size_t min_pairs) {
  const std::size_t n = std::min(a.size(), b.size());
  double sa = 0, sb = 0;
  std::size_t k = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) continue;
    sa += a[i];
    sb += b[i];
    ++k;
  }
  if (k < std::max<std::size_t>(min_pairs, 2)) return std::nullopt;
  const double ma = sa / static_cast<double>(k), mb = sb / static_cast<double>(k);
  double saa = 0, sbb = 0, sab = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) continue;
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
    sab += (a[i] - ma) * (b[i] - mb);
  }
  if (saa <= 1e-12 || sbb <= 1e-12) return std::nullopt;
  return sab / std::sqrt(saa * sbb);
}

}  // namespace gpudoc::core
