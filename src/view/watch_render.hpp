// gpudoc::view::render_watch — one frame of `gpudoc watch` as text, 80 columns wide, and the same
// frame as JSON. Pure functions of a telemetry::LiveState. The text frame shows names from the GPUs, the
// processes and replayed traces terminal-safe (core::terminal_safe); the JSON carries them exactly.
//
//   std::string frame = view::render_watch(state, {.title = "gpudoc watch — node7"});
//   std::string frame = view::watch_frame(state, live, header, /*json=*/false);  // what watch prints
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "telemetry/backend_source.hpp"
#include "telemetry/live_state.hpp"
#include "telemetry/trace.hpp"

namespace gpudoc::view {

struct WatchRenderOptions {
  std::string title;   // first line, left
  std::string banner;  // a line under the title, e.g. "REPLAY of run.jsonl — not live"
  std::string clock;   // first line, right (e.g. "12:03:04" or "t=12.3 s")
  std::size_t width = 80;
  std::size_t max_processes = 3;
};

[[nodiscard]] std::string render_watch(const telemetry::LiveState& state, const WatchRenderOptions& options);
// Latest values per GPU, absent when stale: {"gpus":[{"index":0,"name":...,"gpu_utilization_percent":87,...}]}
[[nodiscard]] nlohmann::json watch_json(const telemetry::LiveState& state);
// One frame of `gpudoc watch` for the run's backend: the text frame titled with the host, GPU count,
// driver and CUDA of `header`, its clock the wall's local time (a replay: its position in the trace);
// or with `json` the JSON line (with its "\n"), naming a replayed file or a backend that is not this
// machine's GPUs.
[[nodiscard]] std::string watch_frame(const telemetry::LiveState& state, const telemetry::Live& live,
                                      const telemetry::TraceHeader& header, bool json);
// What `gpudoc watch` says on stderr before a replay's first frame: "gpudoc: warning: W\n" for each
// of the trace's warnings (a line cut off, a record dropped), W terminal-safe; "" for live GPUs and a
// trace without any.
[[nodiscard]] std::string watch_start_warnings(const telemetry::Live& live);
// What `gpudoc watch` says on stderr when a view of GPUs that are not this machine's ends, so a
// screen left behind is not taken for a live one: "gpudoc: that was a replay of FILE, not a live
// GPU.\n" or "gpudoc: those were fake:2, not this machine's GPUs.\n"; "" for real GPUs and with
// `json` (the frames named the backend). Raw text: the caller prints it terminal-safe.
[[nodiscard]] std::string watch_end_note(const telemetry::Live& live, bool json);

}  // namespace gpudoc::view
