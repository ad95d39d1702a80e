// gpudoc::view health report — `gpudoc report`: the history of `gpudoc health` results kept in the
// store (clocks under load, temperatures, power, error counts, and every warning and failure) as
// terminal sparklines, JSON, or one self-contained HTML page with a zoomable plot per series (uPlot,
// embedded, opens offline). Pure: the caller reads the store.
//
//   auto rows = store::health_results_since(store_flag, since_ns);   // each stored health result
//   view::HealthHistory h = view::build_health_history(*rows);
//   std::fputs(view::render_health_history_text(h, "7d").c_str(), stdout);
//   auto page = view::render_health_history_html(h, "7d");   // Result<std::string>
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "store/results.hpp"

namespace gpudoc::view {

struct HealthHistory {
  std::vector<double> times_s;  // unix seconds, per run
  // gpu (-1: the node) -> series name -> value per run (NaN: absent)
  std::map<int, std::map<std::string, std::vector<double>>> series;
  std::vector<std::string> problems;  // "2026-11-30 12:00 GPU 0 ecc fail: ..."
};

// The plotted series: a value name in a check's "values" -> its label.
[[nodiscard]] const std::vector<std::pair<std::string, std::string>>& health_series_names();

// Stored `gpudoc health --json` documents (each row's payload, taken at its time), in time order.
// Payloads without "checks" or "values" add nothing; never throws on their shape.
[[nodiscard]] HealthHistory build_health_history(const std::vector<store::StoredResult>& runs);
// `since` is the --since text shown in the heading ("7d").
[[nodiscard]] std::string render_health_history_text(const HealthHistory& h, const std::string& since);
// Errors: kEnvironment when this build has no web assets.
[[nodiscard]] core::Result<std::string> render_health_history_html(const HealthHistory& h, const std::string& since);
// {"runs", "times_unix_s", "problems", "series": {"0"|"node": {name: [value|null]}}}
[[nodiscard]] nlohmann::json to_json(const HealthHistory& h);

}  // namespace gpudoc::view
