#include "core/number_input.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
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

std::optional<Nanos> duration_of(double seconds) {
  if (!(seconds > 0)) return std::nullopt;
  return std::chrono::duration_cast<Nanos>(std::chrono::duration<double>(std::min(seconds, kMaxDurationSeconds)));
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

namespace {

// The digits text[at, at + n) as a number; nullopt unless all n are digits.
std::optional<int> digits(std::string_view text, std::size_t at, std::size_t n) {
  if (at + n > text.size()) return std::nullopt;
  int v = 0;
  for (std::size_t i = at; i < at + n; ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    v = v * 10 + (text[i] - '0');
  }
  return v;
}

// RFC 3339's date-time (section 5.6) to Unix seconds; nullopt when it is not one.
std::optional<double> rfc3339_seconds(std::string_view s) {
  const auto year = digits(s, 0, 4), month = digits(s, 5, 2), day = digits(s, 8, 2);
  const auto hour = digits(s, 11, 2), minute = digits(s, 14, 2), second = digits(s, 17, 2);
  if (!year || !month || !day || !hour || !minute || !second || s[4] != '-' || s[7] != '-' ||
      (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || s[13] != ':' || s[16] != ':')
    return std::nullopt;
  const std::chrono::year_month_day date{std::chrono::year(*year), std::chrono::month(static_cast<unsigned>(*month)),
                                         std::chrono::day(static_cast<unsigned>(*day))};
  if (!date.ok() || *hour > 23 || *minute > 59 || *second > 60) return std::nullopt;  // 60: a leap second
  std::size_t at = 19;
  double fraction = 0;
  if (at < s.size() && s[at] == '.') {
    double scale = 0.1;
    for (++at; at < s.size() && s[at] >= '0' && s[at] <= '9'; ++at, scale /= 10) fraction += (s[at] - '0') * scale;
    if (scale == 0.1) return std::nullopt;  // a '.' with no digit
  }
  int offset_s = 0;
  if (at + 1 == s.size() && (s[at] == 'Z' || s[at] == 'z')) {
    ++at;
  } else if (at + 6 == s.size() && (s[at] == '+' || s[at] == '-') && s[at + 3] == ':') {
    const auto oh = digits(s, at + 1, 2), om = digits(s, at + 4, 2);
    if (!oh || !om || *oh > 23 || *om > 59) return std::nullopt;
    offset_s = (s[at] == '+' ? 1 : -1) * (*oh * 3600 + *om * 60);
    at += 6;
  } else {
    return std::nullopt;  // no zone: RFC 3339 requires one
  }
  if (at != s.size()) return std::nullopt;
  const auto days = std::chrono::sys_days(date).time_since_epoch().count();
  return static_cast<double>(days) * 86400 + *hour * 3600 + *minute * 60 + *second - offset_s + fraction;
}

}  // namespace

Result<double> parse_instant(std::string_view flag, const std::string& text) {
  constexpr NumberRange kUnix{.min = 0, .max = kMaxInstantSeconds, .unit = "Unix seconds"};
  const bool number = !text.empty() && text.find_first_not_of("0123456789.eE+-") == std::string::npos;
  if (number) return parse_number(flag, text, kUnix);
  const auto at = rfc3339_seconds(text);
  if (!at || *at < 0 || *at > kMaxInstantSeconds)
    return Error(ErrorKind::kUsage, fmt::format("{} {}: expected Unix seconds (1764547200) or an RFC 3339 time "
                                                "(2026-12-01T00:00:00Z, 2026-12-01T01:00:00+01:00)",
                                                flag, shown(text)));
  return *at;
}

}  // namespace gpudoc::core
