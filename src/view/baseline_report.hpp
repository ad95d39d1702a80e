// gpudoc::view baseline report — the terminal tables and JSON of `gpudoc baseline`: a baseline's
// figures with their bounds, a check's verdict table, the history of a baseline with a trend line
// per figure, and the data of the history page (baseline_html.hpp). Pure: the caller reads the
// store.
//
//   std::fputs(view::render_comparison(comparison).c_str(), stdout);
//   std::fputs(view::render_history(info, runs).c_str(), stdout);
//   auto page = view::render_baseline_history_html(view::history_page(info, runs, golden, cfg, path));
//
// Names come from workloads: they are shown as given (valid UTF-8 by the time they are stored).
// Linear in the number of figures and runs (a workload may report 100k names).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "baseline/compare.hpp"
#include "baseline/config.hpp"
#include "baseline/store.hpp"
#include "view/baseline_html.hpp"

namespace gpudoc::view {

// figure | baseline | now | change | bound | verdict | why
[[nodiscard]] std::string render_comparison(const baseline::Comparison& c);

// figure | median | samples | noise | better | bound | rule, under the config's rules.
[[nodiscard]] std::string render_figures(const std::vector<baseline::Figure>& figures, const baseline::Config& cfg);
[[nodiscard]] nlohmann::json figures_json(const std::vector<baseline::Figure>& figures, const baseline::Config& cfg);

// The runs (oldest first, * marks the golden one) and a trend line per figure.
[[nodiscard]] std::string render_history(const baseline::BaselineInfo& info,
                                         const std::vector<baseline::StoredRun>& runs);
[[nodiscard]] nlohmann::json history_json(const baseline::BaselineInfo& info,
                                          const std::vector<baseline::StoredRun>& runs);

// The history page's data: per figure, the median of every run, its verdict in each check (from
// the comparison the check stored), and the golden run's value and bound under the current rules.
[[nodiscard]] BaselineHistory history_page(const baseline::BaselineInfo& info,
                                           const std::vector<baseline::StoredRun>& runs,
                                           const std::optional<baseline::StoredRun>& golden,
                                           const baseline::Config& cfg, const std::string& store_path);

}  // namespace gpudoc::view
