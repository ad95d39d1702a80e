// gpudoc::fleet report — what a fleet's GPU time bought over a period, read from the counters
// `gpudoc serve` exports (docs/serve-metrics.md, "GPU time and energy counters") through
// Prometheus's HTTP API. Every figure is one PromQL query aggregated by the server (increase() over
// the period, sum by the grouping), so the work and the answer grow with the number of causes and
// groups, not with the fleet's GPUs or samples.
//
//   auto prom = fleet::Prometheus::open("http://prom:9090");
//   auto r = fleet::build_report(*prom, {.end_s = now, .since_s = 7 * 86400, .by = "namespace"});
//   std::string text = fleet::render_text(*r);   // or fleet::to_json(*r)
//
// What it handles and says: a counter reset (a serve restart: increase() adds across it; the number
// is given), a node whose series ended inside the period (named: its time up to then is counted),
// Prometheus's warnings (partial data), no gpudoc series at all. Money uses the prices each node's
// serve exposes (gpudoc_price_*: docs/cost.md), at their last value in the period; a GPU without a
// price adds no money, and the report says how much GPU time that was.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "fleet/prometheus.hpp"

namespace gpudoc::fleet {

struct ReportOptions {
  double end_s = 0;                  // the period's end, Unix seconds
  std::int64_t since_s = 7 * 86400;  // its length
  std::string by = "namespace";      // "node", "namespace", "pod", "job"
  std::size_t top = 10;              // causes and jobs listed
};

// Money by currency ("USD" -> 12.5).
using Money = std::map<std::string, double>;

struct Cause {
  std::string id{};  // a finding's id (docs/findings.md)
  double gpu_s = 0;
  double energy_j = 0;
  Money money{};
  double previous_gpu_s = 0;  // the period before
  std::string title{};        // the catalog's
  std::string next_step{};    // the catalog's first
};

struct Group {
  std::string key{};  // the label's value ("" for none), "namespace/pod" for pods
  double observed_s = 0;
  double useful_s = 0;
  double lost_s = 0;
  Money money_lost{};
};

struct Totals {
  double observed_s = 0;
  double useful_s = 0;
  double unexplained_s = 0;
  double lost_s = 0;  // every cause together
  double energy_j = 0;
  double lost_energy_j = 0;
  Money money{};          // the GPU time and energy observed, priced
  Money money_lost{};     // the causes' share of it
  double unpriced_s = 0;  // GPU time observed on GPUs without a GPU-hour price
};

// The period in equal steps (about 28 of them, whole minutes, at least one): each step's GPU time
// useful, lost to findings and unexplained, summed over the fleet (increase() over the step). The
// HTML page plots it.
struct Timeline {
  double step_s = 0;
  std::vector<double> end_s{};  // each step's end, Unix seconds
  std::vector<double> useful_s{};
  std::vector<double> lost_s{};
  std::vector<double> unexplained_s{};
};

struct FleetReport {
  std::string url{};
  double start_s = 0, end_s = 0;
  std::string by{};
  std::size_t gpus = 0;  // GPUs with a counter in the period
  std::vector<std::string> nodes{};
  Totals now{};
  Totals previous{};
  std::vector<Cause> causes{};          // the largest first, at most options.top
  std::vector<Group> groups{};          // by options.by, the most lost first
  std::vector<Group> worst_jobs{};      // pods and jobs, the most lost first, at most options.top
  std::vector<std::string> vanished{};  // nodes whose counters ended inside the period
  double resets = 0;                    // counter resets (serve restarts) in the period
  std::vector<std::string> warnings{};  // Prometheus's: partial data
  std::vector<std::string> notes{};
  Timeline timeline{};
};

// Errors: the first query's (Prometheus unreachable: kEnvironment; refused: kBadInput); a bad
// options.by is kUsage.
[[nodiscard]] core::Result<FleetReport> build_report(const Prometheus& prom, const ReportOptions& options);

[[nodiscard]] nlohmann::json to_json(const FleetReport& r);
[[nodiscard]] std::string render_text(const FleetReport& r);

}  // namespace gpudoc::fleet
