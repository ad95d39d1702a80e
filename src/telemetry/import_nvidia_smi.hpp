// gpudoc::telemetry nvidia-smi CSV import — turns the logs users already collect with
//
//   nvidia-smi --query-gpu=timestamp,index,power.draw,... --format=csv[,nounits] -lms 100
//
// into a Trace (the same columns the trace reader produces), so analysis and replay run on them.
// See docs/trace-format.md, "Importing nvidia-smi CSV", for what maps to what and what is lost.
//
//   if (telemetry::looks_like_nvidia_smi_csv(first_line))
//     auto t = telemetry::parse_nvidia_smi_csv(content, "log.csv");   // Result<Trace>
//   for (const auto& w : t->warnings) ...   // "log.csv: 2 rows skipped, their time went backwards ..."
#pragma once

#include <string_view>

#include "core/result.hpp"
#include "telemetry/input.hpp"
#include "telemetry/trace.hpp"

namespace gpudoc::telemetry {

// True when the line is an nvidia-smi CSV header naming at least one column this importer knows.
[[nodiscard]] bool looks_like_nvidia_smi_csv(std::string_view first_line);

// Parses a whole nvidia-smi CSV log held in memory. `name` is used in messages
// ("log.csv line 12: column 3 ("power.draw [W]"): "abc W" is not a number").
// Timestamps (the logging machine's local time) are read as UTC; header.extra says so.
// Errors: kBadInput naming name and line (no known column, no timestamp column, a wrong column
// count, a bad value, no data rows). A truncated last line (no newline, wrong column count) is
// skipped and noted in header.extra["import_notes"]; so are rows whose time goes backwards or
// lies more than kMaxTraceSeconds after the first row. Each also becomes a Trace::warnings entry
// naming the file and the lines. Strings taken from the input (GPU names, notes, messages) are
// valid UTF-8: invalid bytes become U+FFFD.
[[nodiscard]] core::Result<Trace> parse_nvidia_smi_csv(std::string_view content, std::string_view name);
// The same from a file's lines, read one at a time (read_telemetry_file); only options.metrics
// are kept (per-process samples: a CSV has none).
[[nodiscard]] core::Result<Trace> read_nvidia_smi_csv(LineReader& lines, const ReadOptions& options = {});

}  // namespace gpudoc::telemetry
