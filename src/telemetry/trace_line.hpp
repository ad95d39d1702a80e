// gpudoc::telemetry::detail — the fast path of the trace reader, exposed only for its tests and
// its fuzz target (not part of the telemetry API; include telemetry/trace.hpp instead).
//
// Nearly every line of a trace is a flat object of ASCII keys and scalar values ("sample" and
// "process" lines). A general JSON parser spends most of its time building a tree for them; this
// one only splits the line into key/value views, without allocating (the caller reuses `out`).
//
//   std::vector<detail::FlatField> fields;
//   if (detail::parse_flat_line(line, fields) == detail::FlatParse::kOk) { ... fields[i].key ... }
//   else { /* hand the line to nlohmann::json, the reference for everything else */ }
//
// It is strict and deliberately narrow: anything it is not certain about — a nested value, an
// escape sequence or non-ASCII byte in a string, a repeated key, a syntax error — is answered
// kFallback, so it never accepts a line the reference parser rejects, and never reads a line
// differently (the fuzz target checks both against each other). No recursion, no exceptions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpudoc::telemetry {
struct TraceHeader;
}

namespace gpudoc::telemetry::detail {

// The header line TraceWriter writes for `header` (without its '\n'); TraceBuilder reads it back so
// that a trace built in memory has the header a file would give. Throws what nlohmann::json
// throws for a header it cannot write.
[[nodiscard]] std::string header_line(const TraceHeader& header);

// A sample's time as the file's "t" holds it: nanoseconds since the trace's start to whole
// microseconds, rounded to nearest; nullopt outside what the reader accepts (-1 s to
// kMaxTraceSeconds). TraceWriter and TraceBuilder both use it, so a trace built in memory drops and
// rounds exactly the samples a file would.
[[nodiscard]] std::optional<std::int64_t> micros_since(std::int64_t time_unix_ns, std::int64_t start_unix_ns);
// Seconds since start (a summary's or an event's t) to whole microseconds, by the same bounds.
[[nodiscard]] std::optional<std::int64_t> micros_of_seconds(double t);

enum class FlatKind : std::uint8_t { kNumber, kString, kTrue, kFalse, kNull, kNested };

struct FlatValue {
  FlatKind kind = FlatKind::kNull;
  double number = 0;       // kNumber: the value, always finite
  bool exact_u64 = false;  // kNumber: the literal is a non-negative integer that fits below
  std::uint64_t u64 = 0;   //   ... exactly (byte counts above 2^53 stay exact)
  std::string_view text;   // kString: the string's content (the parser never needs to unescape)
};

struct FlatField {
  std::string_view key;
  FlatValue value;
};

enum class FlatParse : std::uint8_t { kOk, kFallback };

// Splits one line (without its '\n') into fields, in order. On kOk the views point into `line`.
// On kFallback `out` holds garbage. Thread-safe (no shared state).
[[nodiscard]] FlatParse parse_flat_line(std::string_view line, std::vector<FlatField>& out);

}  // namespace gpudoc::telemetry::detail
