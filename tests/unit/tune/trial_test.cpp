// tune::run_trial on real child processes: a fixed amount of work, then stopped; failures, out of
// memory and timeouts as statuses. Hang guards only (every bound is far above the normal time).
#include "tune/trial.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/temp_dir.hpp"

namespace gpudoc::tune {
namespace {

using ::testing::HasSubstr;

class TrialTest : public ::testing::Test {
 protected:
  TrialEnv env() {
    TrialEnv e;
    e.dir = &*dir_;
    e.stop_grace = std::chrono::milliseconds(500);
    return e;
  }
  TrialSpec spec(const std::string& script, std::size_t steps = 5) {
    TrialSpec s;
    s.arm = "unchanged";
    s.number = ++n_;
    s.launch.argv = {"sh", "-c", script};
    s.work = Work{.figure = "step_ms", .warmup = 2, .steps = steps};
    s.timeout_s = 60;
    return s;
  }
  void SetUp() override {
    auto d = core::PrivateDir::create("gpudoc-tune-test");
    ASSERT_TRUE(d) << d.error().message();
    dir_.emplace(std::move(*d));
  }
  std::optional<core::PrivateDir> dir_;
  int n_ = 0;
};

constexpr const char* kSteps =
    "i=0; while [ $i -lt 600 ]; do i=$((i+1)); echo \"::gpudoc {\\\"step_ms\\\": $i, \\\"loss\\\": 1}\"; sleep 0.05; "
    "done";

TEST_F(TrialTest, TheWorkAfterTheWarmUpThenStopped) {
  auto t = run_trial(spec(kSteps), env());
  ASSERT_TRUE(t) << t.error().message();
  EXPECT_EQ(t->status, TrialStatus::kOk);
  EXPECT_THAT(t->samples, ::testing::ElementsAre(3, 4, 5, 6, 7));
  EXPECT_GE(t->figure_samples, 7u);
  EXPECT_FALSE(t->loss.empty());
  ASSERT_TRUE(t->startup_s);
  EXPECT_LT(t->wall_s, 30);  // hang guard: normally under 2 s (the steps, then stopped)
}

TEST_F(TrialTest, AThroughputIsTurnedIntoTimePerUnit) {
  TrialSpec s = spec("while :; do echo '::gpudoc {\"samples_per_s\": 4}'; sleep 0.02; done", 3);
  s.work.figure = "samples_per_s";
  s.work.higher_is_better = true;
  auto t = run_trial(s, env());
  ASSERT_TRUE(t);
  EXPECT_THAT(t->samples, ::testing::ElementsAre(0.25, 0.25, 0.25));
}

TEST_F(TrialTest, TheEnvironmentReachesTheJob) {
  TrialSpec s = spec(
      "echo \"::gpudoc {\\\"step_ms\\\": $GPUDOC_TEST_MS}\"; echo '::gpudoc {\"step_ms\": 1}'; "
      "echo \"::gpudoc {\\\"step_ms\\\": $GPUDOC_TEST_MS}\"",
      1);
  s.work.warmup = 2;
  s.launch.env = {"GPUDOC_TEST_MS=42"};
  auto t = run_trial(s, env());
  ASSERT_TRUE(t);
  EXPECT_THAT(t->samples, ::testing::ElementsAre(42));
}

TEST_F(TrialTest, AFailureKeepsItsExitAndLastLines) {
  auto t = run_trial(spec("echo preparing; echo 'boom: bad flag' >&2; exit 3"), env());
  ASSERT_TRUE(t);
  EXPECT_EQ(t->status, TrialStatus::kFailed);
  EXPECT_EQ(t->exit_code, 3);
  EXPECT_THAT(t->message, HasSubstr("exit 3"));
  EXPECT_THAT(t->message, HasSubstr("boom: bad flag"));
}

TEST_F(TrialTest, OutOfMemoryIsToldApart) {
  auto t = run_trial(spec("echo 'torch.OutOfMemoryError: CUDA out of memory.' >&2; exit 1"), env());
  ASSERT_TRUE(t);
  EXPECT_EQ(t->status, TrialStatus::kOutOfMemory);
}

TEST_F(TrialTest, AHangTimesOut) {
  TrialSpec s = spec("sleep 60");
  s.timeout_s = 0.5;
  auto t = run_trial(s, env());
  ASSERT_TRUE(t);
  EXPECT_EQ(t->status, TrialStatus::kTimedOut);
  EXPECT_LT(t->wall_s, 30);  // hang guard: normally ~0.5 s (the timeout) and the stop's grace
}

TEST_F(TrialTest, EndingBeforeTheWarmUpIsOverIsTooFewSamples) {
  auto t = run_trial(spec("echo '::gpudoc {\"step_ms\": 1}'"), env());
  ASSERT_TRUE(t);
  EXPECT_EQ(t->status, TrialStatus::kTooFewSamples);
  EXPECT_THAT(t->message, HasSubstr("1 sample of step_ms"));
}

TEST_F(TrialTest, ACommandThatCannotStartIsAFailedTrial) {
  TrialSpec s = spec("");
  s.launch.argv = {"/nonexistent/gpudoc-tune-job"};
  auto t = run_trial(s, env());
  ASSERT_TRUE(t);
  EXPECT_EQ(t->status, TrialStatus::kFailed);
  EXPECT_THAT(t->message, HasSubstr("/nonexistent/gpudoc-tune-job"));
}

TEST_F(TrialTest, WallTimeWhenTheJobPrintsNoFigure) {
  TrialSpec s = spec("sleep 0.2");
  s.work.figure.clear();
  auto t = run_trial(s, env());
  ASSERT_TRUE(t);
  EXPECT_EQ(t->status, TrialStatus::kOk);
  ASSERT_EQ(t->samples.size(), 1u);
  EXPECT_GE(t->samples[0], 0.2);
}

TEST_F(TrialTest, ThePlainRunFindsTheFigure) {
  TrialSpec s = spec("echo '::gpudoc {\"loss\": 2}'; " + std::string(kSteps), 3);
  s.work = Work{.figure = "", .warmup = 1, .steps = 3, .detect = true};
  auto t = run_trial(s, env());
  ASSERT_TRUE(t);
  ASSERT_TRUE(t->figure);
  EXPECT_EQ(t->figure->name, "step_ms");
  EXPECT_THAT(t->samples, ::testing::ElementsAre(2, 3, 4));
}

// The diagnosis run's minimum length counts from the job's first figure, not from its start: a
// slow start-up (imports, the CUDA context) leaves the diagnosis nothing of the steady work.
TEST_F(TrialTest, TheDiagnosisRunLastsItsMinimumPastTheStartUp) {
  TrialSpec s = spec("sleep 1; " + std::string(kSteps), 3);
  s.min_run_s = 0.8;
  auto t = run_trial(s, env());
  ASSERT_TRUE(t);
  EXPECT_EQ(t->status, TrialStatus::kOk);
  ASSERT_TRUE(t->startup_s);
  EXPECT_GE(*t->startup_s, 1.0);
  EXPECT_GE(t->wall_s, *t->startup_s + 0.8);
  EXPECT_LT(t->wall_s, 30);  // hang guard: normally ~2 s
}

// What the shim reports ($GPUDOC_TUNE_REPORT): the patches that changed something, and what its
// observe patch saw.
TEST_F(TrialTest, TheShimsReportIsRead) {
  auto t = run_trial(spec("echo '{\"patch\": \"workers\", \"applied\": true, \"detail\": \"0 -> 8\"}' >> "
                          "\"$GPUDOC_TUNE_REPORT\"; echo '{\"seen\": \"torch\", \"version\": \"2.11\", "
                          "\"compile\": true}' >> \"$GPUDOC_TUNE_REPORT\"; echo '{\"seen\": \"dataloader\", "
                          "\"num_workers\": 2, \"pin_memory\": false, \"iterable\": false}' >> "
                          "\"$GPUDOC_TUNE_REPORT\"; " +
                          std::string(kSteps)),
                     env());
  ASSERT_TRUE(t);
  EXPECT_THAT(t->patches_applied, ::testing::ElementsAre("workers"));
  EXPECT_THAT(t->shim_notes, ::testing::ElementsAre("workers: 0 -> 8"));
  EXPECT_TRUE(t->seen.observed);
  EXPECT_TRUE(t->seen.compile);
  EXPECT_EQ(t->seen.torch_version, "2.11");
  EXPECT_EQ(t->seen.dataloaders, 1);
  EXPECT_EQ(t->seen.max_workers, 2);
  EXPECT_FALSE(t->seen.pinned);
}

TEST(ChooseFigure, StepTimesFirstThenThroughputsThenTheMetricAsked) {
  std::map<std::string, std::vector<double>> f = {{"loss", {1}}, {"tokens_per_s", {5}}, {"iter_ms", {3}}};
  EXPECT_EQ(choose_figure(f, std::nullopt)->name, "iter_ms");
  f.erase("iter_ms");
  auto c = choose_figure(f, std::nullopt);
  EXPECT_EQ(c->name, "tokens_per_s");
  EXPECT_TRUE(c->higher_is_better);
  EXPECT_EQ(choose_figure(f, std::string("loss"))->name, "loss");
  EXPECT_FALSE(choose_figure(f, std::string("nope")));
  EXPECT_FALSE(choose_figure({{"loss", {1}}}, std::nullopt));
}

TEST(Output, LastLinesAndOutOfMemory) {
  EXPECT_EQ(last_lines("a\nb\n\nc\nd\n", 2), "c\nd");
  EXPECT_EQ(last_lines("only", 3), "only");
  EXPECT_EQ(last_lines("", 3), "");
  EXPECT_TRUE(mentions_out_of_memory("RuntimeError: CUDA error: out of memory"));
  EXPECT_TRUE(mentions_out_of_memory("CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate"));
  EXPECT_FALSE(mentions_out_of_memory("memory is fine"));
}

}  // namespace
}  // namespace gpudoc::tune
