// gpudoc::view record text — what `gpudoc record` says about a recording: the line before it
// starts (how many GPUs, to which file, until when), and its summary at the end (a line for
// stderr, the document of --json). Pure: no I/O.
//
//   std::fputs(view::record_start_line(2, "run.jsonl", {"python3", "train.py"}, 0, false).c_str(), stderr);
//   auto r = telemetry::record(*live->backend, *live->clock, options, stop_requests());
//   std::fputs(view::record_summary_line(*r, "run.jsonl").c_str(), stderr);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "telemetry/backend_source.hpp"
#include "telemetry/recorder.hpp"

namespace gpudoc::view {

// "gpudoc: recording 2 GPUs to run.jsonl while `python3 train.py` runs" (or " for 30 s" when
// duration_s > 0, else " until Ctrl-C", or for a replay " until it ends or Ctrl-C"), with "\n".
[[nodiscard]] std::string record_start_line(int gpus, const std::string& output,
                                            const std::vector<std::string>& command, double duration_s, bool replay);

// The progress line a recording to a terminal redraws in place (no command: it has the terminal):
// "\rgpudoc: recording run.jsonl: 12 s, 3456 sample lines  (Ctrl-C stops)", without "\n". The file
// name is shown through core::terminal_safe.
[[nodiscard]] std::string record_progress_line(const std::string& output, double elapsed_s, std::uint64_t lines);

// "gpudoc: wrote run.jsonl: 12.3 s, 2 GPUs, 1234 sample lines, 0 dropped (command_exited). GPU 1
// was lost.", with "\n".
[[nodiscard]] std::string record_summary_line(const telemetry::RecordResult& r, const std::string& output);

// {"trace", "duration_s", "gpus", "sample_lines", "dropped_records", "end_reason", "backend",
//  "command_exit_code" (when a command ran)}.
[[nodiscard]] nlohmann::json record_json(const telemetry::RecordResult& r, const std::string& output,
                                         const telemetry::BackendSpec& backend);

}  // namespace gpudoc::view
