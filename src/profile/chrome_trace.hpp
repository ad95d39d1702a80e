// gpudoc::profile Chrome trace — one process's records as a Chrome/Perfetto trace (the JSON Object
// Format of the Trace Event Format: {"traceEvents": [...]}), which ui.perfetto.dev and
// chrome://tracing open. Host API calls on one track per thread, GPU work on one track per stream,
// NVTX ranges on the thread that opened them, the traced windows of --sample on a row of their own;
// times in microseconds from the first record.
//
//   std::ofstream out(path);
//   profile::write_chrome_trace(set, out);
//   if (auto st = profile::save_chrome_trace(set, "trace.json"); !st) ...   // gpudoc profile -o
//
// Names (kernels demangled) are JSON strings, escaped by the JSON writer. Pure apart from `out`
// (and save_chrome_trace's file).
#pragma once

#include <ostream>
#include <string>

#include "core/result.hpp"
#include "profile/records.hpp"

namespace gpudoc::profile {

// Writes the trace; returns false when `out` failed.
bool write_chrome_trace(const RecordSet& set, std::ostream& out);

// write_chrome_trace into the file `path` (created or truncated), streamed: a long run's trace is
// never held in memory whole. Errors: kIo "writing the trace PATH".
[[nodiscard]] core::Status save_chrome_trace(const RecordSet& set, const std::string& path);

}  // namespace gpudoc::profile
