// gpudoc::profile Chrome trace — one process's records as a Chrome/Perfetto trace (the JSON Object
// Format of the Trace Event Format: {"traceEvents": [...]}), which ui.perfetto.dev and
// chrome://tracing open. Host API calls on one track per thread, GPU work on one track per stream,
// NVTX ranges on the thread that opened them, the traced windows of --sample on a row of their own;
// times in microseconds from the first record.
//
//   std::ofstream out(path);
//   profile::write_chrome_trace(set, out);
//
// Names (kernels demangled) are JSON strings, escaped by the JSON writer. Pure apart from `out`.
#pragma once

#include <ostream>

#include "profile/records.hpp"

namespace gpudoc::profile {

// Writes the trace; returns false when `out` failed.
bool write_chrome_trace(const RecordSet& set, std::ostream& out);

}  // namespace gpudoc::profile
