// gpudoc::view::render_baseline_history_html — `gpudoc baseline history NAME --html FILE`: one
// self-contained page that opens offline. Per figure, a zoomable time chart (uPlot, embedded as in
// diagnose --html) of the figure's median in every run, with the baseline's value and the
// regression bound drawn as lines and each check's verdict marked; the same numbers as plain HTML
// tables (readable without JavaScript). Pure: the caller reads the store and fills the data.
//
//   view::BaselineHistory h{.name = "train", .runs = {...}, .figures = {...}};
//   auto page = view::render_baseline_history_html(h);   // Result<std::string>
//
// Everything taken from the input (baseline, figure and unit names, notes) is escaped for HTML,
// and the embedded data is JSON with <, >, & escaped, so no name can end a <script> element.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "view/web_assets.hpp"

namespace gpudoc::view {

struct BaselineHistoryRun {
  std::int64_t id = 0;
  std::int64_t time_unix_ns = 0;
  std::string role;     // "record", "check", "confirm"
  std::string verdict;  // the run's overall verdict ("ok", "regression", ...); "" for a record
  bool golden = false;  // the run the baseline compares against now
};

struct BaselineHistoryFigure {
  std::string name;
  std::string unit;                      // "ms", "GB/s", "By", "percent", "" when unknown
  std::string direction;                 // "lower", "higher", "unknown" (not gated)
  std::optional<double> baseline_value;  // the golden run's median; absent when it lacks the figure
  std::optional<double> bound_value;     // where a regression starts, in the figure's unit; absent: not gated
  double bound_percent = 0;              // max(threshold, noise_k x noise), of the baseline value
  std::string rule;                      // where the rule came from ("default: *_ms (time)")
  // Per run, aligned with BaselineHistory::runs: the run's median (absent when the run lacks
  // the figure) and, for checks, this figure's verdict ("ok", "improved", "regression",
  // "missing", "new", "info"; "" for records, confirmations and checks that did not judge it).
  std::vector<std::optional<double>> values;
  std::vector<std::string> verdicts;
};

struct BaselineHistory {
  std::string name;
  std::string kinds;                           // "hardware,probe,workload"
  std::string store;                           // the store file, for the reader
  std::string config;                          // where the bounds' rules came from
  std::vector<BaselineHistoryRun> runs;        // oldest first
  std::vector<BaselineHistoryFigure> figures;  // first-seen order
};

// Errors: kEnvironment when this build has no web assets (the message says how to install them).
[[nodiscard]] core::Result<std::string> render_baseline_history_html(const BaselineHistory& history);
// The same with the given assets (tests). Values that are not finite are drawn as gaps.
[[nodiscard]] std::string render_baseline_history_html(const BaselineHistory& history, const WebAssets& assets);

}  // namespace gpudoc::view
