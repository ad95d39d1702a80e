// gpudoc::core number input — the one checked reading of every number a person hands gpudoc on its
// command line: each duration, count and limit flag of every command (cli/common.hpp Command::number),
// and the numeric part of the flags that carry a unit (--period GROUP=MS, --since 7d). A value is a
// plain decimal number (2, 0.5, 1e3) that is finite and inside the flag's documented range, else a
// usage error (exit 2) that names the flag, the value as given and the range. docs/limits.md lists
// every flag's range.
//
//   constexpr core::NumberRange kTimeout{.min = 0, .max = 1e9, .above_min = true, .unit = "seconds"};
//   auto s = core::parse_number("--timeout", "inf", kTimeout);
//   // kUsage "--timeout inf: not a finite number; expected seconds, more than 0 and at most 1000000000"
#pragma once

#include <cstdint>

#include <optional>
#include <string>
#include <string_view>

#include "core/clock.hpp"
#include "core/result.hpp"

namespace gpudoc::core {

// What a flag accepts: [min, max], or (min, max] with above_min; whole numbers only with whole.
// Bounds of a whole range must be exact in a double (below 2^53), which every flag's are.
struct NumberRange {
  double min = 0;
  double max = 0;
  bool above_min = false;      // min itself is refused: a duration must be more than 0
  bool whole = false;          // a count, an index, milliseconds
  std::string_view unit = {};  // what the number counts, for the message ("seconds"); empty for a count
  std::string_view note = {};  // why, or what to do instead; added to the message in parentheses
};

// The durations a command takes (--duration; --timeout's and --since's bound). A duration is more
// than 0 s and at most kMaxDurationSeconds (31.7 years): any clock gpudoc runs on (the steady clock,
// a replay's at 1000x) holds it in nanoseconds without overflow; there is no "inf" or 0: leaving the
// flag out already means until the end or Ctrl-C.
inline constexpr double kMaxDurationSeconds = 1e9;
inline constexpr NumberRange kDurationRange{.min = 0,
                                            .max = kMaxDurationSeconds,
                                            .above_min = true,
                                            .unit = "seconds",
                                            .note = "leave the flag out to run until the end or Ctrl-C"};

// "seconds, more than 0 and at most 1000000000", "a whole number from 1 to 1000",
// "milliseconds, a whole number from 100 to 3600000" (no note).
[[nodiscard]] std::string describe(const NumberRange& range);

// Reads `number` (all of it one decimal number, as std::from_chars reads a double: no spaces, no
// sign but '-', no hex) and checks it against `range`. `flag` and `given` name the input in the
// message: "FLAG GIVEN: why; expected RANGE (note)"; `given` is `number` unless the number was cut
// out of a longer value (fast=100, 7d); an empty `flag` leaves the message starting at GIVEN.
// Errors: kUsage "not a number" (also "" and "1e"), "not a finite number" (inf, nan), "not a
// whole number", "out of range" (also a number too large or small for a double: 1e400).
[[nodiscard]] Result<double> parse_number(std::string_view flag, std::string_view number, const NumberRange& range,
                                          std::optional<std::string_view> given = std::nullopt);

// A duration's value (seconds, already checked against kDurationRange; 0: not given) as nanoseconds.
[[nodiscard]] std::optional<Nanos> duration_of(double seconds);

// A span of time as a number and a unit, "7d", "12h", "30m", "90s", "2w", to nanoseconds: a whole
// number of the unit, at least 1, and at most `max_seconds` in all, read by parse_number. Errors:
// kUsage naming `flag` and the value.
[[nodiscard]] Result<std::int64_t> parse_span(std::string_view flag, const std::string& text, double max_seconds);

// A moment as Unix seconds ("1764547200", "1764547200.5", read by parse_number, from 0 to
// kMaxInstantSeconds) or as RFC 3339 ("2026-12-01T00:00:00Z", "2026-12-01T01:00:00.250+01:00"; the
// date and the time with a 'T' or a space between, seconds' fraction optional, 'Z' or an offset
// required), to Unix seconds. Errors: kUsage naming `flag`, the value and both forms.
inline constexpr double kMaxInstantSeconds = 253402300799;  // 9999-12-31T23:59:59Z
[[nodiscard]] Result<double> parse_instant(std::string_view flag, const std::string& text);

}  // namespace gpudoc::core
