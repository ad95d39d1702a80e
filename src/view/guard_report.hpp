// gpudoc::view guard report — the guard's stored decisions and actions (`gpudoc report --guard`)
// as a terminal table, one row per event, grouped by guard run; or as JSON.
//
//   auto rows = store::guard_results_since(store_flag, since_ns);
//   std::fputs(view::render_guard_events_text(*rows).c_str(), stdout);
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/results.hpp"

namespace gpudoc::view {

// One line of text for a stored guard event: "level 1 -> 2: gpu_temp_forecast 88.4 °C ...",
// "advice j1-3 to j1: shrink_batch 0.75", "ack j1-3: done, 41 ms from the sample". Peer text escaped.
[[nodiscard]] std::string guard_event_summary(const nlohmann::json& event);
// Runs (by subject) oldest first, each a table: UTC time, GPU, event, summary.
[[nodiscard]] std::string render_guard_events_text(const std::vector<store::StoredResult>& rows);
// {"runs": [{"run": ..., "host": ..., "events": [payload...]}]}
[[nodiscard]] nlohmann::json guard_events_json(const std::vector<store::StoredResult>& rows);

}  // namespace gpudoc::view
