// The gate as calls, without a GPU: a record's spec from the command line, recording a golden run,
// a check against it (ok, a confirmed regression, a failed workload), what a check refuses before
// anything runs (an interrupted or different-machine golden run, an unknown baseline), a stop
// before anything was measured, and what list reads.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>

#include "baseline/gate.hpp"
#include "support/temp_dir.hpp"

namespace gpudoc::baseline {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A workload that reports step_ms = `ms` on stdout.
std::vector<std::string> step(int ms) {
  return {"sh", "-c", "echo '::gpudoc {\"step_ms\": " + std::to_string(ms) + "}'"};
}

const FigureComparison& named(const Comparison& c, const std::string& name) {
  for (const auto& f : c.figures)
    if (f.name == name) return f;
  static const FigureComparison none;
  ADD_FAILURE() << "no figure " << name;
  return none;
}

class GateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = core::PrivateDir::create("gpudoc-gate-test", tmp_.str());
    ASSERT_TRUE(dir) << dir.error().message();
    dir_.emplace(std::move(*dir));
    env_.no_gpu_reason = "no GPU in this test";
    env_.echo_to_stderr = true;  // keep the test's stdout clean
    env_.dir = &*dir_;
    env_.on_note = [this](const std::string& n) { notes_.push_back(n); };
    env_.on_progress = [this](const std::string& p) { progress_.push_back(p); };
  }
  store::Database store(StoreUse use = StoreUse::kWrite) {
    auto s = open_store(store_path_, use);
    EXPECT_TRUE(s) << s.error().message();
    return std::move(*s);
  }
  Recorded record_step(const std::string& name, int ms) {
    auto spec = record_spec({.command = step(ms)});
    EXPECT_TRUE(spec) << spec.error().message();
    store::Database s = store();
    auto rec = record(s, name, *spec, env_);
    EXPECT_TRUE(rec) << rec.error().message();
    return std::move(*rec);
  }
  core::Result<CheckOutcome> check_step(const std::string& name, int ms, CheckOptions options = {}) {
    auto plan = plan_check({.name = name, .store_path = store_path_, .command = step(ms)});
    if (!plan) return plan.error();
    return check(*plan, env_, options);
  }

  testing::TempDir tmp_{"gpudoc-gate"};
  std::optional<std::string> store_path_ = tmp_.file("store.db");
  std::optional<core::PrivateDir> dir_;
  GateEnv env_;
  std::vector<std::string> notes_, progress_;
};

TEST(RecordSpec, SplitsCommaSeparatedBenchKeysAndFillsTheDefaults) {
  auto spec = record_spec({.bench = true, .bench_keys = {"hbm,launch", ",p2p,"}, .quick = true});
  ASSERT_TRUE(spec) << spec.error().message();
  EXPECT_THAT(spec->bench_keys, ElementsAre("hbm", "launch", "p2p"));
  EXPECT_EQ(spec->bench_mode, "quick");
  EXPECT_EQ(spec->repeat, 1);
  EXPECT_EQ(record_spec({.full = true, .probe = true})->bench_mode, "full");
  EXPECT_EQ(record_spec({.probe = true})->bench_mode, "default");
}

TEST(RecordSpec, RefusesWhatCannotBeRecorded) {
  auto both = record_spec({.bench = true, .quick = true, .full = true});
  ASSERT_FALSE(both);
  EXPECT_EQ(both.error().kind(), core::ErrorKind::kUsage);
  EXPECT_THAT(both.error().message(), HasSubstr("--quick and --full exclude each other"));
  auto nothing = record_spec({});
  ASSERT_FALSE(nothing);
  EXPECT_THAT(nothing.error().message(), HasSubstr("nothing to record"));
  auto negative = record_spec({.probe = true, .repeat = -1});
  ASSERT_FALSE(negative);
  EXPECT_THAT(negative.error().message(), HasSubstr("--repeat and --timeout must be positive"));
}

TEST_F(GateTest, RecordStoresTheGoldenRunAndACheckWithinBoundsPasses) {
  const Recorded rec = record_step("train", 10);
  EXPECT_GT(rec.run_id, 0);
  EXPECT_FALSE(rec.existed);
  EXPECT_EQ(rec.exit_code, 0);
  EXPECT_EQ(rec.baseline.kinds, "workload");
  EXPECT_EQ(rec.baseline.run.machine.extra.value("no_gpu_reason", ""), "no GPU in this test");
  EXPECT_TRUE(record_step("train", 10).existed);

  auto out = check_step("train", 10);
  ASSERT_TRUE(out) << out.error().message();
  EXPECT_EQ(out->verdict, "ok");
  EXPECT_EQ(out->exit_code, 0);
  EXPECT_GT(out->run_id, rec.run_id);
  EXPECT_FALSE(out->rerun);
  EXPECT_TRUE(progress_.empty());

  auto list = list_store(store_path_);
  ASSERT_TRUE(list) << list.error().message();
  ASSERT_EQ(list->baselines.size(), 1u);
  ASSERT_TRUE(list->baselines[0].last_check);
  EXPECT_EQ(list->baselines[0].last_check->run_id, out->run_id);
  EXPECT_EQ(list->baselines[0].last_check->verdict, "ok");
}

TEST_F(GateTest, ARegressionIsRunAgainAndStoredWithItsConfirmation) {
  record_step("train", 10);
  auto out = check_step("train", 20);
  ASSERT_TRUE(out) << out.error().message();
  EXPECT_EQ(out->verdict, "regression");
  EXPECT_EQ(out->exit_code, core::kExitFinding);
  ASSERT_TRUE(out->rerun);
  EXPECT_THAT(progress_, ElementsAre(HasSubstr("possible regression in workload; running again to confirm")));
  EXPECT_FALSE(out->failure_lines.empty());  // the GPU state, here: why there is none
  EXPECT_FALSE(out->trace_kept);             // no GPU, no trace
  store::Database s = store(StoreUse::kRead);
  auto runs = s.runs_of("train");
  ASSERT_TRUE(runs);
  ASSERT_EQ(runs->size(), 3u);
  EXPECT_EQ((*runs)[1].role, "check");
  EXPECT_EQ((*runs)[2].role, "confirm");
  EXPECT_EQ((*runs)[2].details.value("check_run_id", std::int64_t{0}), out->run_id);
}

TEST_F(GateTest, WithoutConfirmationTheFirstRunDecides) {
  record_step("train", 10);
  auto out = check_step("train", 20, {.confirm = false});
  ASSERT_TRUE(out) << out.error().message();
  EXPECT_EQ(out->verdict, "regression");
  EXPECT_FALSE(out->rerun);
  EXPECT_TRUE(progress_.empty());
}

TEST_F(GateTest, AFailedWorkloadFailsTheCheckWithoutAConfirmation) {
  record_step("train", 10);
  auto plan = plan_check({.name = "train", .store_path = store_path_, .command = {"sh", "-c", "exit 3"}});
  ASSERT_TRUE(plan) << plan.error().message();
  auto out = check(*plan, env_, {});
  ASSERT_TRUE(out) << out.error().message();
  EXPECT_EQ(out->verdict, "workload_failed");
  EXPECT_EQ(out->workload_failure, "the workload exited with code 3");
  EXPECT_EQ(out->exit_code, core::kExitFinding);
  EXPECT_FALSE(out->rerun);
}

TEST_F(GateTest, AWorkloadIsRecordedThreeTimesAndCheckedOnce) {
  auto spec = record_spec({.command = step(10)});
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->repeat, kGoldenRuns);
  EXPECT_EQ(spec->check_repeat, 1);
  auto asked = record_spec({.command = step(10), .repeat = 2});
  ASSERT_TRUE(asked);
  EXPECT_EQ(asked->repeat, 2);
  EXPECT_EQ(asked->check_repeat, 2) << "a repeat asked for holds for the checks too";

  const Recorded rec = record_step("train", 10);
  EXPECT_EQ(workload_runs(rec.got.details), kGoldenRuns);
  auto plan = plan_check({.name = "train", .store_path = store_path_});
  ASSERT_TRUE(plan) << plan.error().message();
  EXPECT_EQ(plan->spec.repeat, 1);
  EXPECT_EQ(plan->context.baseline_runs, kGoldenRuns);
  auto out = check(*plan, env_, {});
  ASSERT_TRUE(out) << out.error().message();
  EXPECT_EQ(workload_runs(out->got.details), 1);
  EXPECT_TRUE(named(out->cmp, "step_ms").per_run);
  EXPECT_EQ(named(out->cmp, "step_ms").verdict, Verdict::kOk);
}

TEST_F(GateTest, OneGoldenRunGatesOnlyOnceChecksHaveMeasuredTheNoise) {
  auto spec = record_spec({.command = step(10), .repeat = 1});
  ASSERT_TRUE(spec);
  {
    store::Database s = store();
    ASSERT_TRUE(record(s, "once", *spec, env_));
  }
  auto check_same = [this] {
    auto plan = plan_check({.name = "once", .store_path = store_path_});
    EXPECT_TRUE(plan) << plan.error().message();
    auto out = check(*plan, env_, {});
    EXPECT_TRUE(out) << out.error().message();
    return std::move(*out);
  };
  for (int k = 1; k <= 2; ++k) {
    const CheckOutcome out = check_same();
    EXPECT_EQ(out.verdict, "ok");
    EXPECT_EQ(named(out.cmp, "step_ms").verdict, Verdict::kUngated) << "check " << k;
    EXPECT_EQ(named(out.cmp, "step_ms").noise_runs, static_cast<std::size_t>(k));
  }
  // Golden run and two checks: the noise is known (none), the threshold gates.
  const CheckOutcome third = check_same();
  EXPECT_EQ(named(third.cmp, "step_ms").verdict, Verdict::kOk);
  EXPECT_EQ(named(third.cmp, "step_ms").noise_runs, 3u);
  auto slow = check_step("once", 20);
  ASSERT_TRUE(slow) << slow.error().message();
  EXPECT_EQ(slow->verdict, "regression");
  EXPECT_EQ(named(slow->cmp, "step_ms").noise_runs, 4u) << "a check of another command does not teach the noise";
}

TEST_F(GateTest, AFailedWorkloadIsNeverRecorded) {
  store::Database s = store();
  auto spec = record_spec({.command = {"sh", "-c", "exit 3"}});
  ASSERT_TRUE(spec);
  auto rec = record(s, "bad", *spec, env_);
  ASSERT_FALSE(rec);
  EXPECT_EQ(rec.error().kind(), core::ErrorKind::kBadInput);
  EXPECT_THAT(rec.error().message(), HasSubstr("the workload exited with code 3"));
  auto found = s.find_baseline("bad");
  ASSERT_TRUE(found);
  EXPECT_FALSE(found->has_value());
}

TEST_F(GateTest, StoppedBeforeAnythingWasMeasuredNothingIsStored) {
  StopSignal stop;
  stop.signal = SIGINT;
  stop.count = 1;
  env_.stop = &stop;
  store::Database s = store();
  auto spec = record_spec({.command = step(10)});
  ASSERT_TRUE(spec);
  auto rec = record(s, "train", *spec, env_);
  ASSERT_TRUE(rec) << rec.error().message();
  EXPECT_EQ(rec->run_id, 0);
  EXPECT_EQ(rec->exit_code, 128 + SIGINT);
  auto found = s.find_baseline("train");
  ASSERT_TRUE(found);
  EXPECT_FALSE(found->has_value());
}

TEST_F(GateTest, AnInterruptedGoldenRunIsRefusedBeforeAnythingRuns) {
  store::Database s = store();
  store::NewBaseline nb;
  nb.name = "cut";
  nb.kinds = "workload";
  nb.spec = to_json(*record_spec({.command = step(10)}));
  nb.run.role = "record";
  nb.run.verdict = store::kVerdictInterrupted;
  nb.run.details["interrupted"] = interruption_json(SIGTERM);
  nb.run.figures = {{"step_ms", "ms", "workload", std::nullopt, {10}}};
  ASSERT_TRUE(s.record_baseline(nb));
  auto plan = plan_check({.name = "cut", .store_path = store_path_});
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().kind(), core::ErrorKind::kBadInput);
  EXPECT_THAT(plan.error().message(), HasSubstr("baseline 'cut' has no complete recording"));
  EXPECT_THAT(plan.error().message(), HasSubstr("(SIGTERM)"));
}

TEST_F(GateTest, AnotherMachineIsRefusedUnlessAllowedAndThenNamedInTheCheck) {
  store::Database s = store();
  store::NewBaseline nb;
  nb.name = "h200";
  nb.kinds = "workload";
  nb.spec = to_json(*record_spec({.command = step(10)}));
  nb.run.role = "record";
  nb.run.machine.gpus = {"NVIDIA H200"};
  nb.run.figures = {{"step_ms", "ms", "workload", std::nullopt, {10}}};
  ASSERT_TRUE(s.record_baseline(nb));

  auto refused = check_step("h200", 10);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind(), core::ErrorKind::kEnvironment);
  EXPECT_THAT(refused.error().message(), HasSubstr("recorded on a different machine"));
  auto runs = s.runs_of("h200");
  ASSERT_TRUE(runs);
  EXPECT_EQ(runs->size(), 1u) << "nothing ran, nothing was stored";

  auto allowed = check_step("h200", 10, {.allow_different_machine = true});
  ASSERT_TRUE(allowed) << allowed.error().message();
  EXPECT_FALSE(allowed->machine_differences.empty());
  auto stored = s.load_run(allowed->run_id);
  ASSERT_TRUE(stored);
  EXPECT_TRUE(stored->details.contains("machine_differences"));
}

TEST_F(GateTest, UnknownNamesAndMissingStoresAreUsageErrors) {
  auto missing = plan_check({.name = "train", .store_path = store_path_});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind(), core::ErrorKind::kUsage);
  EXPECT_THAT(missing.error().message(), HasSubstr("does not exist yet"));
  EXPECT_FALSE(std::filesystem::exists(*store_path_)) << "a check never creates the store";

  auto list = list_store(store_path_);
  ASSERT_TRUE(list) << list.error().message();
  EXPECT_FALSE(list->store_exists);
  EXPECT_FALSE(std::filesystem::exists(*store_path_)) << "listing never creates the store";

  record_step("train", 10);
  auto unknown = open_named(store_path_, "other", StoreUse::kRead);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().kind(), core::ErrorKind::kUsage);
  EXPECT_THAT(unknown.error().message(), HasSubstr("`gpudoc baseline list` shows them"));
}

TEST(ConfirmationFilter, OnlyFailingBenchmarksRunAgainWhenOnlyBenchmarksFailed) {
  auto figure = [](std::string name, std::string source, Verdict verdict) {
    FigureComparison f;
    f.name = std::move(name);
    f.source = std::move(source);
    f.verdict = verdict;
    return f;
  };
  Comparison c;
  c.figures = {figure("hbm.copy", "bench", Verdict::kRegression), figure("launch.latency", "bench", Verdict::kOk)};
  CollectFilter only_bench = confirmation_filter(c);
  EXPECT_THAT(only_bench.sources, ElementsAre("bench"));
  EXPECT_THAT(only_bench.bench_keys, ElementsAre("hbm.copy"));
  c.figures.push_back(figure("step_ms", "workload", Verdict::kMissing));
  CollectFilter both = confirmation_filter(c);
  EXPECT_THAT(both.sources, ElementsAre("bench", "workload"));
  EXPECT_TRUE(both.bench_keys.empty());
}

}  // namespace
}  // namespace gpudoc::baseline
