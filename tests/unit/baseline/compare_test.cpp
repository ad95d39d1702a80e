// The regression gate on fixture figures: noise inside the bound, clear regressions, the rank test,
// directions, missing/new figures, confirmation, machine mismatch.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "baseline/compare.hpp"
#include "baseline/config.hpp"

namespace gpudoc::baseline {
namespace {

using ::testing::HasSubstr;

Figure fig(const std::string& name, std::vector<double> samples, const std::string& unit = "",
           std::optional<Direction> dir = std::nullopt, const std::string& source = "workload") {
  return Figure{name, unit, source, dir, std::move(samples)};
}

const FigureComparison& only(const Comparison& c) {
  EXPECT_EQ(c.figures.size(), 1u);
  return c.figures.at(0);
}

TEST(Median, OddEvenEmpty) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median({}), 0);
}

TEST(Noise, RobustAgainstOneOutlier) {
  // MAD of {99,100,100,101,500} is 1: one wild sample does not widen the bound.
  EXPECT_NEAR(noise_percent({99, 100, 100, 101, 500}), 1.4826, 1e-9);
  EXPECT_EQ(noise_percent({100, 120}), 0);  // too few samples to measure noise
}

TEST(MannWhitney, ExactPValueOfCompleteSeparation) {
  // All five b above all five a: one arrangement of C(10,5) = 252.
  auto p = mann_whitney_greater_p({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10});
  ASSERT_TRUE(p);
  EXPECT_NEAR(*p, 1.0 / 252.0, 1e-12);
  auto q = mann_whitney_greater_p({6, 7, 8, 9, 10}, {1, 2, 3, 4, 5});
  EXPECT_NEAR(*q, 1.0, 1e-12);
}

TEST(MannWhitney, InterleavedIsNotSignificant) {
  auto p = mann_whitney_greater_p({1, 3, 5, 7, 9}, {2, 4, 6, 8, 10});
  ASSERT_TRUE(p);
  EXPECT_GT(*p, 0.2);
}

TEST(MannWhitney, TiesUseTheNormalApproximation) {
  auto p = mann_whitney_greater_p({1, 1, 1, 2, 2, 2}, {3, 3, 3, 4, 4, 4});
  ASSERT_TRUE(p);
  EXPECT_LT(*p, 0.01);
  auto same = mann_whitney_greater_p({5, 5, 5, 5, 5}, {5, 5, 5, 5, 5});
  EXPECT_DOUBLE_EQ(*same, 1.0);
  EXPECT_FALSE(mann_whitney_greater_p({}, {1}));
}

TEST(Compare, SmallChangeInsideThresholdIsOk) {
  const Config cfg;
  auto c =
      compare({fig("step_ms", {100, 101, 99, 100, 100, 101})}, {fig("step_ms", {103, 104, 102, 103, 103, 104})}, cfg);
  const auto& f = only(c);
  EXPECT_EQ(f.verdict, Verdict::kOk);
  EXPECT_NEAR(*f.change_percent, 3.0, 0.1);
  EXPECT_DOUBLE_EQ(f.bound_percent, 10);  // time: 10 %
  EXPECT_FALSE(c.failed());
}

TEST(Compare, ChangeInsideMeasuredNoiseIsNeverARegression) {
  const Config cfg;  // noise_k 2
  // Baseline noise ~9 % (robust): the bound widens to ~18 %; +15 % is inside it.
  std::vector<double> base{90, 92, 95, 100, 100, 100, 105, 108, 110, 112};
  std::vector<double> now{105, 108, 112, 115, 115, 115, 118, 120, 125, 126};
  auto c = compare({fig("step_ms", base)}, {fig("step_ms", now)}, cfg);
  const auto& f = only(c);
  EXPECT_GT(f.noise_percent, 7.0);
  EXPECT_GT(f.bound_percent, 15.0);
  EXPECT_EQ(f.verdict, Verdict::kOk) << f.note;
  EXPECT_THAT(f.note, HasSubstr("noise"));
}

TEST(Compare, ClearTwentyPercentBandwidthDropIsARegression) {
  const Config cfg;
  std::vector<double> base{4010, 4020, 4000, 4015, 4005, 4012, 4008, 4018};
  std::vector<double> now{3210, 3220, 3200, 3215, 3205, 3212, 3208, 3218};
  auto c = compare({fig("hbm.copy", base, "GB/s", Direction::kHigherIsBetter, "bench")},
                   {fig("hbm.copy", now, "GB/s", Direction::kHigherIsBetter, "bench")}, cfg);
  const auto& f = only(c);
  EXPECT_EQ(f.verdict, Verdict::kRegression) << f.note;
  EXPECT_NEAR(*f.change_percent, -20.0, 0.1);
  EXPECT_DOUBLE_EQ(f.bound_percent, 5);  // bandwidth: 5 %
  ASSERT_TRUE(f.p_value);
  EXPECT_LT(*f.p_value, 0.001);
  EXPECT_TRUE(c.failed());
  EXPECT_EQ(c.failing_sources(), std::vector<std::string>{"bench"});
}

TEST(Compare, BeyondTheBoundButNotSignificantIsOk) {
  const Config cfg;
  // Medians differ by ~12 % but the samples overlap: the rank test does not support it.
  std::vector<double> base{80, 85, 90, 100, 100, 101, 120, 125, 130, 135};
  std::vector<double> now{82, 86, 91, 101, 112, 113, 121, 124, 131, 134};
  auto c = compare({fig("step_ms", base)}, {fig("step_ms", now)}, Config{0.0, 0.05, {}, "t"});
  const auto& f = only(c);
  EXPECT_GT(*f.change_percent, f.bound_percent);
  ASSERT_TRUE(f.p_value);
  EXPECT_GT(*f.p_value, 0.05);
  EXPECT_EQ(f.verdict, Verdict::kOk);
  EXPECT_THAT(f.note, HasSubstr("not significant"));
  (void)cfg;
}

TEST(Compare, TooFewSamplesForRankTestDecidesOnTheBound) {
  const Config cfg;
  auto c = compare({fig("accuracy", {0.95})}, {fig("accuracy", {0.90})}, cfg);
  const auto& f = only(c);
  EXPECT_EQ(f.verdict, Verdict::kRegression);
  EXPECT_FALSE(f.p_value);
  EXPECT_THAT(f.note, HasSubstr("too few"));
}

TEST(Compare, DirectionDecidesImprovedOrRegression) {
  const Config cfg;
  // Lower is better: time down 50 % is an improvement.
  EXPECT_EQ(only(compare({fig("step_ms", {10})}, {fig("step_ms", {5})}, cfg)).verdict, Verdict::kImproved);
  EXPECT_EQ(only(compare({fig("step_ms", {10})}, {fig("step_ms", {20})}, cfg)).verdict, Verdict::kRegression);
  // Higher is better: throughput up is an improvement, down a regression.
  EXPECT_EQ(only(compare({fig("tokens_per_second", {1000})}, {fig("tokens_per_second", {1200})}, cfg)).verdict,
            Verdict::kImproved);
  EXPECT_EQ(only(compare({fig("tokens_per_second", {1000})}, {fig("tokens_per_second", {800})}, cfg)).verdict,
            Verdict::kRegression);
  // A config can turn a name around.
  Config flip;
  flip.metrics.push_back({"step_ms", Direction::kHigherIsBetter, std::nullopt, std::nullopt});
  EXPECT_EQ(only(compare({fig("step_ms", {10})}, {fig("step_ms", {20})}, flip)).verdict, Verdict::kImproved);
  // No direction known: shown, never gated.
  auto info = only(compare({fig("mystery", {1})}, {fig("mystery", {100})}, cfg));
  EXPECT_EQ(info.verdict, Verdict::kInfo);
}

TEST(Compare, FiguresOwnDirectionWinsOverNameDefaults) {
  const Config cfg;
  // A benchmark in microseconds that says higher is better (hypothetical): its word counts.
  auto f = only(compare({fig("x.us", {10}, "us", Direction::kHigherIsBetter)},
                        {fig("x.us", {5}, "us", Direction::kHigherIsBetter)}, cfg));
  EXPECT_EQ(f.verdict, Verdict::kRegression);
}

TEST(Compare, MissingFailsNewDoesNot) {
  const Config cfg;
  auto c = compare({fig("step_ms", {10}), fig("accuracy", {0.95})}, {fig("step_ms", {10}), fig("loss", {0.3})}, cfg);
  ASSERT_EQ(c.figures.size(), 3u);
  EXPECT_EQ(c.figures[0].verdict, Verdict::kOk);
  EXPECT_EQ(c.figures[1].name, "accuracy");
  EXPECT_EQ(c.figures[1].verdict, Verdict::kMissing);
  EXPECT_EQ(c.figures[2].name, "loss");
  EXPECT_EQ(c.figures[2].verdict, Verdict::kNew);
  EXPECT_TRUE(c.failed());
}

TEST(Compare, WallTimeBelowResolutionIsOk) {
  const Config cfg;
  // A 3 ms command taking 5 ms is +66 % but far below the 0.2 s start-up jitter.
  auto f = only(compare({fig("wall_s", {0.003}, "s", Direction::kLowerIsBetter, "gpudoc")},
                        {fig("wall_s", {0.005}, "s", Direction::kLowerIsBetter, "gpudoc")}, cfg));
  EXPECT_EQ(f.verdict, Verdict::kOk);
  EXPECT_THAT(f.note, HasSubstr("resolution"));
  auto g = only(compare({fig("wall_s", {10.0}, "s")}, {fig("wall_s", {20.0}, "s")}, cfg));
  EXPECT_EQ(g.verdict, Verdict::kRegression);
}

CompareContext runs(int golden, int now) {
  CompareContext ctx;
  ctx.baseline_runs = golden;
  ctx.now_runs = now;
  return ctx;
}

Figure wall(std::vector<double> samples) { return fig("wall_s", std::move(samples), "s", std::nullopt, "gpudoc"); }

TEST(StudentT, QuantilesMatchTheTablesAndApproachTheNormal) {
  EXPECT_NEAR(student_t_99(1), 31.821, 1e-3);
  EXPECT_NEAR(student_t_99(2), 6.965, 1e-3);
  EXPECT_NEAR(student_t_99(30), 2.457, 1e-3);
  EXPECT_NEAR(student_t_99(40), 2.423, 2e-3);   // tables: 2.423
  EXPECT_NEAR(student_t_99(120), 2.358, 2e-3);  // tables: 2.358
  EXPECT_GT(student_t_99(31), 2.326);
  EXPECT_LT(student_t_99(31), student_t_99(30));
  EXPECT_NEAR(student_t_99(100000), 2.3263, 1e-3);
  EXPECT_NEAR(standard_deviation({1, 2, 3}), 1.0, 1e-12);
  EXPECT_EQ(standard_deviation({5}), 0.0);
}

TEST(PerRun, OneGoldenRunIsNotGatedAndSaysWhatIsMissing) {
  const Config cfg;
  // The unchanged 5 s job of the gate's results page: one golden run of 17.2 s, a check of 13.7 s.
  auto f = only(compare({wall({17.2})}, {wall({13.7})}, cfg, runs(1, 1)));
  EXPECT_EQ(f.verdict, Verdict::kUngated);
  EXPECT_FALSE(is_failure(f.verdict));
  EXPECT_TRUE(f.per_run);
  EXPECT_EQ(f.noise_runs, 1u);
  EXPECT_THAT(f.note, HasSubstr("needs 3 runs (1 so far)"));
  EXPECT_THAT(f.note, HasSubstr("--repeat 3"));
  // Without the context (a caller that does not know the runs), the old rule: the bound decides.
  EXPECT_EQ(only(compare({wall({17.2})}, {wall({13.7})}, cfg)).verdict, Verdict::kImproved);
}

TEST(PerRun, EarlierChecksTeachTheNoise) {
  const Config cfg;
  CompareContext ctx = runs(1, 1);
  ctx.earlier["wall_s"] = {15.0};
  EXPECT_EQ(only(compare({wall({16.0})}, {wall({20.0})}, cfg, ctx)).verdict, Verdict::kUngated);
  ctx.earlier["wall_s"] = {15.0, 17.0};  // runs 16, 15, 17: SD 1 s, 6.25 % of 16 s
  const auto f = only(compare({wall({16.0})}, {wall({20.0})}, cfg, ctx));
  EXPECT_EQ(f.noise_runs, 3u);
  EXPECT_NEAR(f.noise_percent, 6.25, 1e-9);
  // t(2) x 6.25 % x sqrt(1 + 1) = 61.6 %: +25 % is inside an unchanged run's spread.
  EXPECT_NEAR(f.bound_percent, 6.965 * 6.25 * std::sqrt(2.0), 1e-6);
  EXPECT_EQ(f.verdict, Verdict::kOk);
  EXPECT_THAT(f.note, HasSubstr("from 3 runs"));
}

TEST(PerRun, ManyQuietRunsCatchATenPercentSlowdownAndPassNoise) {
  const Config cfg;
  // A GPU-busy span of 4.0 s, +-1 % between runs: 3 golden runs and 20 checks since.
  std::vector<double> golden = {4.00, 4.04, 3.96};
  CompareContext ctx = runs(3, 1);
  for (int i = 0; i < 20; ++i) ctx.earlier["gpu_active_s"].push_back(4.0 + 0.04 * ((i % 5) - 2) / 2.0);
  auto active = [](double v) { return fig("gpu_active_s", {v}, "s", std::nullopt, "gpudoc"); };
  Figure g = fig("gpu_active_s", golden, "s", std::nullopt, "gpudoc");
  const auto slow = only(compare({g}, {active(4.4)}, cfg, ctx));
  EXPECT_EQ(slow.verdict, Verdict::kRegression);
  EXPECT_LT(slow.bound_percent, 6.0);
  EXPECT_THAT(slow.note, HasSubstr("99 % bound"));
  EXPECT_FALSE(slow.p_value);  // no rank test on one value a run
  EXPECT_EQ(only(compare({g}, {active(4.08)}, cfg, ctx)).verdict, Verdict::kOk);
}

TEST(StartUp, IsShownNotGatedUnlessTheConfigSaysSo) {
  // Start-up +47 % with an unchanged job: the H200 runs on docs/results/baseline-gate.md.
  auto startup = [](double v) { return fig("startup_s", {v}, "s", std::nullopt, "gpudoc"); };
  const Config cfg;
  const auto f = only(compare({startup(2.0)}, {startup(2.94)}, cfg));
  EXPECT_EQ(f.verdict, Verdict::kInfo);
  EXPECT_FALSE(f.rule.gated);
  EXPECT_THAT(f.note, HasSubstr("start-up"));
  ASSERT_TRUE(f.change_percent);
  EXPECT_NEAR(*f.change_percent, 47.0, 1e-9);  // still measured and shown
  // A run that did not report it is not a failure either.
  EXPECT_EQ(only(compare({startup(2.0)}, {}, cfg)).verdict, Verdict::kInfo);
  auto gate = parse_config(R"({"metrics": {"startup_s": {"gate": true}}})", "cfg.json");
  ASSERT_TRUE(gate) << gate.error().message();
  EXPECT_EQ(only(compare({startup(2.0)}, {startup(2.94)}, *gate)).verdict, Verdict::kRegression);
  EXPECT_EQ(only(compare({startup(2.0)}, {}, *gate)).verdict, Verdict::kMissing);
}

TEST(WallTime, IsNotGatedWhereTheGpuWorkIsGatedOnItsOwn) {
  const Config cfg;
  auto g = [](const std::string& name, double v) { return fig(name, {v}, "s", std::nullopt, "gpudoc"); };
  // wall +28 % from start-up, the GPU's work unchanged: passes, and wall_s says why it is not gated.
  const auto c =
      compare({g("wall_s", 10.0), g("gpu_active_s", 5.30)}, {g("wall_s", 12.8), g("gpu_active_s", 5.31)}, cfg);
  ASSERT_EQ(c.figures.size(), 2u);
  EXPECT_EQ(c.figures[0].verdict, Verdict::kInfo);
  EXPECT_THAT(c.figures[0].note, HasSubstr("gpu_active_s"));
  EXPECT_EQ(c.figures[1].verdict, Verdict::kOk);
  EXPECT_FALSE(c.failed());
  // The GPU's work 10 % slower: gpu_active_s fails the check.
  EXPECT_TRUE(compare({g("wall_s", 10.0), g("gpu_active_s", 5.30)}, {g("wall_s", 10.6), g("gpu_active_s", 5.83)}, cfg)
                  .failed());
  // Without gpu_active_s on both sides wall time is all there is: gated.
  EXPECT_EQ(only(compare({g("wall_s", 10.0)}, {g("wall_s", 12.8)}, cfg)).verdict, Verdict::kRegression);
  // The config can gate it anyway.
  auto gate = parse_config(R"({"metrics": {"wall_s": {"gate": true}}})", "cfg.json");
  ASSERT_TRUE(gate) << gate.error().message();
  EXPECT_EQ(compare({g("wall_s", 10.0), g("gpu_active_s", 5.30)}, {g("wall_s", 12.8), g("gpu_active_s", 5.31)}, *gate)
                .figures[0]
                .verdict,
            Verdict::kRegression);
}

TEST(Config, GateMustBeABoolean) {
  auto bad = parse_config(R"({"metrics": {"wall_s": {"gate": "yes"}}})", "cfg.json");
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message(), HasSubstr("metrics.wall_s.gate"));
  auto off = parse_config(R"({"metrics": {"step_ms": {"gate": false}}})", "cfg.json");
  ASSERT_TRUE(off);
  const auto f = only(compare({fig("step_ms", {10, 10, 10, 10, 10})}, {fig("step_ms", {20, 20, 20, 20, 20})}, *off));
  EXPECT_EQ(f.verdict, Verdict::kInfo);
  EXPECT_THAT(f.note, HasSubstr("\"gate\": false in cfg.json"));
}

TEST(PerRun, OnlyGpudocAndWorkloadFiguresWithOneValueARun) {
  const Config cfg;
  // A benchmark's samples are repetitions inside one run: their own spread is the noise.
  auto b = only(compare({fig("hbm.copy", {4000}, "GB/s", std::nullopt, "bench")},
                        {fig("hbm.copy", {3000}, "GB/s", std::nullopt, "bench")}, cfg, runs(1, 1)));
  EXPECT_FALSE(b.per_run);
  EXPECT_EQ(b.verdict, Verdict::kRegression);
  // A workload's step times, many a run: the rank test's rule.
  auto s = only(
      compare({fig("step_ms", {10, 10.1, 9.9, 10, 10.2})}, {fig("step_ms", {10, 10.1, 9.9, 10, 10})}, cfg, runs(1, 1)));
  EXPECT_FALSE(s.per_run);
  // Reported once a run, in each of 3 golden runs: per run.
  auto a = only(compare({fig("accuracy", {0.95, 0.95, 0.95})}, {fig("accuracy", {0.90})}, cfg, runs(3, 1)));
  EXPECT_TRUE(a.per_run);
  EXPECT_EQ(a.verdict, Verdict::kRegression);  // no spread at all: the 1 % threshold decides
}

TEST(PerRun, AFigureMeasuredDifferentlyIsNotCompared) {
  const Config cfg;
  CompareContext ctx = runs(3, 1);
  ctx.baseline_definitions["gpu_memory_peak_bytes"] = "the rise of the whole GPUs' used memory";
  ctx.now_definitions["gpu_memory_peak_bytes"] = "the peak GPU memory of the command's processes";
  auto mem = [](std::vector<double> v) {
    return fig("gpu_memory_peak_bytes", std::move(v), "By", std::nullopt, "gpudoc");
  };
  const auto f = only(compare({mem({8e9, 8e9, 8e9})}, {mem({2e9})}, cfg, ctx));
  EXPECT_EQ(f.verdict, Verdict::kRedefined);
  EXPECT_FALSE(is_failure(f.verdict));
  EXPECT_THAT(f.note, HasSubstr("whole GPUs"));
  EXPECT_THAT(f.note, HasSubstr("record the baseline again"));
  ctx.now_definitions = ctx.baseline_definitions;
  EXPECT_EQ(only(compare({mem({8e9, 8e9, 8e9})}, {mem({8e9})}, cfg, ctx)).verdict, Verdict::kOk);
}

TEST(Confirm, AFlukeIsNotConfirmed) {
  const Config cfg;
  auto first = compare({fig("step_ms", {10})}, {fig("step_ms", {20})}, cfg);
  auto rerun = compare({fig("step_ms", {10})}, {fig("step_ms", {10.2})}, cfg);
  auto final = confirm(first, rerun);
  EXPECT_FALSE(final.failed());
  EXPECT_THAT(final.figures[0].note, HasSubstr("not confirmed"));
}

TEST(Confirm, ARegressionSeenTwiceIsConfirmed) {
  const Config cfg;
  auto first =
      compare({fig("step_ms", {10}), fig("accuracy", {0.9})}, {fig("step_ms", {20}), fig("accuracy", {0.9})}, cfg);
  auto rerun = compare({fig("step_ms", {10})}, {fig("step_ms", {19})}, cfg);
  auto final = confirm(first, rerun);
  EXPECT_TRUE(final.failed());
  EXPECT_TRUE(final.figures[0].confirmed);
  EXPECT_NEAR(*final.figures[0].now_median, 19, 1e-9);  // the re-run's numbers
  EXPECT_EQ(final.figures[1].verdict, Verdict::kOk);
}

TEST(Compare, JsonCarriesEveryColumn) {
  const Config cfg;
  auto j = to_json(compare({fig("step_ms", {10})}, {fig("step_ms", {20})}, cfg));
  ASSERT_EQ(j.size(), 1u);
  for (const char* k : {"name", "unit", "source", "direction", "baseline", "now", "change_percent", "bound_percent",
                        "noise_percent", "p_value", "verdict", "note", "confirmed"})
    EXPECT_TRUE(j[0].contains(k)) << k;
  EXPECT_EQ(j[0]["verdict"], "regression");
}

// change_interval: the bootstrap interval of the change of the median, runs and their samples.
TEST(ChangeInterval, HoldsTheTrueChangeAndExcludesZeroForAClearOne) {
  const std::vector<std::vector<double>> a = {{10.0, 10.2, 9.9, 10.1}, {10.1, 9.8, 10.0, 10.2}};
  const std::vector<std::vector<double>> b = {{12.0, 12.1, 11.9, 12.2}, {12.1, 11.8, 12.0, 12.0}};
  auto i = change_interval(a, b);
  ASSERT_TRUE(i);
  EXPECT_GT(i->low_percent, 10.0);
  EXPECT_LT(i->high_percent, 30.0);
  EXPECT_LE(i->low_percent, 20.0);
  EXPECT_GE(i->high_percent, 19.0);
  EXPECT_EQ(i->resamples, 2000u);
}

TEST(ChangeInterval, TheSameSamplesGiveAnIntervalAroundZeroAndTheSameIntervalAgain) {
  const std::vector<std::vector<double>> a = {{10, 11, 9, 10.5}, {9.5, 10, 10.2, 10.8}};
  auto i = change_interval(a, a), j = change_interval(a, a);
  ASSERT_TRUE(i && j);
  EXPECT_LT(i->low_percent, 0.0);
  EXPECT_GT(i->high_percent, 0.0);
  EXPECT_EQ(i->low_percent, j->low_percent);
  EXPECT_EQ(i->high_percent, j->high_percent);
}

// Two runs that disagree widen the interval: the spread between runs is in it, not only within one.
TEST(ChangeInterval, SpreadBetweenRunsWidensIt) {
  const std::vector<std::vector<double>> tight_a = {{10, 10.1, 9.9}, {10, 10.1, 9.9}};
  const std::vector<std::vector<double>> tight_b = {{11, 11.1, 10.9}, {11, 11.1, 10.9}};
  const std::vector<std::vector<double>> apart_b = {{10, 10.1, 9.9}, {12, 12.1, 11.9}};
  auto tight = change_interval(tight_a, tight_b), apart = change_interval(tight_a, apart_b);
  ASSERT_TRUE(tight && apart);
  EXPECT_GT(apart->high_percent - apart->low_percent, 3 * (tight->high_percent - tight->low_percent));
}

TEST(ChangeInterval, NothingToResampleOrAZeroMedianGivesNone) {
  EXPECT_FALSE(change_interval({}, {{1.0}}));
  EXPECT_FALSE(change_interval({{}}, {{1.0}}));
  EXPECT_FALSE(change_interval({{0.0, 0.0}}, {{1.0}}));
}

TEST(Machine, SameMachineHasNoDifferences) {
  MachineContext a{"host-a", {"NVIDIA H200"}, "580.1", "13.0", {}};
  MachineContext b{"host-b", {"NVIDIA H200"}, "580.1", "13.0", {}};
  EXPECT_TRUE(machine_differences(a, b).empty());  // host names may differ (a CI fleet)
}

TEST(Machine, SaysExactlyWhatDiffers) {
  MachineContext a{"h", {"NVIDIA H200"}, "580.1", "13.0", {}};
  MachineContext b{"h", {"NVIDIA H100 80GB HBM3"}, "575.2", "12.9", {}};
  auto d = machine_differences(a, b);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0], "GPUs: NVIDIA H200 (baseline) vs NVIDIA H100 80GB HBM3 (now)");
  EXPECT_EQ(d[1], "driver: 580.1 (baseline) vs 575.2 (now)");
  EXPECT_EQ(d[2], "CUDA: 13.0 (baseline) vs 12.9 (now)");
  MachineContext none{"h", {}, "", "", {}};
  EXPECT_EQ(machine_differences(a, none).at(0), "GPUs: NVIDIA H200 (baseline) vs no GPU (now)");
  MachineContext eight{"h", std::vector<std::string>(8, "NVIDIA H200"), "580.1", "13.0", {}};
  EXPECT_THAT(machine_differences(eight, a).at(0), HasSubstr("8x NVIDIA H200"));
}

TEST(Machine, JsonRoundTrip) {
  MachineContext a{"h", {"NVIDIA H200", "NVIDIA H200"}, "580.1", "13.0", {{"gpu_uuids", {"GPU-1", "GPU-2"}}}};
  auto b = machine_from_json(to_json(a));
  EXPECT_EQ(b.host, a.host);
  EXPECT_EQ(b.gpus, a.gpus);
  EXPECT_EQ(b.driver_version, a.driver_version);
  EXPECT_EQ(b.cuda_version, a.cuda_version);
  EXPECT_EQ(b.extra, a.extra);
  EXPECT_TRUE(machine_from_json(nlohmann::json("garbage")).gpus.empty());
}

}  // namespace
}  // namespace gpudoc::baseline
