// gpudoc::telemetry input — any telemetry file gpudoc understands, detected by its first line: a
// gpudoc trace (JSON Lines, docs/trace-format.md) or an nvidia-smi CSV log; and the line reader
// both are read through, which holds one line at a time, never the whole file.
//
//   auto t = telemetry::read_telemetry_file("nvidia-smi.csv");   // Result<Trace>
//   auto d = telemetry::read_telemetry_file("run.jsonl", {.metrics = only_these});
//
//   auto lines = telemetry::LineReader::open("run.jsonl");       // Result<LineReader>
//   while (auto line = lines->next()) { if (!*line) break; ... **line ... }
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/file.hpp"
#include "core/result.hpp"
#include "telemetry/trace.hpp"

namespace gpudoc::telemetry {

// The most gpudoc reads of one input: far above any recording (8 GPUs for 30 days at the
// native rates is about 100 GB), small enough that a file that never ends is stopped.
inline constexpr std::uint64_t kMaxInputBytes = 1ULL << 40;  // 1 TiB
inline constexpr core::InputLimits kTelemetryInput{
    .max_bytes = kMaxInputBytes, .max_line_bytes = kMaxLineBytes, .what = "a telemetry file"};

// A telemetry file (or text held in memory) as lines: core::LineReader (core/file.hpp) under
// kTelemetryInput — lines of at most kMaxLineBytes, files of at most kMaxInputBytes, each an
// error naming the file and line ("NAME line N: the line is longer than the limit of 1048576
// bytes"), so /dev/zero or a runaway file ends at once instead of being read forever.
class LineReader : public core::LineReader {
 public:
  // Errors: kIo "reading PATH: <reason>" (missing, unreadable, a directory).
  [[nodiscard]] static core::Result<LineReader> open(const std::string& path);
  // Lines of `text` (not copied: it must outlive the reader); `name` names it in messages.
  [[nodiscard]] static LineReader of_text(std::string_view text, std::string name);

 private:
  explicit LineReader(core::LineReader&& lines) : core::LineReader(std::move(lines)) {}
};

enum class InputFormat { kGpudocTrace, kNvidiaSmiCsv, kUnknown };

[[nodiscard]] InputFormat detect_format(std::string_view content);
// Errors: kIo (cannot read), kBadInput (neither format, or the format's own errors with file:line).
// `options` selects what is kept (see ReadOptions); the file is read as a stream.
[[nodiscard]] core::Result<Trace> read_telemetry_file(const std::string& path, const ReadOptions& options = {});

// Hands every record of a telemetry file to `visitor` as it is read, without building a Trace: a
// gpudoc trace in file order (not sorted: see TraceVisitor), an nvidia-smi CSV once imported
// (its rows are few next to a trace's, and the importer orders them). Returns the file's format.
// Errors: as read_telemetry_file.
[[nodiscard]] core::Result<InputFormat> visit_telemetry_file(const std::string& path, TraceVisitor& visitor);

}  // namespace gpudoc::telemetry
