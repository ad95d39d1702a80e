// gpudoc::view::render_diagnosis — a diagnosis as a readable terminal report: per GPU a header
// line and a small chart of its curves over the whole trace, then the findings most severe first
// (severity, id, GPUs, window, message, evidence, confidence, caveats, next steps), the pattern
// changes, what the reader dropped from the input and what the input could not show. Text from
// the input (host, GPU and process names, the command) is made terminal-safe
// (core::terminal_safe). Pure: no I/O; the caller decides on colour.
//
//   std::string text = view::render_diagnosis(trace, diagnosis, {.color = isatty(1) != 0});
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "diagnose/diagnose.hpp"
#include "telemetry/trace.hpp"

namespace gpudoc::view {

struct DiagnoseRenderOptions {
  bool color = false;      // ANSI colours (only for a terminal)
  std::size_t width = 80;  // columns; charts and headers fit in it
  std::string banner{};    // a line under the title, e.g. "REPLAY of a recorded trace, not this machine"
};

// The charts draw the trace's curves; the text comes from the diagnosis (findings are rendered,
// never rebuilt). A trace with no samples gets no chart.
[[nodiscard]] std::string render_diagnosis(const telemetry::Trace& trace, const diagnose::Diagnosis& diagnosis,
                                           const DiagnoseRenderOptions& options);

// GPU names as every view prints them: "GPU 3" (the GPU's index as recorded, for a position in
// the trace's GPU list), and "GPU 0, GPU 1" or "all GPUs" for a finding's list.
[[nodiscard]] std::string gpu_label(const telemetry::Trace& trace, int position);
[[nodiscard]] std::string gpus_label(const telemetry::Trace& trace, const std::vector<int>& positions);

// Evidence values as every view prints them: "8.10", "48.3", "1234", "1.5 GiB" for bytes.
[[nodiscard]] std::string format_evidence_value(double value, const std::string& unit);

// Bucket means of a series over [from_s, to_s) in `columns` buckets; empty buckets are absent.
[[nodiscard]] std::vector<std::optional<double>> bucket_means(const telemetry::Series& s, double from_s, double to_s,
                                                              std::size_t columns);

}  // namespace gpudoc::view
