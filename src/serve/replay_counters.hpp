// gpudoc::serve replay counters — the fleet counters (accounting.hpp) a `gpudoc serve` would have
// exported for a recorded trace, scrape by scrape, offline: for backfilling a Prometheus
// (`promtool tsdb create-blocks-from openmetrics`) and for the fleet report's tests and figures
// (tools/fleet_week.py, docs/results/cost.md).
//
// Serve's own parts do the work: the trace's samples, processes and the events the sampler
// reports (xid, gpu_lost, gpu_unresponsive, gpu_recovered) are fed into a History as serve's
// sampling loop feeds it, each at its own time; the sliding diagnosis (diagnose_window) runs first
// once a fifth of the window is in (whole seconds, as serve counts them), then every `every_s`,
// each on History::window; each diagnosis is added to one Accounting with no holders (a replay's
// processes carry no cgroup ids, and no kubelet is asked); after each diagnosis comes one scrape,
// rendered by render_account_families. Scrapes go on past the trace's last sample until one
// equals the one before (the counters stand still, every series shown). Where it differs from a
// live replay: the samples are there at their own times (a live sampler gets the buffered
// utilization samples a read later), so the split between two scrapes may differ by that much;
// the totals do not.
//
//   serve::CounterReplayOptions o{.window_s = 120, .every_s = 60, .instance = "node-a"};
//   auto text = serve::replay_counters(trace, o);   // Result<std::string>, OpenMetrics, "# EOF"
//
// The text: each family once (its HELP, TYPE and UNIT as serve writes them), then each series'
// samples in time order with the scrape's time in Unix seconds ("name{labels} value 1764547224.000"),
// the `instance` label added to each series as a scrape adds it (escaped as every label value).
// Memory: every scrape's series until the text is written (scrapes x series); a trace that needs
// more than kMaxScrapeGpus scrapes x GPUs is refused before any is made (a day of 8 GPUs every 10 s
// is 69120).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "serve/exposition.hpp"
#include "telemetry/trace.hpp"

namespace gpudoc::serve {

inline constexpr double kMaxScrapeGpus = 1e6;

struct CounterReplayOptions {
  double window_s = 120;                 // serve's --diagnose-window: whole seconds, 2 to 3600
  double every_s = 10;                   // serve's --diagnose-every, and the scrape interval: whole seconds, 1 to 3600
  std::string instance{};                // the `instance` label a Prometheus scrape adds; empty: none
  std::optional<double> start_unix_s{};  // the trace's t = 0 in Unix seconds; absent: its header's start
};

// One scrape after a diagnosis: when (Unix seconds) and the counters as serve would expose them.
struct CounterScrape {
  double time_unix_s = 0;
  std::vector<AccountSeries> series{};
};

// Every scrape of a serve started with the trace (see above). Errors: kUsage for options out of
// range; kBadInput for a trace without GPUs or samples, or one that needs more than kMaxScrapeGpus.
[[nodiscard]] core::Result<std::vector<CounterScrape>> replay_counter_scrapes(const telemetry::Trace& trace,
                                                                              const CounterReplayOptions& options);

// The scrapes as OpenMetrics 1.0 text with timestamps (see above), ending with "# EOF".
[[nodiscard]] std::string counters_openmetrics(const std::vector<CounterScrape>& scrapes, const std::string& instance);

// Both: replay_counter_scrapes, then counters_openmetrics.
[[nodiscard]] core::Result<std::string> replay_counters(const telemetry::Trace& trace,
                                                        const CounterReplayOptions& options);

}  // namespace gpudoc::serve
