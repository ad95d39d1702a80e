// gpudoc::cost job — what a job's GPU time and energy bought and what each cause of waste cost:
// every GPU of its run accounted (account.hpp) from a trace and its diagnosis, or from a profile;
// then priced (prices.hpp) and divided by the work it reported (telemetry/work.hpp). docs/cost.md shows the
// output; docs/methodology.md, "Cost accounting", defines every figure.
//
//   cost::JobCost job = cost::cost_of_trace(trace, diagnosis, {});
//   cost::Summary s = cost::summarize(job, prices);   // totals, the split, per finding, per unit
//   nlohmann::json j = cost::to_json(job, prices);    // the `cost` object of --json
//
// What a trace gives: the run is the recorded command's span (its process_start to its
// process_exit) or else the whole recording; every GPU of the trace (or those asked for); busy
// time from utilization (GPM SM activity without it); the energy from the counter and the power
// readings (energy.hpp); the claims from the findings that lost time (gpu_time_lost_s; a pulse's
// waiting GPUs each their own; an idle GPU its time not busy) and from the diagnosis' start-up and
// teardown (the time not busy before and after the analysed span). Findings that slow the work
// without stopping it (plateau, memory_bound, throttled, staircase, memory_growth) claim nothing:
// their time is in useful.
//
// Pure: no I/O.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "cost/account.hpp"
#include "cost/energy.hpp"
#include "cost/prices.hpp"
#include "diagnose/diagnose.hpp"
#include "profile/analysis.hpp"
#include "telemetry/trace.hpp"
#include "telemetry/work.hpp"

namespace gpudoc::cost {

inline constexpr int kStartupRank = 10;  // after every finding, where they overlap

struct GpuCost {
  int gpu = 0;  // position in the trace (the CUDA device for a profile)
  int run = 1;  // which run of the job (baseline's repeated runs)
  std::string name{};
  std::string busy_from{};   // the metric busy time was read from; empty: none
  double power_shift_s = 0;  // how far the power readings were moved back (their averaging window)
  GpuAccount account{};
  EnergyTotal energy{};
};

struct FindingCost {
  std::size_t index = 0;  // in the diagnosis' findings
  int run = 1;
  std::string id{};
  std::string severity{};
  std::vector<int> gpus{};
  double window_start_s = 0;
  double window_end_s = 0;
  Micros stated = 0;  // what it said was lost, within the run, summed over its GPUs
  Share lost{};       // what the account gave it, summed over its GPUs
  bool energy_known = false;
};

struct JobCost {
  std::string source{};  // the trace's name, "profile"
  std::string host{};
  double start_s = 0;  // the run (the first run's, with several)
  double end_s = 0;
  std::string span{};  // how the run was delimited, for people
  int runs = 1;
  std::vector<GpuCost> gpus{};
  std::vector<FindingCost> findings{};  // those that claimed time
  telemetry::Work work{};
  std::vector<std::string> notes{};
  // Another run of the same job (baseline --repeat): its GPUs and findings appended as run N + 1.
  void add_run(JobCost other);
};

struct TraceCostOptions {
  std::vector<int> gpus{};                   // positions to account; empty: every GPU
  std::optional<double> start_s{}, end_s{};  // the run; nullopt: run_span's
};

// The command's start to its exit when the trace recorded one (process_start, process_exit), else
// the whole recording (0 to its last time). `how` says which.
struct RunSpan {
  double start_s = 0;
  double end_s = 0;
  std::string how{};
};
[[nodiscard]] RunSpan run_span(const telemetry::Trace& trace);

[[nodiscard]] JobCost cost_of_trace(const telemetry::Trace& trace, const diagnose::Diagnosis& diagnosis,
                                    const TraceCostOptions& options);

// A profile's analysed steps on its one device: useful is the time a kernel, copy or memset ran;
// each idle cause of the profile (launch, sync, pageable_copy, allocation, host) a claim. The energy:
// the profiled device's NVML counter (read by gpudoc profile while the program ran) over the steps
// (energy_over), split over the parts in proportion to their time; not known without readings, said.
[[nodiscard]] JobCost cost_of_profile(const profile::Profile& p, std::string_view host);

// ---- priced ----

struct Line {
  std::string part{};  // "useful", "unexplained", a cause ("sawtooth", "startup"), "total"
  Micros time = 0;
  std::optional<Millijoules> energy{};  // nullopt when a GPU's energy is not known
  std::optional<double> money{};        // in the book's currency; nullopt without prices
  std::optional<double> co2_g{};
};

struct PerUnit {
  std::string unit{};  // "step", "sample", "token"
  double count = 0;
  double gpu_s = 0;
  std::optional<double> energy_j{};
  std::optional<double> money{};
  std::optional<double> co2_g{};
};

struct Summary {
  Line total{};
  std::vector<Line> parts;       // useful, each cause (largest first), unexplained
  std::vector<Line> findings{};  // one per JobCost::findings, same order; part: the finding's id
  std::vector<PerUnit> per_unit{};
  std::optional<std::string> currency{};
  std::optional<double> money_gpu_time{};  // total.money's two components
  std::optional<double> money_energy{};
  std::vector<std::string> unpriced{};  // what money and CO2 lack, as sentences
  std::string energy_method{};          // "counter", "counter+power", "power", "mixed", "none"
};

[[nodiscard]] Summary summarize(const JobCost& job, const PriceBook& book);

// The `cost` object of --json (docs/cost.md lists its fields).
[[nodiscard]] nlohmann::json to_json(const JobCost& job, const PriceBook& book);

}  // namespace gpudoc::cost
