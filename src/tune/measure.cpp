#include "tune/measure.hpp"

#include <cmath>

#include "core/numeric.hpp"

namespace gpudoc::tune {

namespace {

std::vector<double> flat(const Groups& g) {
  std::vector<double> out;
  for (const auto& t : g) out.insert(out.end(), t.begin(), t.end());
  return out;
}

std::size_t trials_with_samples(const Groups& g) {
  std::size_t n = 0;
  for (const auto& t : g) n += t.empty() ? 0 : 1;
  return n;
}

double trial_noise_percent(const Groups& g) {
  std::vector<double> medians;
  for (const auto& t : g)
    if (!t.empty()) medians.push_back(core::median(t));
  const double m = core::median(medians);
  if (medians.size() < 2 || m == 0) return 0;
  return baseline::standard_deviation(medians) / std::fabs(m) * 100.0;
}

baseline::Config gate_config(const Rules& rules) {
  baseline::Config cfg;
  // The interval carries the measured noise of both arms; the gate's k x noise bound would count
  // the spread of single steps against a change of medians twice.
  cfg.noise_k = 0;
  cfg.alpha = rules.alpha;
  cfg.source = "gpudoc tune";
  cfg.metrics.push_back({.pattern = "work",
                         .direction = baseline::Direction::kLowerIsBetter,
                         .threshold_percent = rules.min_gain_percent,
                         .min_change = std::nullopt,
                         .gate = true});
  return cfg;
}

}  // namespace

Groups pooled(const Groups& a, const Groups& b) {
  Groups out(a);
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

Judgement judge(const Groups& control, const Groups& candidate, const Rules& rules) {
  Judgement j;
  const std::vector<double> c = flat(control), x = flat(candidate);
  j.control_trials = trials_with_samples(control);
  j.candidate_trials = trials_with_samples(candidate);
  j.control_samples = c.size();
  j.candidate_samples = x.size();
  j.control_median = core::median(c);
  j.candidate_median = core::median(x);
  j.control_trial_noise_percent = trial_noise_percent(control);
  j.control_sample_noise_percent = baseline::noise_percent(c);
  if (c.empty() || x.empty()) return j;
  if (j.candidate_median != 0) j.speedup_percent = (j.control_median / j.candidate_median - 1.0) * 100.0;
  // change of the unchanged job's median against the candidate's, in % of the candidate's: the speed-up
  j.interval = baseline::change_interval(candidate, control, rules.level);
  const baseline::Figure golden{
      .name = "work", .unit = "", .source = "workload", .direction = baseline::Direction::kLowerIsBetter, .samples = x};
  const baseline::Figure now{
      .name = "work", .unit = "", .source = "workload", .direction = baseline::Direction::kLowerIsBetter, .samples = c};
  const baseline::Comparison cmp = baseline::compare({golden}, {now}, gate_config(rules));
  if (!cmp.figures.empty()) j.comparison = cmp.figures.front();
  j.faster = j.comparison.verdict == baseline::Verdict::kRegression;
  j.slower = j.comparison.verdict == baseline::Verdict::kImproved;
  return j;
}

baseline::FigureComparison confirm(const Judgement& first, const Judgement& second) {
  baseline::Comparison a, b;
  a.figures = {first.comparison};
  b.figures = {second.comparison};
  return baseline::confirm(a, b).figures.front();
}

}  // namespace gpudoc::tune
