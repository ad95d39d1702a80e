// gpudoc::cost energy — the energy one GPU drew over a run, from NVML's total-energy counter
// (nvmlDeviceGetTotalEnergyConsumption: millijoules since the driver loaded) where it was read, and
// from the power readings where it was not (docs/methodology.md, "Cost accounting").
//
// Each pair of consecutive counter readings whose value did not go back gives the energy between
// them; a pair that reaches over the run's start or end counts in proportion to the power drawn
// inside the run (by time where the power is not known over the pair). A counter that goes back
// (the driver reloaded and it restarted from 0; a 64-bit count of millijoules does not wrap) breaks
// the pair, and that stretch, like the run's parts no pair covers, is the integral of the power
// readings. Time with neither is estimated at the run's mean power and said. A GPU that stopped
// answering (lost_at) has no energy measured after that; the result says until when it holds.
//
//   cost::EnergyInput in{.start = 0, .end = cost::micros(25.5)};
//   in.counter = {{cost::micros(0.01), 5'687'813}, {cost::micros(25.6), 17'421'346}};
//   in.power = cost::power_curve(t, watts, {.shift_s = 0.5});
//   cost::EnergyTotal e = cost::run_energy(in);     // e.total (mJ), e.method "counter", e.notes
//
// Pure: no I/O.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cost/account.hpp"

namespace gpudoc::cost {

struct CounterReading {
  Micros t = 0;
  Millijoules value = 0;
};

struct EnergyInput {
  Micros start = 0;
  Micros end = 0;
  std::vector<CounterReading> counter{};  // sorted by t
  std::vector<PowerPiece> power{};        // power_curve's
  std::optional<Micros> lost_at{};        // the GPU stopped answering here and did not come back
};

struct EnergyTotal {
  std::optional<Millijoules> total{};  // over [start, until); nullopt: nothing was read
  Micros until = 0;                    // end, or where the GPU stopped answering
  // "counter": the counter alone; "counter+power": the counter and the power readings where it
  // was not read; "power": the power readings alone; "none": not known. "+estimate" is appended
  // when some time had neither (estimated at the mean power).
  std::string method = "none";
  Micros by_counter = 0;         // time inside the run covered by counter pairs
  Micros by_power = 0;           // time covered by the power readings instead
  Micros estimated = 0;          // time with neither
  Millijoules counter_part = 0;  // of total: from the counter
  double power_joules = 0;       // the power readings' integral over the whole run (a cross-check)
  Micros power_known = 0;        // the time that integral covers
  std::vector<std::string> notes{};
};

[[nodiscard]] EnergyTotal run_energy(const EnergyInput& in);

// A stretch of time [from, to).
struct Span {
  Micros from = 0;
  Micros to = 0;
};

// The energy over some stretches of the run only (a profile's analysed steps, with the time between
// them left out), by run_energy's rules applied to each stretch: a counter pair reaching over a
// stretch's start or end counts in proportion (the counter interpolated there); time no pair covers
// (before the first reading, after the last, a counter that went back) from the power readings, else
// at the mean power of the rest, said. Stretches, in any order, are clipped to [start, end], sorted and merged where
// they overlap or touch; lost_at is not used. by_counter, by_power and estimated add up to their length.
[[nodiscard]] EnergyTotal energy_over(const EnergyInput& in, std::span<const Span> stretches);

// The power readings as a curve. NVML's power reading on Ampere (except GA100) and newer GPUs is
// the mean over the last second: each reading is placed `shift_s` (half that window) before it
// was taken. Consecutive readings at most `max_gap_s` apart are joined by a line; a reading with
// no neighbour that close on a side holds its value for `edge_hold_s` on that side; any other
// time is not known. Non-finite or negative readings are skipped; t must be sorted.
struct CurveOptions {
  double shift_s = 0;
  double max_gap_s = 0.6;
  double edge_hold_s = 0.05;
};
[[nodiscard]] std::vector<PowerPiece> power_curve(std::span<const double> t_s, std::span<const double> watts,
                                                  const CurveOptions& options);

// Busy steps from utilization-like samples (percent, each the busy share of the period before
// it): sample k covers (t[k] - p, t[k]] where p is the spacing to the previous sample, at most
// `max_gap_s` (the first sample: the median spacing). t must be sorted.
[[nodiscard]] std::vector<BusyStep> busy_steps(std::span<const double> t_s, std::span<const double> percent,
                                               double max_gap_s);

}  // namespace gpudoc::cost
