// gpudoc::diagnose classification (internal to the diagnose library) — the rules that name the
// pattern of one GPU over one span from its features, and the roles of GPUs in a pulse (some wait
// for a straggler). Thresholds: thresholds.hpp, each with its reason.
//
//   detail::Label l = detail::classify(f, signals);        // kSawtooth, kHealthy, ...
//   detail::PulseRoles r = detail::pulse_roles(fs, labels); // across the GPUs of one window
//
// Pure functions; thread-safe; never throw.
#pragma once

#include <vector>

#include "diagnose/signals.hpp"

namespace gpudoc::diagnose::detail {

enum class Label { kInsufficient, kIdle, kHealthy, kSawtooth, kSawtoothFast, kPlateauLaunch, kPlateauBusyIdle, kMemoryBound };

// The catalog id a label reports as ("sawtooth" for both sawtooth labels, ...).
[[nodiscard]] const char* id_of(Label l);

// The pattern of one GPU over one span. Uses the signals' power floor (no-GPM inputs).
[[nodiscard]] Label classify(const Features& f, const Signals& s);

struct PulseRoles {
  std::vector<int> waiting;
  std::vector<int> stragglers;
  [[nodiscard]] bool found() const { return !waiting.empty() && !stragglers.empty(); }
};
// fs[i], labels[i]: GPU i over the same span. Busy GPUs that do little (busy-but-idle with GPM, a
// fraction of a busy peer's power without) wait; a GPU that works more, or is less busy, while
// they wait is the straggler. Empty roles when either side is missing.
[[nodiscard]] PulseRoles pulse_roles(const std::vector<Features>& fs, const std::vector<Label>& labels);

}  // namespace gpudoc::diagnose::detail
