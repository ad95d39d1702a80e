// gpudoc::diagnose classification (internal to the diagnose library) — the rules that name the
// pattern of one GPU over one span from its features, and the roles of GPUs in a pulse (some wait
// for a straggler). Thresholds: thresholds.hpp, each with its reason.
//
//   detail::Label l = detail::classify(f, signals);                 // kSawtooth, kHealthy, ...
//   detail::Activity a = detail::activity_of(f, l);                 // what a pulse needs of it
//   detail::PulseRoles r = detail::pulse_roles(activities);         // across the GPUs of one window
//
// Pure functions; thread-safe; never throw.
#pragma once

#include <vector>

#include "diagnose/signals.hpp"

namespace gpudoc::diagnose::detail {

enum class Label {
  kInsufficient,
  kIdle,
  kHealthy,
  kSawtooth,
  kSawtoothFast,
  kPlateauLaunch,
  kPlateauBusyIdle,
  kMemoryBound
};

// The catalog id a label reports as ("sawtooth" for both sawtooth labels, ...).
[[nodiscard]] const char* id_of(Label l);

// The pattern of one GPU over one span. Uses the signals' power floor (no-GPM inputs).
[[nodiscard]] Label classify(const Features& f, const Signals& s);

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

struct PulseRoles {
  std::vector<int> waiting;
  std::vector<int> stragglers;
  [[nodiscard]] bool found() const { return !waiting.empty() && !stragglers.empty(); }
};
// gpus[i]: GPU i over the same span. Busy GPUs that do little (busy-but-idle with GPM, a fraction
// of a busy peer's power without) wait; a GPU that works more, or is less busy, while they wait is
// the straggler. Empty roles when either side is missing.
[[nodiscard]] PulseRoles pulse_roles(const std::vector<Activity>& gpus);

}  // namespace gpudoc::diagnose::detail
