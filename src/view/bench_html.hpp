// gpudoc::view::render_bench_html — `gpudoc bench --html FILE` (after a run, or `--from RUN.json`
// for a saved `bench --json`): one self-contained page that opens offline. The results table (CV
// above 2 % marked), then per benchmark a plot of its samples in the order measured, with the
// median (a level shift or a drift shows at a glance where the CV only says "spread"), the host's
// CPU time per launch beside the launch figures where the run recorded it, the nccl.* bus- and
// algorithm-bandwidth curves over message size, and the p2p.* per-pair matrices as tables.
// Plots with uPlot, embedded as in diagnose --html. Pure: the caller reads or runs the report.
//
//   auto page = view::render_bench_html(bench::to_json(report));   // Result<std::string>
//   auto saved = view::render_saved_bench_html(*core::read_file("run.json"), "run.json");
//
// Tolerant of a hand-edited report: entries without the expected fields are shown as far as they
// go, never a crash. Everything taken from the report is escaped for HTML, and the embedded data
// is JSON with <, >, & escaped.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "view/web_assets.hpp"

namespace gpudoc::view {

// Errors: kBadInput when `report` is not an object with a "results" array (the shape `bench --json`
// prints); kEnvironment when this build has no web assets.
[[nodiscard]] core::Result<std::string> render_bench_html(const nlohmann::json& report);
// The same with the given assets (tests).
[[nodiscard]] core::Result<std::string> render_bench_html(const nlohmann::json& report, const WebAssets& assets);

// `gpudoc bench --from RUN.json --html FILE`: the page of a saved `bench --json` output (`text`,
// read from the file `name`), and how many results it holds. Errors: kBadInput naming `name` when
// it is not JSON or not a bench report; kEnvironment when this build has no web assets.
struct SavedBenchPage {
  std::string page;
  std::size_t results = 0;
};
[[nodiscard]] core::Result<SavedBenchPage> render_saved_bench_html(const std::string& text, const std::string& name);

}  // namespace gpudoc::view
