// gpudoc::serve accounting — the counters a fleet sums over any range: each GPU's time and energy
// observed by `gpudoc serve`, split into useful work, each cause of waste (a finding's id) and
// unexplained, with cost::account's rule (docs/methodology.md, "Cost accounting"), so that useful +
// every cause + unexplained == observed exactly on each GPU, in whole microseconds and millijoules.
//
// The sliding diagnosis looks at the last 120 s every 10 s: its windows overlap. Each diagnosis
// attributes only the newest part of its window that no earlier one attributed: per GPU, from where
// the previous attribution ended (or the window's first sample) to the GPU's newest busy reading.
// A finding's loss is taken at its rate over its own window: the part attributed gets the finding's
// loss times the share of the finding's window it covers. Time between two diagnoses further apart
// than the window (a stalled serve) is not observed. docs/serve-metrics.md, "GPU time and energy
// counters", says the same for the people reading the counters.
//
//   serve::Accounting acc;
//   acc.add_window(trace, findings, {{0, {{"namespace", "ml"}, {"pod", "train-0"}}}});  // each diagnosis
//   std::vector<serve::AccountSeries> s = acc.series();   // each scrape
//
// A series (a GPU with the labels of its holders at the time) that first appears shows 0 on its
// first scrape and its whole value from the next: Prometheus's increase() takes a series' first
// sample as its start, so a series born with a value would lose it. At most kMaxAccountSeries
// label sets are kept; beyond, the one updated longest ago is dropped (its counters end).
//
// Thread-safety: none; the service calls it under its own lock.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cost/account.hpp"
#include "findings/finding.hpp"
#include "serve/exposition.hpp"
#include "telemetry/trace.hpp"

namespace gpudoc::serve {

inline constexpr std::size_t kMaxAccountSeries = 4096;

using LabelPairs = std::vector<std::pair<std::string, std::string>>;

// The labels of the holders of one GPU at the time (attribution_labels, then the process ids every
// process on it shares: container_id, pod_uid, slurm_job_id).
[[nodiscard]] LabelPairs holder_labels(const GpuSnapshot& g);

class Accounting {
 public:
  // Attributes the newest, not yet attributed part of a diagnosed window. `trace` is the window
  // (History::window), `found` its diagnosis' findings (their gpus positions in trace.gpus),
  // `holders` the labels of each GPU by index at the time (a GPU absent: none).
  void add_window(const telemetry::Trace& trace, const std::vector<findings::Finding>& found,
                  const std::map<int, LabelPairs>& holders);
  // The counters, in a stable order (GPU, then labels); marks each series as shown.
  [[nodiscard]] std::vector<AccountSeries> series();
  // Where each GPU's attribution ends (Unix nanoseconds, whole microseconds), by GPU index.
  [[nodiscard]] const std::map<int, std::int64_t>& attributed_until() const { return until_ns_; }

 private:
  struct Totals {
    cost::Micros observed = 0, useful = 0, unexplained = 0;
    std::map<std::string, cost::Micros> lost{};
    bool energy_known = false;
    cost::Millijoules energy = 0, useful_energy = 0, unexplained_energy = 0;
    std::map<std::string, cost::Millijoules> lost_energy{};
    bool shown = false;  // scraped at least once
    bool energy_shown = false;
    std::set<std::string> lost_shown{};
    std::uint64_t last_add = 0;  // which add_window last added to it
  };
  using Key = std::pair<int, LabelPairs>;  // GPU index; gpu, uuid, name and the holders' labels
  void bound();

  std::map<int, std::int64_t> until_ns_;
  std::map<Key, Totals> totals_;
  std::uint64_t adds_ = 0;
};

}  // namespace gpudoc::serve
