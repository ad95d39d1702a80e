#include "core/number_input.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <map>

namespace gpudoc::core {
namespace {

// A bound as a person writes it: 1000000000, 0.5, 1e+300.
std::string bound(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  return fmt::format("{:g}", v);
}

// The value as given, fit for one line of a message: '' when empty, control bytes as '?', and at
// most 40 bytes of it.
std::string shown(std::string_view given) {
  if (given.empty()) return "''";
  constexpr std::size_t kMaxShown = 40;
  std::string out;
  for (char c : given.substr(0, kMaxShown)) out += static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? '?' : c;
  if (given.size() > kMaxShown) out += "...";
  return out;
}

}  // namespace

std::string describe(const NumberRange& range) {
  const std::string span = range.above_min
                               ? fmt::format("more than {} and at most {}", bound(range.min), bound(range.max))
                               : fmt::format("from {} to {}", bound(range.min), bound(range.max));
  if (range.unit.empty()) return fmt::format("{} {}", range.whole ? "a whole number" : "a number", span);
  return fmt::format("{}, {}{}", range.unit, range.whole ? "a whole number " : "", span);
}

Result<double> parse_number(std::string_view flag, std::string_view number, const NumberRange& range,
                            std::optional<std::string_view> given) {
  auto refuse = [&](std::string_view why) {
    return Error(ErrorKind::kUsage,
                 fmt::format("{}{}{}: {}; expected {}{}", flag, flag.empty() ? "" : " ", shown(given.value_or(number)),
                             why, describe(range), range.note.empty() ? "" : fmt::format(" ({})", range.note)));
  };
  double v = 0;
  const char* end = number.data() + number.size();
  const auto [p, ec] = std::from_chars(number.data(), end, v, std::chars_format::general);
  if (ec == std::errc::result_out_of_range && p == end) return refuse("out of range");
  if (number.empty() || ec != std::errc() || p != end) return refuse("not a number");
  if (!std::isfinite(v)) return refuse("not a finite number");
  if (range.whole && v != std::floor(v)) return refuse("not a whole number");
  if ((range.above_min ? !(v > range.min) : !(v >= range.min)) || !(v <= range.max)) return refuse("out of range");
  return v;
}

Result<std::int64_t> parse_span(std::string_view flag, const std::string& s, double max_seconds) {
  struct Unit {
    std::int64_t seconds;
    std::string_view name;
  };
  static const std::map<char, Unit> kUnits = {{'s', {1, "seconds"}},
                                              {'m', {60, "minutes"}},
                                              {'h', {3600, "hours"}},
                                              {'d', {86400, "days"}},
                                              {'w', {604800, "weeks"}}};
  const auto unit = s.empty() ? kUnits.end() : kUnits.find(s.back());
  if (unit == kUnits.end())
    return Error(ErrorKind::kUsage, fmt::format("{} {}: expected a number and s, m, h, d or w (e.g. 7d)", flag, s));
  const auto& [per, name] = unit->second;
  const NumberRange range{
      .min = 1, .max = std::floor(max_seconds / static_cast<double>(per)), .whole = true, .unit = name};
  auto n = parse_number(flag, std::string_view(s).substr(0, s.size() - 1), range, s);
  if (!n) return n.error();
  return static_cast<std::int64_t>(*n) * per * 1'000'000'000;
}

}  // namespace gpudoc::core
