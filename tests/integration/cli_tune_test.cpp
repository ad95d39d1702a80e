// gpudoc tune end to end on real child processes whose speed depends on their environment
// (tests/integration/tune/job.py: a loop that times its own steps): the real improvement is kept,
// a change that does nothing is not (the negative control), a failing or out-of-memory trial is
// skipped and reported, the budget holds (gpudoc's own accounting; the wall-clock bound is a hang
// guard only), the shim's patch through the torch stand-in, the JSON document, the HTML page, the
// lines to apply, --baseline and the usage errors. No GPU: the fake backend stands in for the
// diagnosis, or none is read, and the changes are named with --only.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "support/temp_dir.hpp"

namespace gpudoc::testing {
namespace {

std::string job() { return std::string("python3 ") + GPUDOC_SOURCE_DIR + "/tests/integration/tune/job.py"; }

// `env -u`: the job's speed must depend on what gpudoc sets, not on the test's own environment.
const std::string kClean = "env -u OMP_NUM_THREADS -u PYTORCH_CUDA_ALLOC_CONF -u CUDA_MODULE_LOADING";

nlohmann::json tune_json(const std::string& args, int* code, const std::string& prefix = kClean) {
  const CliRun r = run_gpudoc_stdout("tune --json " + args, prefix);
  *code = r.exit_code;
  auto j = nlohmann::json::parse(r.output, nullptr, false);
  return j.is_discarded() ? nlohmann::json::object({{"unparsed", r.output}}) : j;
}

const nlohmann::json* arm(const nlohmann::json& report, const std::string& id) {
  for (const auto& l : report["layers"])
    for (const auto& a : l["arms"])
      if (a["change"]["id"] == id) return &a;
  return nullptr;
}

TEST(CliTune, TheRealImprovementIsKeptAndTheNullChangeIsNot) {
  int code = -1;
  const auto r = tune_json("--backend fake:1 --budget 1 --steps 12 --only omp_threads_1,alloc_expandable -- " + job() +
                               " --fast OMP_NUM_THREADS=1",
                           &code);
  ASSERT_EQ(code, 0) << r.dump(1);
  const auto* omp = arm(r, "omp_threads_1");
  const auto* alloc = arm(r, "alloc_expandable");
  ASSERT_NE(omp, nullptr) << r.dump(1);
  ASSERT_NE(alloc, nullptr) << r.dump(1);
  EXPECT_EQ((*omp)["outcome"], "kept") << (*omp)["reason"];
  EXPECT_TRUE((*omp)["confirmation"]["confirmed"].get<bool>());
  EXPECT_GT((*omp)["overall"]["interval"]["low_percent"].get<double>(), 0.0);
  EXPECT_EQ((*alloc)["outcome"], "not kept") << (*alloc)["reason"];
  EXPECT_FALSE((*alloc)["kept"].get<bool>());
  // the null change is measured on top of the kept one
  EXPECT_EQ(r["layers"][1]["base"], nlohmann::json::array({"omp_threads_1"}));
  ASSERT_EQ(r["kept"].size(), 1u);
  EXPECT_EQ(r["overall_from"], "omp_threads_1");
  EXPECT_EQ(r["apply"], nlohmann::json::array({"export NCCL_NVLS_ENABLE=0", "export OMP_NUM_THREADS=1",
                                               job() + " --fast OMP_NUM_THREADS=1"}));
  EXPECT_TRUE(r["diagnosis"]["diagnosed"].get<bool>());  // the fake GPU's steady load
}

// The negative control alone: nothing worth changing, and the report says so.
TEST(CliTune, NothingWorthChangingIsSaid) {
  const CliRun r = run_gpudoc("--backend fake:1 tune --budget 0.5 --steps 10 --only alloc_expandable -- " + job());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Nothing worth changing"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("alloc_expandable"), std::string::npos);
  EXPECT_EQ(r.output.find("To apply"), std::string::npos);
}

TEST(CliTune, AFailingTrialIsSkippedAndReported) {
  int code = -1;
  const auto r = tune_json("--budget 1 --steps 10 --only omp_threads_1,alloc_expandable -- " + job() +
                               " --fail OMP_NUM_THREADS=1 --oom PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
                           &code);
  ASSERT_EQ(code, 0) << r.dump(1);
  const auto* omp = arm(r, "omp_threads_1");
  const auto* alloc = arm(r, "alloc_expandable");
  ASSERT_TRUE(omp != nullptr && alloc != nullptr) << r.dump(1);
  EXPECT_EQ((*omp)["outcome"], "failed");
  EXPECT_NE((*omp)["reason"].get<std::string>().find("exit 1"), std::string::npos) << (*omp)["reason"];
  EXPECT_NE((*omp)["reason"].get<std::string>().find("failing on purpose"), std::string::npos);
  EXPECT_EQ((*omp)["trials"].size(), 1u);  // skipped after its first failure
  EXPECT_EQ((*alloc)["outcome"], "failed");
  EXPECT_EQ((*alloc)["trials"][0]["status"], "out of memory");
  EXPECT_TRUE(r["kept"].empty());
  EXPECT_FALSE(r["diagnosis"]["diagnosed"].get<bool>() && r["diagnosis"]["why_not"] == "");
}

// The budget holds by gpudoc's own account (±10 %, a stop grace beside it), with a trial that would
// hang for ever; the wall clock bounds the test only as a hang guard.
TEST(CliTune, TheBudgetHoldsWithAHangingTrial) {
  int code = -1;
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = tune_json(
      "--budget 0.4 --steps 10 --only omp_threads_1,alloc_expandable -- " + job() + " --hang OMP_NUM_THREADS=1", &code);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(code, 0) << r.dump(1);
  EXPECT_LE(r["budget"]["spent_s"].get<double>(), 24 * 1.1 + 3) << r["budget"].dump();
  EXPECT_LT(wall, 240);
  const auto* omp = arm(r, "omp_threads_1");
  ASSERT_NE(omp, nullptr);
  EXPECT_EQ((*omp)["outcome"], "failed");
  EXPECT_EQ((*omp)["trials"][0]["status"], "timed out");
  // the split between the layers is planned and reported
  ASSERT_FALSE(r["layers"].empty());
  EXPECT_GT(r["layers"][0]["planned_s"].get<double>(), 0.0);
  EXPECT_GT(r["budget"]["plain_s"].get<double>(), 0.0);
}

TEST(CliTune, TheShimsPatchIsKeptWithItsLine) {
  int code = -1;
  const std::string fake = std::string(GPUDOC_SOURCE_DIR) + "/tests/integration/tune/fake_torch";
  const auto r = tune_json("--budget 1 --steps 10 --only loader_workers -- " + job() + " --loader", &code,
                           kClean + " PYTHONPATH=" + fake);
  ASSERT_EQ(code, 0) << r.dump(1);
  const auto* loader = arm(r, "loader_workers");
  ASSERT_NE(loader, nullptr) << r.dump(1);
  EXPECT_EQ((*loader)["outcome"], "kept") << (*loader)["reason"];
  EXPECT_EQ(r["plain"]["seen"]["dataloaders"], 1);  // what the observing shim saw in the plain run
  EXPECT_EQ(r["plain"]["seen"]["max_workers"], 0);
  EXPECT_NE((*loader)["trials"][0]["patches_applied"], nlohmann::json::array());
  const std::string line = r["apply"].back();
  EXPECT_EQ(line.rfind("python3 -m gpudoc.tune --patch workers=", 0), 0u) << line;
  EXPECT_NE(line.find(",persistent_workers -- "), std::string::npos) << line;
}

// What the plain run showed the job does not do (under the shim's observe patch) rules a framework
// change out before any trial: this job imports no torch at all.
TEST(CliTune, WhatTheJobDoesNotUseIsNotTried) {
  int code = -1;
  const std::string fake = std::string(GPUDOC_SOURCE_DIR) + "/tests/integration/tune/fake_torch";
  const auto r =
      tune_json("--budget 0.5 --steps 10 --only loader_workers -- " + job(), &code, kClean + " PYTHONPATH=" + fake);
  ASSERT_EQ(code, 0) << r.dump(1);
  EXPECT_EQ(arm(r, "loader_workers"), nullptr);
  bool said = false;
  for (const auto& n : r["not_tried"])
    said = said || (n["id"] == "loader_workers" && n["why"] == "the job did not import torch in its plain run");
  EXPECT_TRUE(said) << r["not_tried"].dump(1);
  EXPECT_FALSE(r["plain"]["seen"]["torch"].get<bool>());
}

TEST(CliTune, TheJsonDocument) {
  int code = -1;
  const auto r = tune_json("--budget 0.5 --steps 8 --only omp_threads_1 -- " + job(), &code);
  ASSERT_EQ(code, 0) << r.dump(1);
  EXPECT_EQ(r["schema"], "gpudoc.tune/1");
  for (const char* key :
       {"command", "work", "rules", "plain", "diagnosis", "layers", "kept", "overall", "overall_from", "final_trials",
        "apply", "not_tried", "advice", "budget", "trials", "stopped_by", "exit_code"})
    EXPECT_TRUE(r.contains(key)) << key;
  EXPECT_EQ(r["work"]["figure"], "step_ms");
  EXPECT_EQ(r["work"]["steps"], 8);
  EXPECT_EQ(r["rules"]["min_gain_percent"], 3.0);
  const auto& layer = r["layers"][0];
  EXPECT_EQ(layer["layer"], "process");
  for (const char* key : {"title", "base", "planned_s", "spent_s", "note", "reference", "arms"})
    EXPECT_TRUE(layer.contains(key)) << key;
  const auto& a = layer["arms"][0];
  for (const char* key : {"change", "outcome", "kept", "reason", "first", "overall", "confirmation", "loss", "trials"})
    EXPECT_TRUE(a.contains(key)) << key;
  const auto& first = a["first"];
  for (const char* key : {"speedup_percent", "interval", "faster", "slower", "unchanged_trials", "changed_trials",
                          "unchanged_trial_noise_percent", "unchanged_sample_noise_percent", "gate"})
    EXPECT_TRUE(first.contains(key)) << key;
  const auto& t = a["trials"][0];
  for (const char* key : {"number", "arm", "block", "status", "exit_code", "wall_s", "startup_s", "median", "samples",
                          "loss", "patches_applied", "message"})
    EXPECT_TRUE(t.contains(key)) << key;
  EXPECT_EQ(t["samples"].size(), 8u);
  bool ncc = false;
  for (const auto& n : r["not_tried"]) ncc = ncc || (n["layer"] == "nccl" && !n["why"].get<std::string>().empty());
  EXPECT_TRUE(ncc);
}

TEST(CliTune, AJobWithoutFiguresIsTimedWhole) {
  int code = -1;
  const auto r =
      tune_json("--budget 0.5 --only omp_threads_1 -- " + job() + " --silent --steps 10 --step-ms 10", &code);
  ASSERT_EQ(code, 0) << r.dump(1);
  EXPECT_TRUE(r["work"]["figure"].is_null());
  EXPECT_EQ(r["work"]["measure"], "wall time of the whole run");
  EXPECT_EQ(r["layers"][0]["reference"][0]["samples"].size(), 1u);
}

TEST(CliTune, PrintGivesOnlyTheLinesAndHtmlAPage) {
  TempDir tmp("gpudoc-tune-html");
  const std::string page = tmp.file("tune.html");
  const CliRun r =
      run_gpudoc_stdout("tune --print --html " + page + " --budget 0.5 --steps 10 --only omp_threads_1 -- " + job() +
                            " --fast OMP_NUM_THREADS=1",
                        kClean);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "export NCCL_NVLS_ENABLE=0\nexport OMP_NUM_THREADS=1\n" + job() + " --fast OMP_NUM_THREADS=1\n");
  const std::string html = slurp(page);
  EXPECT_NE(html.find("id=\"gpudoc-data\""), std::string::npos);
  EXPECT_NE(html.find("export OMP_NUM_THREADS=1"), std::string::npos);
  EXPECT_NE(html.find("uPlot"), std::string::npos);
}

// A page that cannot be written (its folder is missing) is reported, exit 2, and the report that
// minutes of trials made is printed all the same.
TEST(CliTune, APageThatCannotBeWrittenLosesNoneOfTheReport) {
  TempDir tmp("gpudoc-tune-html");
  const std::string page = tmp.file("no-such-folder/tune.html");
  const CliRun r = run_gpudoc("--backend fake:1 tune --html " + page +
                              " --budget 0.3 --steps 10 --only alloc_expandable -- " + job());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(page), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Nothing worth changing"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("HTML page:"), std::string::npos) << r.output;
}

TEST(CliTune, BaselineRecordsTheTunedJob) {
  TempDir tmp("gpudoc-tune-store");
  const std::string store = tmp.file("s.db");
  const CliRun r = run_gpudoc_stdout("tune --baseline tuned --store " + store +
                                         " --json --budget 0.5 --steps 8 --only omp_threads_1 -- " + job() +
                                         " --fast OMP_NUM_THREADS=1 --steps 20",
                                     kClean);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  ASSERT_TRUE(j.contains("baseline")) << j.dump(1);
  EXPECT_GT(j["baseline"]["run_id"].get<int>(), 0);
  const auto cmd = j["baseline"]["command"];
  EXPECT_EQ(cmd[0], "env");
  EXPECT_NE(std::find(cmd.begin(), cmd.end(), "OMP_NUM_THREADS=1"), cmd.end());
  const CliRun list = run_gpudoc("baseline list --store " + store);
  EXPECT_NE(list.output.find("tuned"), std::string::npos) << list.output;
}

TEST(CliTune, UsageErrorsAndAJobThatCannotBeTuned) {
  EXPECT_EQ(run_gpudoc("tune").exit_code, 2);
  const CliRun only = run_gpudoc("tune --only warp_speed -- true");
  EXPECT_EQ(only.exit_code, 2);
  EXPECT_NE(only.output.find("--only warp_speed: no such change"), std::string::npos) << only.output;
  EXPECT_EQ(run_gpudoc("tune --apply --print -- true").exit_code, 2);
  const CliRun metric = run_gpudoc("tune --metric loss_thing -- true");
  EXPECT_EQ(metric.exit_code, 2) << metric.output;
  const CliRun fails = run_gpudoc("tune --budget 0.2 -- sh -c 'echo broken >&2; exit 4'");
  EXPECT_EQ(fails.exit_code, 2) << fails.output;
  EXPECT_NE(fails.output.find("the job without any change failed (exit 4"), std::string::npos) << fails.output;
  EXPECT_NE(fails.output.find("broken"), std::string::npos) << fails.output;
  const CliRun silent = run_gpudoc("tune --budget 0.1 -- sleep 60");
  EXPECT_EQ(silent.exit_code, 2) << silent.output;
  EXPECT_NE(silent.output.find("printed no figure"), std::string::npos) << silent.output;
}

TEST(CliTune, ApplyRunsTheTunedJobWhole) {
  const CliRun r = run_gpudoc_stdout(
      "tune --apply --budget 0.5 --steps 8 --only omp_threads_1 -- " + job() + " --fast OMP_NUM_THREADS=1 --steps 25",
      kClean);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("To apply"), std::string::npos);
  EXPECT_NE(r.output.find("::gpudoc {\"step\": 25,"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace gpudoc::testing
