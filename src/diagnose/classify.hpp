// gpudoc::diagnose classification (internal to the diagnose library) — the rules that name the
// pattern of one GPU over one span from its features, and the roles of GPUs in a pulse (some wait
// for a straggler). Thresholds: thresholds.hpp, each with its reason.
//
//   detail::Label l = detail::classify(f, signals);                 // kSawtooth, kHealthy, ...
//   detail::Activity a = detail::activity_of(f, l);                 // what a pulse needs of it
//   detail::PulseRoles r = detail::pulse_roles(bins, limits);       // across the GPUs, second by second
//
// Pure functions; thread-safe; never throw.
#pragma once

#include <cmath>
#include <span>
#include <vector>

#include "diagnose/signals.hpp"

namespace gpudoc::diagnose::detail {

enum class Label {
  kInsufficient,
  kIdle,
  kHealthy,
  kSawtooth,
  kSawtoothFast,
  kSawtoothCopies,  // waits on host<->device copies (GPM PCIe traffic)
  kPlateauLaunch,
  kPlateauBusyIdle,
  kMemoryBound,
  kBusyUnproven,  // busy, but nothing in the input can show whether the chip works or waits
  kMostlyBusy     // busy 70-85 % with the chip at work: saturated, or losing the rest in short gaps
};

// The catalog id a label reports as ("sawtooth" for both sawtooth labels, ...).
[[nodiscard]] const char* id_of(Label l);

// The pattern of one GPU over one span. Uses the signals' power floor (no-GPM inputs).
[[nodiscard]] Label classify(const Features& f, const Signals& s);

// Without GPM: whether a busy GPU's chip works, waits, or cannot be told, from its power against
// the board's limit or, without one, the trace's idle floor (th::kSaturatedFloorFactor).
enum class Saturation { kWorks, kWaits, kUnknown };
[[nodiscard]] Saturation saturation_without_gpm(const Features& f, const Signals& s);

// What the roles of a pulse and the pulse finding read of one GPU over one span: its label and a
// few of its features, small enough to keep for every window of every GPU of a long trace.
struct Activity {
  Label label = Label::kInsufficient;
  double t0 = 0, t1 = 0;
  std::size_t util_n = 0, sm_n = 0, power_n = 0;  // cells with data
  double util_mean = 0, sm_mean = 0, power_mean = 0;
  bool has_nvlink = false;
  double nvlink_tx_mean = 0;
};
[[nodiscard]] Activity activity_of(const Features& f, Label l);
// As busy_level() and has_gpm() on the features it came from.
[[nodiscard]] double busy_level(const Activity& a);
[[nodiscard]] bool has_gpm(const Activity& a);

// One GPU over one th::kPulseBinS bin: bin k covers cells [k * cells_per_bin(), (k + 1) *
// cells_per_bin()); means of the cells with data, NaN where none.
struct Bin {
  std::size_t k = 0;
  double util = NAN, sm = NAN, power = NAN;
};
// The bins of a GPU's signals that hold data, in order of k: memory follows the data, not the span.
[[nodiscard]] std::vector<Bin> bins_of(const Signals& s);
// Cells per bin (th::kPulseBinS on the th::kGridStepS grid).
[[nodiscard]] std::size_t cells_per_bin();

struct PulseRoles {
  std::vector<int> waiting;
  std::vector<double> waiting_share;  // per waiting GPU (same order): its bins spent waiting / its bins with data
  std::vector<int> stragglers;
  [[nodiscard]] bool found() const { return !waiting.empty() && !stragglers.empty(); }
};
// gpus[i]: GPU i's bins (in order of k) over the same span; power_limit_w[i] its board's limit (0:
// unknown). In each bin a busy GPU that does little waits (SM activity low for its util; without
// GPM, power far below its limit); a peer that at the same time is much less busy (its host is
// late) or works much more (it computes longer) is the straggler. A GPU waits for a straggler
// when that happens in th::kPulseMinBins bins and th::kPulseMinShare of the bins both have data.
// Empty roles when either side is missing.
[[nodiscard]] PulseRoles pulse_roles(const std::vector<std::span<const Bin>>& gpus,
                                     const std::vector<double>& power_limit_w);

}  // namespace gpudoc::diagnose::detail
