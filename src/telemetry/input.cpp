#include "telemetry/input.hpp"

#include <fmt/format.h>

#include <string>
#include <utility>

#include "telemetry/import_nvidia_smi.hpp"

namespace gpudoc::telemetry {

// ---- LineReader -----------------------------------------------------------------------------

core::Result<LineReader> LineReader::open(const std::string& path) {
  auto lines = core::LineReader::open(path, kTelemetryInput);
  if (!lines) return lines.error();
  return LineReader(std::move(*lines));
}

LineReader LineReader::of_text(std::string_view text, std::string name) {
  return LineReader(core::LineReader::of_text(text, std::move(name), kTelemetryInput));
}

// ---- formats --------------------------------------------------------------------------------

InputFormat detect_format(std::string_view content) {
  std::string_view first = content.substr(0, content.find('\n'));
  if (first.substr(0, 3) == "\xEF\xBB\xBF") first.remove_prefix(3);  // a BOM from some editors
  std::size_t i = first.find_first_not_of(" \t\r");
  if (i != std::string_view::npos && first[i] == '{') return InputFormat::kGpudocTrace;
  if (looks_like_nvidia_smi_csv(first)) return InputFormat::kNvidiaSmiCsv;
  return InputFormat::kUnknown;
}

namespace {

core::Error neither_format(const std::string& path) {
  return core::Error(core::ErrorKind::kBadInput,
                     fmt::format("{} line 1: neither a gpudoc trace (a JSON header line) nor an nvidia-smi CSV log "
                                 "(a header such as \"timestamp, index, utilization.gpu [%], ...\")",
                                 path));
}

// Opens path and tells its format from line 1 (left to be read again by the parser).
core::Result<std::pair<LineReader, InputFormat>> open_detected(const std::string& path) {
  auto lines = LineReader::open(path);
  if (!lines) return lines.error();
  auto first = lines->next();
  if (!first) return first.error();
  const InputFormat format = detect_format(*first ? **first : std::string_view());
  if (*first) lines->unread();
  if (format == InputFormat::kUnknown) return neither_format(path);
  return std::pair<LineReader, InputFormat>(std::move(*lines), format);
}

}  // namespace

core::Result<Trace> read_telemetry_file(const std::string& path, const ReadOptions& options) {
  auto opened = open_detected(path);
  if (!opened) return opened.error();
  auto& [lines, format] = *opened;
  if (format == InputFormat::kNvidiaSmiCsv) return read_nvidia_smi_csv(lines, options);
  return read_trace_lines(lines, options);
}

core::Result<InputFormat> visit_telemetry_file(const std::string& path, TraceVisitor& visitor) {
  auto opened = open_detected(path);
  if (!opened) return opened.error();
  auto& [lines, format] = *opened;
  if (format == InputFormat::kNvidiaSmiCsv) {
    auto trace = read_nvidia_smi_csv(lines, ReadOptions{});
    if (!trace) return trace.error();
    visit_trace(*trace, visitor);
    return format;
  }
  if (auto st = visit_trace_lines(lines, visitor); !st) return st.error();
  return format;
}

}  // namespace gpudoc::telemetry
