#include "baseline/compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <random>
#include <set>
#include <string_view>
#include <unordered_map>

namespace gpudoc::baseline {

double noise_percent(const std::vector<double>& samples) {
  if (samples.size() < 3) return 0;
  const double m = median(samples);
  if (m == 0) return 0;
  std::vector<double> dev;
  dev.reserve(samples.size());
  for (double s : samples) dev.push_back(std::fabs(s - m));
  return 1.4826 * median(dev) / std::fabs(m) * 100.0;
}

double student_t_99(std::size_t df) noexcept {
  // Exact to three decimals up to 30 degrees of freedom; beyond, the Cornish-Fisher expansion
  // around the normal quantile (2.457 at 30, 2.326 at infinity) is as close.
  static constexpr double kTable[] = {31.821, 6.965, 4.541, 3.747, 3.365, 3.143, 2.998, 2.896, 2.821, 2.764,
                                      2.718,  2.681, 2.650, 2.624, 2.602, 2.583, 2.567, 2.552, 2.539, 2.528,
                                      2.518,  2.508, 2.500, 2.492, 2.485, 2.479, 2.473, 2.467, 2.462, 2.457};
  if (df == 0) return HUGE_VAL;
  if (df <= std::size(kTable)) return kTable[df - 1];
  const double z = 2.326348, n = static_cast<double>(df);
  const double z3 = z * z * z, z5 = z3 * z * z;
  return z + (z3 + z) / (4 * n) + (5 * z5 + 16 * z3 + 3 * z) / (96 * n * n);
}

double standard_deviation(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  double mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / static_cast<double>(v.size() - 1));
}

std::optional<double> mann_whitney_greater_p(const std::vector<double>& a, const std::vector<double>& b) {
  const std::size_t m = a.size(), n = b.size();
  if (m == 0 || n == 0) return std::nullopt;
  // U = pairs where b beats a, ties count one half.
  double u = 0;
  for (double x : a)
    for (double y : b) u += y > x ? 1.0 : (y == x ? 0.5 : 0.0);

  std::vector<double> all(a);
  all.insert(all.end(), b.begin(), b.end());
  std::sort(all.begin(), all.end());
  double tie_term = 0;
  bool ties = false;
  for (std::size_t i = 0; i < all.size();) {
    std::size_t j = i;
    while (j < all.size() && all[j] == all[i]) ++j;
    const double t = static_cast<double>(j - i);
    if (t > 1) ties = true;
    tie_term += t * t * t - t;
    i = j;
  }

  if (!ties && m * n <= 400) {
    // Exact: f[i][j][u] = arrangements of i a's and j b's (sorted) with U = u. The largest element
    // is a b (beating all i a's: u - i) or an a (adding nothing).
    const std::size_t umax = m * n;
    std::vector<std::vector<std::vector<double>>> f(m + 1, std::vector<std::vector<double>>(n + 1));
    for (std::size_t i = 0; i <= m; ++i)
      for (std::size_t j = 0; j <= n; ++j) {
        f[i][j].assign(i * j + 1, 0.0);
        if (i == 0 || j == 0) {
          f[i][j][0] = 1;
          continue;
        }
        for (std::size_t uu = 0; uu <= i * j; ++uu) {
          double c = 0;
          if (uu >= i && uu - i <= i * (j - 1)) c += f[i][j - 1][uu - i];
          if (uu <= (i - 1) * j) c += f[i - 1][j][uu];
          f[i][j][uu] = c;
        }
      }
    double total = 0, tail = 0;
    const auto u_obs = static_cast<std::size_t>(std::llround(u));
    for (std::size_t uu = 0; uu <= umax; ++uu) {
      total += f[m][n][uu];
      if (uu >= u_obs) tail += f[m][n][uu];
    }
    return tail / total;
  }
  const double dm = static_cast<double>(m), dn = static_cast<double>(n), big_n = dm + dn;
  const double mean = dm * dn / 2;
  const double var = dm * dn / 12.0 * ((big_n + 1) - tie_term / (big_n * (big_n - 1)));
  if (var <= 0) return 1.0;  // every value equal: no evidence either way
  const double z = (u - mean - 0.5) / std::sqrt(var);
  return 0.5 * std::erfc(z / std::sqrt(2.0));
}

namespace {

// One two-stage resample of `groups` (change_interval), pooled into `out`.
void resample_groups(const std::vector<std::vector<double>>& groups, std::mt19937_64& rng, std::vector<double>& out) {
  out.clear();
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const auto& drawn = groups[rng() % groups.size()];
    for (std::size_t i = 0; i < drawn.size(); ++i) out.push_back(drawn[rng() % drawn.size()]);
  }
}

bool any_sample(const std::vector<std::vector<double>>& groups) {
  return std::any_of(groups.begin(), groups.end(), [](const auto& g) { return !g.empty(); });
}

}  // namespace

std::optional<ChangeInterval> change_interval(const std::vector<std::vector<double>>& a,
                                              const std::vector<std::vector<double>>& b, double level,
                                              std::size_t resamples, std::uint64_t rng_seed) {
  if (!any_sample(a) || !any_sample(b) || resamples == 0) return std::nullopt;
  auto non_empty = [](const std::vector<std::vector<double>>& groups) {
    std::vector<std::vector<double>> out;
    for (const auto& g : groups)
      if (!g.empty()) out.push_back(g);
    return out;
  };
  const auto ga = non_empty(a), gb = non_empty(b);
  std::mt19937_64 rng(rng_seed);
  std::vector<double> changes, pa, pb;
  changes.reserve(resamples);
  for (std::size_t r = 0; r < resamples; ++r) {
    resample_groups(ga, rng, pa);
    resample_groups(gb, rng, pb);
    const double ma = median(pa), mb = median(pb);
    if (ma == 0) return std::nullopt;
    changes.push_back((mb - ma) / std::fabs(ma) * 100.0);
  }
  std::sort(changes.begin(), changes.end());
  const double tail = (1.0 - std::clamp(level, 0.0, 1.0)) / 2.0;
  auto at = [&](double q) {
    const auto i = static_cast<std::size_t>(std::llround(q * static_cast<double>(changes.size() - 1)));
    return changes[std::min(i, changes.size() - 1)];
  };
  return ChangeInterval{
      .low_percent = at(tail), .high_percent = at(1.0 - tail), .level = level, .resamples = resamples};
}

const char* to_string(Verdict v) noexcept {
  switch (v) {
    case Verdict::kOk: return "ok";
    case Verdict::kImproved: return "improved";
    case Verdict::kRegression: return "regression";
    case Verdict::kMissing: return "missing";
    case Verdict::kNew: return "new";
    case Verdict::kInfo: return "info";
    case Verdict::kUngated: return "not gated";
    case Verdict::kRedefined: return "redefined";
  }
  return "?";
}

bool is_failure(Verdict v) noexcept { return v == Verdict::kRegression || v == Verdict::kMissing; }

bool Comparison::failed() const {
  return std::any_of(figures.begin(), figures.end(), [](const FigureComparison& f) { return is_failure(f.verdict); });
}

std::vector<std::string> Comparison::failing_sources() const {
  std::set<std::string> s;
  for (const auto& f : figures)
    if (is_failure(f.verdict)) s.insert(f.source);
  return {s.begin(), s.end()};
}

namespace {

// A per-run figure's noise, bound and (when it cannot gate yet) verdict: CompareContext's rule.
void per_run_noise(const Figure& base, const Figure& now, const CompareContext& ctx, FigureComparison& c) {
  c.per_run = true;
  std::vector<double> runs = base.samples;
  if (const auto it = ctx.earlier.find(base.name); it != ctx.earlier.end())
    runs.insert(runs.end(), it->second.begin(), it->second.end());
  c.noise_runs = runs.size();
  const double ref = std::fabs(*c.baseline_median);
  c.noise_percent = runs.size() >= kMinRunsForNoise && ref > 0 ? standard_deviation(runs) / ref * 100.0 : 0;
  const double spread = std::sqrt(1.0 / static_cast<double>(std::max<std::size_t>(1, base.samples.size())) +
                                  1.0 / static_cast<double>(std::max<std::size_t>(1, now.samples.size())));
  c.bound_percent = runs.size() >= kMinRunsForNoise
                        ? std::max(c.rule.threshold_percent, student_t_99(runs.size() - 1) * c.noise_percent * spread)
                        : c.rule.threshold_percent;
}

// Wall time adds start-up to the GPU's work; where the GPU's work is measured on its own, that is what gates.
constexpr const char* kWallNotGated =
    "not gated: the GPU's work is gated as gpu_active_s; wall time adds start-up, which moves with the host "
    "(\"gate\": true in the config gates it)";

FigureComparison judge(const Figure& base, const Figure& now, const Config& config, const CompareContext& ctx,
                       bool wall_not_gated) {
  FigureComparison c;
  c.name = base.name;
  c.unit = base.unit.empty() ? now.unit : base.unit;
  c.source = base.source;
  c.rule = config.rule_for(base.name, c.unit, base.direction ? base.direction : now.direction);
  if (wall_not_gated && c.name == "wall_s" && !c.rule.gate_from_config) {
    c.rule.gated = false;
    c.rule.why_not_gated = kWallNotGated;
  }
  c.baseline_samples = base.samples.size();
  c.now_samples = now.samples.size();
  c.baseline_median = median(base.samples);
  c.now_median = median(now.samples);
  const bool per_run = (base.source == "gpudoc" || base.source == "workload") && ctx.baseline_runs > 0 &&
                       ctx.now_runs > 0 && base.samples.size() <= static_cast<std::size_t>(ctx.baseline_runs) &&
                       now.samples.size() <= static_cast<std::size_t>(ctx.now_runs);
  if (per_run) {
    per_run_noise(base, now, ctx, c);
  } else {
    c.noise_percent = noise_percent(base.samples);
    c.bound_percent = std::max(c.rule.threshold_percent, config.noise_k * c.noise_percent);
  }
  const double b = *c.baseline_median, n = *c.now_median;
  if (b != 0) {
    c.change_percent = (n - b) / std::fabs(b) * 100.0;
  } else if (n != 0) {
    c.change_percent = n > 0 ? HUGE_VAL : -HUGE_VAL;  // from zero: any change is unbounded
  } else {
    c.change_percent = 0;
  }
  const auto bd = ctx.baseline_definitions.find(base.name), nd = ctx.now_definitions.find(base.name);
  if (bd != ctx.baseline_definitions.end() && nd != ctx.now_definitions.end() && bd->second != nd->second) {
    c.verdict = Verdict::kRedefined;
    c.note = fmt::format(
        "not compared: measured as \"{}\" in the baseline, as \"{}\" now (record the baseline "
        "again to gate it)",
        bd->second, nd->second);
    return c;
  }
  if (c.rule.direction == Direction::kUnknown) {
    c.verdict = Verdict::kInfo;
    c.note = "no direction known (set one in the config to gate it)";
    return c;
  }
  if (!c.rule.gated) {
    c.verdict = Verdict::kInfo;
    c.note = c.rule.why_not_gated;
    return c;
  }
  if (c.rule.min_change > 0 && std::fabs(n - b) <= c.rule.min_change) {
    c.verdict = Verdict::kOk;
    c.note = fmt::format("change below the figure's resolution ({:g} {})", c.rule.min_change, c.unit);
    return c;
  }
  if (c.per_run && c.noise_runs < kMinRunsForNoise) {
    const std::size_t need = kMinRunsForNoise - c.noise_runs;
    c.verdict = Verdict::kUngated;
    c.note = fmt::format(
        "not gated yet: one value per run, and its run-to-run noise needs {} runs ({} so far); "
        "{} more passing check{} or `baseline record --repeat {}` will measure it",
        kMinRunsForNoise, c.noise_runs, need, need == 1 ? "" : "s", kMinRunsForNoise);
    return c;
  }
  const bool lower_better = c.rule.direction == Direction::kLowerIsBetter;
  const double worse_by = lower_better ? *c.change_percent : -*c.change_percent;  // > 0: worse
  const bool beyond = std::fabs(worse_by) > c.bound_percent;
  const bool rank_test =
      !c.per_run && base.samples.size() >= kMinSamplesForRankTest && now.samples.size() >= kMinSamplesForRankTest;
  if (!beyond) {
    c.verdict = Verdict::kOk;
    c.note = c.bound_percent > c.rule.threshold_percent ? "within the measured noise" : "within the threshold";
    if (c.per_run)
      c.note += c.bound_percent > c.rule.threshold_percent
                    ? fmt::format(
                          " (noise between runs, from {} runs: a change under {:.1f} % cannot be told from "
                          "it in {} run{}; --repeat N narrows that by about the square root of N)",
                          c.noise_runs, c.bound_percent, now.samples.size(), now.samples.size() == 1 ? "" : "s")
                    : fmt::format(" (noise between runs, from {} runs)", c.noise_runs);
    return c;
  }
  const bool worse = worse_by > 0;
  if (rank_test) {
    // Worse = now tends larger (lower is better) or smaller (higher is better).
    const bool now_larger = worse == lower_better;
    c.p_value = now_larger ? mann_whitney_greater_p(base.samples, now.samples)
                           : mann_whitney_greater_p(now.samples, base.samples);
    if (c.p_value && *c.p_value > config.alpha) {
      c.verdict = Verdict::kOk;
      c.note = fmt::format("beyond the bound but not significant (rank test p={:.3f})", *c.p_value);
      return c;
    }
  }
  c.verdict = worse ? Verdict::kRegression : Verdict::kImproved;
  c.note = rank_test   ? fmt::format("beyond the bound, rank test p={:.3g}", c.p_value.value_or(1.0))
           : c.per_run ? fmt::format("beyond the 99 % bound for an unchanged run (noise between runs, from {} runs)",
                                     c.noise_runs)
                       : fmt::format("beyond the bound ({} samples: too few for a rank test)",
                                     std::min(base.samples.size(), now.samples.size()));
  return c;
}

}  // namespace

Comparison compare(const std::vector<Figure>& baseline, const std::vector<Figure>& now, const Config& config,
                   const CompareContext& context) {
  Comparison out;
  // By name, in O(1): a run may carry 100k figures. The first of a name wins, as a scan would.
  auto index_of = [](const std::vector<Figure>& v) {
    std::unordered_map<std::string_view, const Figure*> index;
    index.reserve(v.size());
    for (const auto& f : v) index.try_emplace(f.name, &f);
    return index;
  };
  const auto baseline_index = index_of(baseline), now_index = index_of(now);
  auto find = [](const auto& index, const std::string& name) -> const Figure* {
    const auto it = index.find(name);
    return it == index.end() ? nullptr : it->second;
  };
  const Figure* base_active = find(baseline_index, "gpu_active_s");
  const Figure* now_active = find(now_index, "gpu_active_s");
  const bool wall_not_gated =
      base_active != nullptr && now_active != nullptr && !base_active->samples.empty() && !now_active->samples.empty();
  for (const auto& b : baseline) {
    if (b.samples.empty()) continue;
    const Figure* n = find(now_index, b.name);
    if (n == nullptr || n->samples.empty()) {
      FigureComparison c;
      c.name = b.name;
      c.unit = b.unit;
      c.source = b.source;
      c.rule = config.rule_for(b.name, b.unit, b.direction);
      c.baseline_median = median(b.samples);
      c.baseline_samples = b.samples.size();
      c.noise_percent = noise_percent(b.samples);
      c.bound_percent = std::max(c.rule.threshold_percent, config.noise_k * c.noise_percent);
      c.verdict = c.rule.gated ? Verdict::kMissing : Verdict::kInfo;
      c.note = c.rule.gated ? "the baseline has it; this run did not report it"
                            : "the baseline has it; this run did not report it (" + c.rule.why_not_gated + ")";
      out.figures.push_back(std::move(c));
      continue;
    }
    out.figures.push_back(judge(b, *n, config, context, wall_not_gated));
  }
  for (const auto& n : now) {
    if (n.samples.empty() || find(baseline_index, n.name) != nullptr) continue;
    FigureComparison c;
    c.name = n.name;
    c.unit = n.unit;
    c.source = n.source;
    c.rule = config.rule_for(n.name, n.unit, n.direction);
    c.now_median = median(n.samples);
    c.now_samples = n.samples.size();
    c.verdict = Verdict::kNew;
    c.note = "not in the baseline (record again to include it)";
    out.figures.push_back(std::move(c));
  }
  return out;
}

Comparison confirm(const Comparison& first, const Comparison& rerun) {
  Comparison out = first;
  std::unordered_map<std::string_view, const FigureComparison*> rerun_index;
  for (const auto& g : rerun.figures) rerun_index[g.name] = &g;  // the last of a name, as before
  for (auto& f : out.figures) {
    if (!is_failure(f.verdict)) continue;
    const auto it = rerun_index.find(f.name);
    const FigureComparison* r = it == rerun_index.end() ? nullptr : it->second;
    if (r == nullptr) continue;  // the rerun did not measure it: the first verdict stands
    if (is_failure(r->verdict)) {
      FigureComparison kept = *r;
      kept.confirmed = true;
      kept.note =
          fmt::format("{}; confirmed by a re-run (first run: {}{})", r->note,
                      f.change_percent ? fmt::format("{:+.1f} %", *f.change_percent) : std::string("missing"), "");
      f = std::move(kept);
    } else {
      const std::string first_change = f.change_percent ? fmt::format("{:+.1f} %", *f.change_percent) : "missing";
      f = *r;
      f.note = fmt::format("not confirmed: the first run was {} ({}), the re-run is {}", first_change,
                           "a fluke or noise", to_string(r->verdict));
    }
  }
  return out;
}

nlohmann::json to_json(const FigureComparison& f) {
  auto opt = [](const std::optional<double>& v) -> nlohmann::json {
    if (!v || !std::isfinite(*v)) return nullptr;
    return *v;
  };
  nlohmann::json j = {{"name", f.name},
                      {"unit", f.unit},
                      {"source", f.source},
                      {"direction", to_string(f.rule.direction)},
                      {"threshold_percent", f.rule.threshold_percent},
                      {"min_change", f.rule.min_change},
                      {"rule", f.rule.origin},
                      {"baseline", opt(f.baseline_median)},
                      {"now", opt(f.now_median)},
                      {"baseline_samples", f.baseline_samples},
                      {"now_samples", f.now_samples},
                      {"change_percent", opt(f.change_percent)},
                      {"noise_percent", f.noise_percent},
                      {"bound_percent", f.bound_percent},
                      {"noise_between_runs", f.per_run},
                      {"noise_runs", f.noise_runs},
                      {"p_value", opt(f.p_value)},
                      {"verdict", to_string(f.verdict)},
                      {"confirmed", f.confirmed},
                      {"note", f.note}};
  return j;
}

nlohmann::json to_json(const Comparison& c) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& f : c.figures) arr.push_back(to_json(f));
  return arr;
}

std::vector<std::string> machine_differences(const MachineContext& b, const MachineContext& n) {
  std::vector<std::string> out;
  auto list = [](const std::vector<std::string>& g) {
    if (g.empty()) return std::string("no GPU");
    // "8x NVIDIA H200" when they are all alike.
    if (std::all_of(g.begin(), g.end(), [&](const std::string& s) { return s == g[0]; }))
      return g.size() == 1 ? g[0] : fmt::format("{}x {}", g.size(), g[0]);
    return fmt::format("{}", fmt::join(g, ", "));
  };
  if (b.gpus != n.gpus) out.push_back(fmt::format("GPUs: {} (baseline) vs {} (now)", list(b.gpus), list(n.gpus)));
  if (!b.driver_version.empty() && !n.driver_version.empty() && b.driver_version != n.driver_version)
    out.push_back(fmt::format("driver: {} (baseline) vs {} (now)", b.driver_version, n.driver_version));
  if (!b.cuda_version.empty() && !n.cuda_version.empty() && b.cuda_version != n.cuda_version)
    out.push_back(fmt::format("CUDA: {} (baseline) vs {} (now)", b.cuda_version, n.cuda_version));
  return out;
}

}  // namespace gpudoc::baseline
