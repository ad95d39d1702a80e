#include <charconv>
#include <cmath>
#include <string>

#include "slice/slice.hpp"

namespace gpudoc::slice {
namespace {

core::Error bad(std::string_view flag, std::string_view text, const std::string& why) {
  return core::Error(core::ErrorKind::kBadInput, std::string(flag) + " " + std::string(text) + ": " + why);
}

// The multiplier of a unit suffix; 0 when it is not one.
double unit_factor(std::string_view unit) {
  static constexpr struct {
    const char* name;
    double factor;
  } kUnits[] = {
      {"", 1},        {"B", 1},        {"K", 0x1p10}, {"KI", 0x1p10}, {"KIB", 0x1p10}, {"M", 0x1p20},
      {"MI", 0x1p20}, {"MIB", 0x1p20}, {"G", 0x1p30}, {"GI", 0x1p30}, {"GIB", 0x1p30}, {"T", 0x1p40},
      {"TI", 0x1p40}, {"TIB", 0x1p40}, {"KB", 1e3},   {"MB", 1e6},    {"GB", 1e9},     {"TB", 1e12},
  };
  std::string upper;
  for (char c : unit) upper += static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
  for (const auto& u : kUnits)
    if (upper == u.name) return u.factor;
  return 0;
}

}  // namespace

core::Result<std::uint64_t> parse_size(std::string_view text, std::string_view flag) {
  const char* begin = text.data();
  const char* end = begin + text.size();
  double number = 0;
  const auto [rest, ec] = std::from_chars(begin, end, number);
  if (ec != std::errc() || text.empty())
    return bad(flag, text, "not a size; write it like 40G, 512MiB, 8GB or a number of bytes");
  const double factor = unit_factor(std::string_view(rest, static_cast<std::size_t>(end - rest)));
  if (factor == 0)
    return bad(flag, text, "unknown unit; use K, M, G, T (1024-based, also KiB...) or KB, MB, GB, TB (1000-based)");
  const double bytes = std::floor(number * factor);
  if (!(bytes >= 1)) return bad(flag, text, "must be more than zero");
  if (bytes > 0x1p63) return bad(flag, text, "is larger than any GPU");
  return static_cast<std::uint64_t>(bytes);
}

core::Result<std::uint32_t> parse_percent(std::string_view text, std::string_view flag) {
  std::string_view digits = text;
  if (!digits.empty() && digits.back() == '%') digits.remove_suffix(1);
  double value = 0;
  const auto [rest, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || rest != digits.data() + digits.size() || digits.empty())
    return bad(flag, text, "not a percentage; write it like 30 or 30%");
  if (!(value >= 1 && value <= 100)) return bad(flag, text, "must be between 1 and 100 percent of the GPU");
  return static_cast<std::uint32_t>(std::lround(value));
}

core::Result<std::uint64_t> parse_rate(std::string_view text, std::string_view flag) {
  std::string_view size = text;
  if (size.size() > 2 && (size.substr(size.size() - 2) == "/s" || size.substr(size.size() - 2) == "/S"))
    size.remove_suffix(2);
  auto bytes = parse_size(size, flag);
  if (!bytes) return bad(flag, text, "not a rate; write it like 12G, 12GB/s or 800M/s");
  return *bytes;
}

}  // namespace gpudoc::slice
