// gpudoc::tune measure — is a change faster than the job without it? The gate's statistics
// (baseline/compare.hpp), not a second engine: the candidate's samples play the golden run and the
// unchanged job's the new run, so "the unchanged job is a regression against the change" is the
// gate's own verdict (the Mann-Whitney rank test beyond the minimum gain), and the gate's
// confirmation (baseline::confirm) says whether a second block of trials sees it again. The interval
// is baseline::change_interval's two-stage bootstrap over trials and their steps, so the noise between
// trials and within one is measured in it, not assumed. Pure: no I/O.
//
//   tune::Groups control = {{41.2, 40.9, ...}, {...}};   // one list per trial: time per unit of work
//   tune::Groups candidate = {{30.1, ...}, {...}};
//   tune::Judgement j = tune::judge(control, candidate, {});
//   j.speedup_percent;  j.interval->low_percent;  j.faster;
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "baseline/compare.hpp"

namespace gpudoc::tune {

// One arm's samples, a list per trial, each sample a time per unit of work (lower is better).
using Groups = std::vector<std::vector<double>>;

// The smallest speed-up gpudoc keeps a change for (docs/tune.md): below it a change is not worth a
// line in a launcher, whatever its interval says.
inline constexpr double kDefaultMinGainPercent = 3.0;

struct Rules {
  double min_gain_percent = kDefaultMinGainPercent;
  double alpha = baseline::kDefaultAlpha;  // the rank test's level
  double level = 0.95;                     // the interval's coverage
};

struct Judgement {
  // (median of the unchanged job / median with the change - 1) x 100 over the pooled samples: how
  // much more work per second the change gives (negative: it costs).
  double speedup_percent = 0;
  std::optional<baseline::ChangeInterval> interval{};  // of speedup_percent
  baseline::FigureComparison comparison{};             // the gate's, the candidate as its baseline
  bool faster = false;  // the gate's verdict: the unchanged job is a regression against the change
  bool slower = false;  // the other way round: the change costs
  std::size_t control_trials = 0, candidate_trials = 0, control_samples = 0, candidate_samples = 0;
  double control_median = 0, candidate_median = 0;
  // The unchanged job's noise: the spread of its trials' medians (standard deviation, % of their
  // median; 0 with fewer than 2 trials) and of its samples (robust, baseline::noise_percent).
  double control_trial_noise_percent = 0;
  double control_sample_noise_percent = 0;
};

[[nodiscard]] Judgement judge(const Groups& control, const Groups& candidate, const Rules& rules);

// The gate's confirmation of `first` by `second` (a later block of the same arms): faster only when
// both blocks say so (baseline::confirm). Returns the final comparison; `confirmed` is set when seen twice.
[[nodiscard]] baseline::FigureComparison confirm(const Judgement& first, const Judgement& second);

// Both blocks' trials of one arm together.
[[nodiscard]] Groups pooled(const Groups& a, const Groups& b);

}  // namespace gpudoc::tune
