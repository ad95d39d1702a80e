#include "bench/formulas.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace gpudoc::bench {

const char* to_string(GemmType type) noexcept {
  switch (type) {
    case GemmType::kFp32: return "fp32";
    case GemmType::kTf32: return "tf32";
    case GemmType::kFp16: return "fp16";
    case GemmType::kBf16: return "bf16";
    case GemmType::kFp8E4m3: return "fp8";
  }
  return "?";
}

std::size_t gemm_input_bytes(GemmType type) noexcept {
  switch (type) {
    case GemmType::kFp32:
    case GemmType::kTf32: return 4;
    case GemmType::kFp16:
    case GemmType::kBf16: return 2;
    case GemmType::kFp8E4m3: return 1;
  }
  return 0;
}

std::size_t gemm_output_bytes(GemmType type) noexcept {
  switch (type) {
    case GemmType::kFp32:
    case GemmType::kTf32: return 4;
    case GemmType::kFp16:
    case GemmType::kBf16:
    case GemmType::kFp8E4m3: return 2;  // fp8 writes bf16
  }
  return 0;
}

double gemm_flops(std::uint64_t m, std::uint64_t n, std::uint64_t k) noexcept {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
}

double gemm_tflops(std::uint64_t m, std::uint64_t n, std::uint64_t k, double seconds) noexcept {
  if (!(seconds > 0)) return 0;
  return gemm_flops(m, n, k) / seconds / 1e12;
}

int ops_per_sample(double seconds_each, double target_seconds, int max_ops) noexcept {
  if (!(seconds_each > 0) || !(target_seconds > 0)) return 1;
  const double n = std::ceil(target_seconds / seconds_each);
  if (n < 1) return 1;
  if (n > max_ops) return max_ops < 1 ? 1 : max_ops;
  return static_cast<int>(n);
}

std::vector<int> gemm_finalists(const std::vector<double>& probe_seconds, const std::vector<int>& always, int max_count,
                                double margin) {
  const auto ran = [&](int i) {
    return i >= 0 && static_cast<std::size_t>(i) < probe_seconds.size() &&
           probe_seconds[static_cast<std::size_t>(i)] > 0;
  };
  std::vector<int> order;
  for (std::size_t i = 0; i < probe_seconds.size(); ++i)
    if (ran(static_cast<int>(i))) order.push_back(static_cast<int>(i));
  if (order.empty()) return {};
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return probe_seconds[static_cast<std::size_t>(a)] < probe_seconds[static_cast<std::size_t>(b)];
  });
  const double limit = probe_seconds[static_cast<std::size_t>(order.front())] * (1.0 + (margin > 0 ? margin : 0));
  std::vector<int> out;
  for (int i : order) {
    if (static_cast<int>(out.size()) >= max_count || probe_seconds[static_cast<std::size_t>(i)] > limit) break;
    out.push_back(i);
  }
  for (int i : always)
    if (ran(i) && std::find(out.begin(), out.end(), i) == out.end()) out.push_back(i);
  return out;
}

float bf16_to_float(std::uint16_t bits) noexcept {
  const std::uint32_t w = static_cast<std::uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &w, sizeof f);
  return f;
}

float fp16_to_float(std::uint16_t bits) noexcept {
  const bool negative = (bits & 0x8000u) != 0;
  const int exponent = (bits >> 10) & 0x1F;
  const int mantissa = bits & 0x3FF;
  float v;
  if (exponent == 0)
    v = std::ldexp(static_cast<float>(mantissa), -24);  // subnormal: m / 2^10 * 2^-14
  else if (exponent == 31)
    v = mantissa == 0 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
  else
    v = std::ldexp(static_cast<float>(1024 + mantissa), exponent - 25);  // (1 + m/2^10) * 2^(e-15)
  return negative ? -v : v;
}

float fp8_e4m3_to_float(std::uint8_t bits) noexcept {
  const bool negative = (bits & 0x80u) != 0;
  const int exponent = (bits >> 3) & 0xF;
  const int mantissa = bits & 0x7;
  float v;
  if (exponent == 15 && mantissa == 7)
    v = std::numeric_limits<float>::quiet_NaN();
  else if (exponent == 0)
    v = std::ldexp(static_cast<float>(mantissa), -9);  // subnormal: m / 8 * 2^-6
  else
    v = std::ldexp(static_cast<float>(8 + mantissa), exponent - 10);  // (1 + m/8) * 2^(e-7)
  return negative ? -v : v;
}

GemmTolerance gemm_tolerance(GemmType type) noexcept {
  constexpr double kFp32Ulp = 1.0 / (1 << 23);
  switch (type) {
    case GemmType::kFp32: return {0, 4e-6, kFp32Ulp};
    case GemmType::kTf32: return {2.0 / (1 << 10), 1e-4, kFp32Ulp};
    case GemmType::kFp16: return {0, 1e-4, 1.0 / (1 << 10)};
    case GemmType::kBf16: return {0, 1e-4, 1.0 / (1 << 7)};
    case GemmType::kFp8E4m3: return {0, 1e-3, 1.0 / (1 << 7)};
  }
  return {};
}

double gemm_error_bound(GemmType type, double sum_abs, double reference) noexcept {
  const GemmTolerance t = gemm_tolerance(type);
  return (t.input_rel + t.accumulate_rel) * std::fabs(sum_abs) + t.output_rel * std::fabs(reference) + 1e-6;
}

const char* to_string(PcieDirection direction) noexcept {
  switch (direction) {
    case PcieDirection::kHostToDevice: return "h2d";
    case PcieDirection::kDeviceToHost: return "d2h";
    case PcieDirection::kBidirectional: return "bidir";
  }
  return "?";
}

std::uint64_t pcie_bytes_per_sample(PcieDirection direction, std::uint64_t bytes, int transfers) noexcept {
  if (transfers < 1) return 0;
  const std::uint64_t one_way = bytes * static_cast<std::uint64_t>(transfers);
  return direction == PcieDirection::kBidirectional ? 2 * one_way : one_way;
}

double gigabytes_per_second(std::uint64_t bytes, double seconds) noexcept {
  if (!(seconds > 0)) return 0;
  return static_cast<double>(bytes) / seconds / 1e9;
}

}  // namespace gpudoc::bench
