// gpudoc::view fleet html — `gpudoc report --fleet --html FILE`: the fleet report as one
// self-contained page a lead can forward (opens offline): the period's headline, the totals, the
// GPU time per step of the period (useful, lost, unexplained), the top causes of waste against the
// period before, the groups and the worst jobs, as tables and plots (web/report/fleet.js, with the
// embedded uPlot). The page's data is fleet::to_json's document, the one `--json` prints.
//
//   auto page = view::fleet_html(report);   // Result: kEnvironment without the embedded uPlot
//
// Every figure in a table is a cell <td data-figure="PATH" data-value="V">TEXT</td>: PATH is its
// place in the JSON document ("totals.gpu_hours", "causes.0.gpu_hours"), V the number exactly as
// there (shortest round trip), TEXT the same rounded for reading; the headless-browser test reads
// them back. Every string from Prometheus (node, namespace, pod, job names, warnings) is escaped.
// Pure: no I/O.
#pragma once

#include <string>

#include "core/result.hpp"
#include "fleet/report.hpp"

namespace gpudoc::view {

[[nodiscard]] core::Result<std::string> fleet_html(const fleet::FleetReport& r);

}  // namespace gpudoc::view
