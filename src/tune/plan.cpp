#include "tune/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace gpudoc::tune {

namespace {

std::size_t knob_count(const std::vector<Change>& changes) {
  std::set<std::string> knobs;
  for (const auto& c : changes) knobs.insert(c.knob);
  return knobs.size();
}

// The planned layers of `changes` at `reps` repetitions, and the whole cost with the final check.
double cost_of(const std::vector<Change>& changes, int reps, double trial_s, Plan* out) {
  std::vector<PlannedLayer> layers;
  for (const auto& c : changes) {
    if (layers.empty() || layers.back().layer != c.layer) layers.push_back({.layer = c.layer, .changes = {}});
    layers.back().changes.push_back(c);
  }
  double total = 0;
  for (auto& l : layers) {
    // The changes' own start-up (a compile): whole in an arm's first trial, a quarter in its later
    // ones (the caches of the first; kLaterStartShare).
    double extra = 0, most = 0;
    for (const auto& c : l.changes) {
      extra += c.start_extra_s * (1 + (reps - 1) * kLaterStartShare);
      most = std::max(most, c.start_extra_s);
    }
    const double first = reps * static_cast<double>(l.changes.size() + 1) * trial_s + extra;
    const double confirmation = kConfirmRepetitions * (2.0 * trial_s + most * kLaterStartShare);
    l.planned_s = first + confirmation;
    total += l.planned_s;
  }
  const double final_s = knob_count(changes) >= 2 ? 2.0 * (kConfirmRepetitions + 1) * trial_s : 0;
  if (out != nullptr) {
    out->layers = std::move(layers);
    out->final_s = final_s;
    out->repetitions = reps;
    out->confirm_repetitions = kConfirmRepetitions;
  }
  return total + final_s;
}

}  // namespace

double Plan::reserve_after(Layer layer) const {
  double reserve = final_s;
  for (const auto& l : layers)
    if (l.layer > layer) reserve += l.planned_s;
  return reserve;
}

Plan make_plan(const std::vector<Change>& changes, double trial_s, double budget_left_s) {
  Plan p;
  p.trial_s = trial_s;
  for (int reps = kRepetitions; reps >= kMinRepetitions; --reps)
    if (cost_of(changes, reps, trial_s, nullptr) <= budget_left_s) {
      cost_of(changes, reps, trial_s, &p);
      return p;
    }
  // Drop the changes least pointed to, the last layer's first, until the rest fits.
  std::vector<Change> kept = changes;
  while (!kept.empty() && cost_of(kept, kMinRepetitions, trial_s, nullptr) > budget_left_s) {
    auto victim = kept.begin();  // the highest priority number, then the latest layer, then the last listed
    for (auto it = kept.begin(); it != kept.end(); ++it)
      if (std::pair(it->priority, static_cast<int>(it->layer)) >=
          std::pair(victim->priority, static_cast<int>(victim->layer)))
        victim = it;
    p.dropped.push_back(
        {victim->id, victim->layer,
         fmt::format("no room in the budget: a trial takes about {:.0f} s and {:.0f} s were left after the plain run "
                     "(--budget longer, or --steps fewer, tries it)",
                     trial_s, std::max(0.0, budget_left_s))});
    kept.erase(victim);
  }
  int reps = kRepetitions;  // as many repetitions as the changes left hold
  while (reps > kMinRepetitions && cost_of(kept, reps, trial_s, nullptr) > budget_left_s) --reps;
  cost_of(kept, reps, trial_s, &p);
  return p;
}

}  // namespace gpudoc::tune
