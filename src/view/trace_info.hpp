// gpudoc::view trace info — the summary `gpudoc trace info` prints of a trace read as a stream
// (telemetry::TraceStats): the header's facts, per GPU and metric the samples, intervals against
// the recorded period, gaps and min/mean/max, the events by kind, and what the reader dropped.
//
//   auto stats = telemetry::trace_stats_of_file("run.jsonl");
//   std::fputs(view::render_trace_info("run.jsonl", *stats).c_str(), stdout);   // terminal-safe text
//   print_json(view::trace_info_json("run.jsonl", *stats));                    // exact strings
//
// Pure; thread-safe.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "telemetry/trace_stats.hpp"

namespace gpudoc::view {

// The summary as JSON (key order kept). Strings from the file are carried exactly.
[[nodiscard]] nlohmann::ordered_json trace_info_json(const std::string& path, const telemetry::TraceStats& stats);

// The summary as text for a terminal: text from the file (host, names, commands, event kinds, what
// was dropped) has its control characters made visible (core::terminal_safe).
[[nodiscard]] std::string render_trace_info(const std::string& path, const telemetry::TraceStats& stats);

}  // namespace gpudoc::view
