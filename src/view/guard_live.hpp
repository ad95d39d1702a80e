// gpudoc::view guard live — the line a person watching `gpudoc guard` sees on stderr for an event
// of the session (guard/session.hpp): level changes, advice, acks, signals, jobs joining and leaving.
//
//   if (auto line = view::guard_event_line(event)) print_text(stderr, "gpudoc guard: " + *line + "\n");
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace gpudoc::view {

// "GPU 0: level 1 -> 2: ...", "  advice j1-3 to j1: shrink_batch 0.75", "job j1 left (exited)";
// nullopt for an event a person need not see (samples, forecasts). Text from the job (its name,
// ids, reasons) is escaped by core::terminal_safe.
[[nodiscard]] std::optional<std::string> guard_event_line(const nlohmann::json& event);

}  // namespace gpudoc::view
