// gpudoc::view baseline report — the terminal tables and JSON of `gpudoc baseline`: what a record
// stored, a check's verdict (the figure table, the GPU state and findings of a failure), the list
// of baselines, one baseline's figures with their bounds, the history of a baseline with a trend
// line per figure, and the data of the history page (baseline_html.hpp). Pure: the caller runs
// the gate (baseline/gate.hpp) and reads the store.
//
//   auto out = baseline::check(plan, env, {});
//   std::fputs(view::render_check(plan, *out).c_str(), stdout);     // or print view::check_json(plan, *out)
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
#include "baseline/gate.hpp"
#include "cost/prices.hpp"
#include "store/baseline_runs.hpp"
#include "view/baseline_html.hpp"

namespace gpudoc::view {

// figure | baseline | now | change | bound | verdict | why
[[nodiscard]] std::string render_comparison(const baseline::Comparison& c);

// figure | median | samples | noise | better | bound | rule, under the config's rules.
// A golden run's figures (`runs`: its workload runs), each with its noise and bound as a check
// judges them (compare.hpp).
[[nodiscard]] std::string render_figures(const std::vector<baseline::Figure>& figures, const baseline::Config& cfg,
                                         int runs);
[[nodiscard]] nlohmann::json figures_json(const std::vector<baseline::Figure>& figures, const baseline::Config& cfg,
                                          int runs);

// The runs (oldest first, * marks the golden one) and a trend line per figure.
[[nodiscard]] std::string render_history(const store::BaselineInfo& info, const std::vector<store::StoredRun>& runs);
[[nodiscard]] nlohmann::json history_json(const store::BaselineInfo& info, const std::vector<store::StoredRun>& runs);

// The history page's data: per figure, the median of every run, its verdict in each check (from
// the comparison the check stored), and the golden run's value and bound under the current rules.
[[nodiscard]] BaselineHistory history_page(const store::BaselineInfo& info, const std::vector<store::StoredRun>& runs,
                                           const std::optional<store::StoredRun>& golden, const baseline::Config& cfg,
                                           const std::string& store_path);

// What `baseline record` stored (the figures, or where an interrupted run went); `store_path`
// names the store. With a workload run on GPUs, what it cost at `prices` (view/cost_view.hpp: the
// Cost block; "cost" in the JSON, cost::to_json).
[[nodiscard]] std::string render_recorded(const baseline::Recorded& r, const std::string& store_path,
                                          const baseline::Config& cfg, const cost::PriceBook& prices = {});
[[nodiscard]] nlohmann::json recorded_json(const baseline::Recorded& r, const std::string& store_path,
                                           const baseline::Config& cfg, const cost::PriceBook& prices = {});

// A record or check of baseline `name` stopped by signal `sig` before anything was measured: the
// line for stderr, and the --json document.
[[nodiscard]] std::string stopped_before_measuring_text(int sig);
[[nodiscard]] nlohmann::json stopped_before_measuring_json(const std::string& name, int sig);

// A stored check: the comparison table and its verdict; on a failure, the GPU state and findings;
// what the check's workload runs cost at `prices`, as render_recorded.
[[nodiscard]] std::string render_check(const baseline::CheckPlan& plan, const baseline::CheckOutcome& o,
                                       const cost::PriceBook& prices = {});
[[nodiscard]] nlohmann::json check_json(const baseline::CheckPlan& plan, const baseline::CheckOutcome& o,
                                        const cost::PriceBook& prices = {});

// name | kinds | recorded | golden | GPUs | runs | last check.
[[nodiscard]] std::string render_baseline_list(const baseline::BaselineList& list);
[[nodiscard]] nlohmann::json baseline_list_json(const baseline::BaselineList& list);

// One baseline: what it runs (`spec`, as stored), its machine, whether its golden run is whole,
// and the golden run's figures under the config's rules.
[[nodiscard]] std::string render_baseline(const store::BaselineInfo& info, const store::StoredRun& golden,
                                          const baseline::CollectSpec& spec, const baseline::Config& cfg);
[[nodiscard]] nlohmann::json baseline_json(const store::BaselineInfo& info, const store::StoredRun& golden,
                                           const baseline::Config& cfg);

}  // namespace gpudoc::view
