// gpudoc::baseline compare — the regression gate: a baseline's figures against a new run's,
// figure by figure. Pure logic, no I/O: tested on fixture figures (tests/unit/baseline).
//
//   std::vector<baseline::Figure> golden = ..., now = ...;
//   baseline::Comparison c = baseline::compare(golden, now, config);
//   if (c.failed()) { /* re-run, then */ c = baseline::confirm(c, baseline::compare(golden, rerun, config)); }
//
// The rule for one figure with a known direction (README "Baselines"; docs/methodology.md):
//   change % = (median_now - median_baseline) / |median_baseline| x 100, "worse" by its direction;
//   noise %  = the baseline's measured run-to-run noise: 1.4826 x MAD / |median| of its samples
//              (a robust standard deviation, in % of the median; 0 with fewer than 3 samples);
//   bound %  = max(threshold %, noise_k x noise %);
//   regression: worse by more than the bound AND, when both sides have >= 5 samples, a one-sided
//              Mann-Whitney U rank test says "now is worse" at level alpha. With fewer samples the
//              bound alone decides (the confirmation run then guards against a fluke).
//   improved: the same, in the better direction. Otherwise ok.
//   missing: the baseline has the figure and the new run does not (counts as a failure: a
//            workload that stopped reporting accuracy must not pass). new: only the new run has it.
//   A figure with no known direction is shown as "info" and never gates.
//
// A per-run figure — at most one value per workload run (gpudoc's wall_s, gpu_active_s, energy...;
// a workload figure reported once per run) — has no spread inside a run: its noise is the spread
// between runs, which one golden run cannot show. Its rule (CompareContext):
//   runs     = the golden run's values and those of earlier checks that judged it ok (the store's);
//   noise %  = their standard deviation / |golden median| x 100 (0 with fewer than 3 runs);
//   bound %  = max(threshold %, t(runs - 1, 0.99) x noise % x sqrt(1/golden runs + 1/runs now)):
//              a one-sided 99 % prediction bound for an unchanged run (Student's t);
//   fewer than kMinRunsForNoise runs: "not gated" (its noise is not known yet), said with how many
//   runs are still needed. Each check that passes adds a run, so the bound narrows as it learns.
//   A figure measured differently in the two runs (its definition changed) is "redefined": not
//   compared, the note says both definitions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "baseline/config.hpp"
#include "core/numeric.hpp"
#include "store/records.hpp"

namespace gpudoc::baseline {

// One measured quantity of a run, as the store keeps it (store/records.hpp).
using store::Figure;

using core::median;  // 0 for an empty vector (core/numeric.hpp)
// 1.4826 x MAD / |median| x 100; 0 with fewer than 3 samples or a zero median.
[[nodiscard]] double noise_percent(const std::vector<double>& samples);

// One-sided Mann-Whitney U test that `b` tends to be larger than `a` (ties share ranks): the
// p-value. Exact for small samples without ties (n_a x n_b <= 400), otherwise the normal
// approximation with tie and continuity correction. nullopt when either side is empty.
[[nodiscard]] std::optional<double> mann_whitney_greater_p(const std::vector<double>& a, const std::vector<double>& b);

inline constexpr std::size_t kMinSamplesForRankTest = 5;
// Runs of a per-run figure before its noise is known and it gates.
inline constexpr std::size_t kMinRunsForNoise = 3;

// The one-sided 0.99 quantile of Student's t with `df` degrees of freedom (df >= 1).
[[nodiscard]] double student_t_99(std::size_t df) noexcept;
// Sample standard deviation (n - 1); 0 with fewer than 2 values.
[[nodiscard]] double standard_deviation(const std::vector<double>& v);

// A percentile bootstrap interval of the change of the median from `a` to `b`, in % of a's
// median: (median b - median a) / |median a| x 100. Each side is a list of groups (one run's
// samples each); a resample draws as many groups as there are, with replacement, then inside each
// drawn group as many samples as it holds, with replacement, and pools them. So the spread between
// runs enters the interval as well as the spread inside one (with one sample per run it is the plain
// bootstrap over runs). `level`: the interval's coverage (0.95: the 2.5th and 97.5th percentiles).
// The generator starts from `rng_seed`, so the same samples give the same interval.
// nullopt when a side has no sample or a resampled median of `a` is 0.
struct ChangeInterval {
  double low_percent = 0;
  double high_percent = 0;
  double level = 0.95;
  std::size_t resamples = 0;
};
[[nodiscard]] std::optional<ChangeInterval> change_interval(const std::vector<std::vector<double>>& a,
                                                            const std::vector<std::vector<double>>& b,
                                                            double level = 0.95, std::size_t resamples = 2000,
                                                            std::uint64_t rng_seed = 1);

enum class Verdict { kOk, kImproved, kRegression, kMissing, kNew, kInfo, kUngated, kRedefined };
// "ok", "improved", "regression", "missing", "new", "info", "not gated", "redefined"
[[nodiscard]] const char* to_string(Verdict v) noexcept;
[[nodiscard]] bool is_failure(Verdict v) noexcept;  // regression or missing

struct FigureComparison {
  std::string name;
  std::string unit;
  std::string source;
  Rule rule;
  std::optional<double> baseline_median;
  std::optional<double> now_median;
  std::size_t baseline_samples = 0;
  std::size_t now_samples = 0;
  std::optional<double> change_percent;  // signed: now vs baseline
  double noise_percent = 0;              // of the baseline
  double bound_percent = 0;              // max(threshold, k x noise)
  bool per_run = false;                  // noise between runs (the rule above), not within one
  std::size_t noise_runs = 0;            // per-run: the runs its noise was measured on
  std::optional<double> p_value;         // the rank test's, when it ran
  Verdict verdict = Verdict::kOk;
  bool confirmed = false;  // a failure seen again in the confirmation run
  std::string note;        // why, in a few words
};

struct Comparison {
  std::vector<FigureComparison> figures;                           // baseline's order, then new figures
  [[nodiscard]] bool failed() const;                               // any regression or missing figure
  [[nodiscard]] std::vector<std::string> failing_sources() const;  // sources of failing figures
};

// What a comparison knows beyond the two runs' figures; the gate fills it from the store.
struct CompareContext {
  // Workload runs in the golden run (its repeat) and in this one; 0: not known, and every figure
  // is judged on its own samples (no per-run rule).
  int baseline_runs = 0;
  int now_runs = 0;
  // Earlier values of per-run figures by name: one per earlier check of this baseline that judged
  // the figure ok (or not gated), oldest first.
  std::map<std::string, std::vector<double>> earlier{};
  // What a figure measured, where its producer says (figure_definitions in collect.hpp).
  std::map<std::string, std::string> baseline_definitions{}, now_definitions{};
};

[[nodiscard]] Comparison compare(const std::vector<Figure>& baseline, const std::vector<Figure>& now,
                                 const Config& config, const CompareContext& context = {});

// The final verdict after a confirmation run: a figure stays a failure only if it failed in
// `first` and again in `rerun`; otherwise it takes the rerun's verdict with a note. Figures the
// rerun did not measure keep the first verdict.
[[nodiscard]] Comparison confirm(const Comparison& first, const Comparison& rerun);

[[nodiscard]] nlohmann::json to_json(const FigureComparison& f);
[[nodiscard]] nlohmann::json to_json(const Comparison& c);

// The machine a run happened on, as the store keeps it (store/records.hpp).
using store::machine_from_json;
using store::MachineContext;
using store::to_json;

// What differs between the baseline's machine and this one in GPU model, GPU count, driver or CUDA
// version (each a line "GPU model: NVIDIA H200 (baseline) vs NVIDIA H100 (now)"); empty when the
// runs are comparable. The host name may differ (a CI fleet).
[[nodiscard]] std::vector<std::string> machine_differences(const MachineContext& baseline, const MachineContext& now);

}  // namespace gpudoc::baseline
