// gpudoc::tune plan — how the budget splits between the layers, decided before the first trial
// from the time one trial takes: every layer's first block (its reference and each change, the same
// number of trials each), one confirmation block per layer, and the tuned job against the
// unchanged one at the end. When that does not fit, fewer repetitions, then the changes least
// pointed to (docs/tune.md, "Budget") are dropped, each named with the reason. Pure.
//
//   tune::Plan p = tune::make_plan(picked.changes, /*trial_s=*/12, /*budget_left_s=*/540);
//   p.layers[0].planned_s;  p.dropped;  p.reserve_after(tune::Layer::kProcess);
#pragma once

#include <vector>

#include "tune/changes.hpp"

namespace gpudoc::tune {

struct PlannedLayer {
  Layer layer = Layer::kProcess;
  std::vector<Change> changes{};
  double planned_s = 0;
};

struct Plan {
  int repetitions = 0;          // trials of each arm in a layer's first block
  int confirm_repetitions = 0;  // trials of each arm in a confirmation block (the final check: one more)
  std::vector<PlannedLayer> layers{};
  std::vector<NotTried> dropped{};  // changes the budget has no room for
  double final_s = 0;               // kept for the final check (two or more knobs may be kept)
  double trial_s = 0;               // the estimate it was planned with
  // What a trial of `layer` must leave of the budget: the later layers' plans and the final check.
  [[nodiscard]] double reserve_after(Layer layer) const;
};

// The most and fewest repetitions of a first block (as many as the budget holds: more trials, a
// narrower interval), and those of a confirmation block.
inline constexpr int kRepetitions = 5;
inline constexpr int kMinRepetitions = 2;
inline constexpr int kConfirmRepetitions = 2;
// What a change's start-up (Change::start_extra_s: a compile) is expected to cost in the trials of
// its arm after the first, which filled its caches.
inline constexpr double kLaterStartShare = 0.25;

[[nodiscard]] Plan make_plan(const std::vector<Change>& changes, double trial_s, double budget_left_s);

}  // namespace gpudoc::tune
