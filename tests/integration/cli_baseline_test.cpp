// `gpudoc baseline` end to end with command workloads (no GPU needed): record, check the same run
// (0), a 2x slower run (1), accuracy 0.95 -> 0.90 (1), an unknown name (2), --bench without a GPU
// (3), bad input (corrupt store, malformed metric lines, a crashing or hanging workload), JSON shapes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "cli_runner.hpp"
#include "support/temp_dir.hpp"

namespace gpudoc::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class CliBaseline : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = dir_ + "/store.db";
    // The workload: STEP_MS ACCURACY [EXIT]: six step lines around STEP_MS, one accuracy line,
    // a start event as the reference workloads print, and ordinary output around them.
    workload_ = dir_ + "/work.sh";
    std::ofstream(workload_)
        << "#!/bin/sh\n"
           "echo 'starting'\n"
           "echo '::gpudoc {\"event\": \"start\", \"workload\": \"test\"}'\n"
           "for j in 1 2 3 4 5 6; do echo \"::gpudoc {\\\"step\\\": $j, \\\"step_ms\\\": $1.$j}\"; done\n"
           "echo \"::gpudoc {\\\"accuracy\\\": $2}\"\n"
           "exit ${3:-0}\n";
    std::filesystem::permissions(workload_, std::filesystem::perms::owner_all);
  }

  // --store goes before " -- ": what follows belongs to the workload.
  std::string with_store(const std::string& args) const {
    const auto dd = args.find(" -- ");
    if (dd == std::string::npos) return args + " --store " + store_;
    return args.substr(0, dd) + " --store " + store_ + args.substr(dd);
  }
  CliRun gpudoc(const std::string& args) { return run_gpudoc(with_store(args)); }
  CliRun record(const std::string& name, const std::string& step, const std::string& acc,
                const std::string& extra = "") {
    return gpudoc("baseline record " + name + " " + extra + " -- " + workload_ + " " + step + " " + acc);
  }
  CliRun check(const std::string& name, const std::string& step, const std::string& acc,
               const std::string& extra = "") {
    return gpudoc("baseline check " + name + " " + extra + " -- " + workload_ + " " + step + " " + acc);
  }
  // stdout only, for JSON.
  CliRun json(const std::string& args) { return run_gpudoc_stdout(with_store(args)); }

  TempDir tmp_{"gpudoc-cli-baseline"};
  std::string dir_ = tmp_.str();
  std::string store_, workload_;
};

TEST_F(CliBaseline, RecordThenCheckTheSameRunPasses) {
  const CliRun rec = record("train", "10", "0.95");
  ASSERT_EQ(rec.exit_code, 0) << rec.output;
  EXPECT_THAT(rec.output, HasSubstr("recorded baseline 'train' (workload)"));
  EXPECT_THAT(rec.output, HasSubstr("step_ms"));
  EXPECT_THAT(rec.output, HasSubstr("accuracy"));
  EXPECT_THAT(rec.output, HasSubstr("wall_s"));
  EXPECT_THAT(rec.output, HasSubstr("starting"));  // the workload's own output passes through
  EXPECT_THAT(rec.output, HasSubstr("GPU figures (peak memory, utilization, energy) absent: no GPU"));

  const CliRun chk = check("train", "10", "0.95");
  EXPECT_EQ(chk.exit_code, 0) << chk.output;
  EXPECT_THAT(chk.output, HasSubstr("ok: every figure within its bound"));
  for (const char* col : {"figure", "baseline", "now", "change", "bound", "verdict"})
    EXPECT_THAT(chk.output, HasSubstr(col));
}

TEST_F(CliBaseline, CheckWithoutCommandRunsTheRecordedOne) {
  ASSERT_EQ(record("train", "10", "0.95").exit_code, 0);
  const CliRun chk = gpudoc("baseline check train");
  EXPECT_EQ(chk.exit_code, 0) << chk.output;
}

TEST_F(CliBaseline, TwiceAsSlowIsARegressionWithTheVerdictTable) {
  ASSERT_EQ(record("train", "10", "0.95").exit_code, 0);
  const CliRun chk = check("train", "20", "0.95");
  EXPECT_EQ(chk.exit_code, 1) << chk.output;
  EXPECT_THAT(chk.output, HasSubstr("REGRESSION"));
  EXPECT_THAT(chk.output, HasSubstr("step_ms"));
  EXPECT_THAT(chk.output, HasSubstr("+96.6 %"));  // 10.35 -> 20.35
  EXPECT_THAT(chk.output, HasSubstr("+10.0 %"));  // the bound for a time
  EXPECT_THAT(chk.output, HasSubstr("confirmed by a re-run"));
  EXPECT_THAT(chk.output, HasSubstr("GPU state now"));
}

TEST_F(CliBaseline, LowerAccuracyIsARegressionEvenWhenFaster) {
  ASSERT_EQ(record("train", "10", "0.95").exit_code, 0);
  const CliRun chk = check("train", "5", "0.90");
  EXPECT_EQ(chk.exit_code, 1) << chk.output;
  EXPECT_THAT(chk.output, HasSubstr("accuracy"));
  EXPECT_THAT(chk.output, HasSubstr("improved"));    // step_ms
  EXPECT_THAT(chk.output, HasSubstr("REGRESSION"));  // accuracy
}

TEST_F(CliBaseline, UnknownNameIsUsageError) {
  CliRun r = gpudoc("baseline check nope");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("no baseline named 'nope'"));
  ASSERT_EQ(record("train", "10", "0.95").exit_code, 0);
  r = gpudoc("baseline check nope");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("gpudoc baseline list"));
  EXPECT_EQ(gpudoc("baseline show nope").exit_code, 2);
  EXPECT_EQ(gpudoc("baseline history nope").exit_code, 2);
}

TEST_F(CliBaseline, BenchWithoutAGpuIsAnEnvironmentError) {
  if (run_gpudoc("bench --only launch.latency --quick --json").exit_code == 0) GTEST_SKIP() << "this machine has a GPU";
  const CliRun r = gpudoc("baseline record hw --bench hbm --quick");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_THAT(r.output, HasSubstr("a hardware baseline (--bench) needs a GPU"));
  EXPECT_THAT(gpudoc("baseline list").output, HasSubstr("no baselines yet"));
  // A comma-separated list of keys is one --bench value (it once failed to parse: "At Most 1
  // required but received 2").
  const CliRun two = gpudoc("baseline record hw --bench hbm.copy,gemm.bf16 --quick");
  EXPECT_EQ(two.exit_code, 3) << two.output;
  EXPECT_THAT(two.output, HasSubstr("a hardware baseline (--bench) needs a GPU"));
}

TEST_F(CliBaseline, NothingToRecordIsUsageError) {
  const CliRun r = gpudoc("baseline record x");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("nothing to record"));
}

TEST_F(CliBaseline, MalformedMetricLinesAreCountedNotFatal) {
  const std::string w = dir_ + "/bad.sh";
  std::ofstream(w)
      << "#!/bin/sh\necho '::gpudoc {\"step_ms\": 10'\necho '::gpudoc {\"step_ms\": 10, \"model\": \"x\"}'\n";
  std::filesystem::permissions(w, std::filesystem::perms::owner_all);
  const CliRun r = gpudoc("baseline record bad -- " + w);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("metrics stdout line 1: not valid JSON"));
  EXPECT_THAT(r.output, HasSubstr("\"model\" is not a finite number"));
  EXPECT_THAT(r.output, HasSubstr("1 malformed metrics line ignored"));
}

TEST_F(CliBaseline, MetricsFileFromTheEnvironment) {
  const std::string w = dir_ + "/file.sh";
  std::ofstream(w)
      << "#!/bin/sh\necho '{\"loss\": 0.25}' >> \"$GPUDOC_METRICS\"\necho '{\"loss\": 0.24}' >> \"$GPUDOC_METRICS\"\n";
  std::filesystem::permissions(w, std::filesystem::perms::owner_all);
  const CliRun r = json("baseline record f --json -- " + w);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  bool found = false;
  for (const auto& f : j["figures"])
    if (f["name"] == "loss") {
      found = true;
      EXPECT_EQ(f["samples"].size(), 6u);  // two a run, in the 3 golden runs of a workload
      EXPECT_EQ(f["direction"], "lower");
    }
  EXPECT_TRUE(found) << r.output;
}

TEST_F(CliBaseline, AFailingWorkloadRecordsNothingAndFailsTheCheck) {
  CliRun r = record("train", "10", "0.95", "");
  ASSERT_EQ(r.exit_code, 0);
  r = gpudoc("baseline record crash -- " + workload_ + " 10 0.95 7");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("the workload exited with code 7"));
  EXPECT_THAT(r.output, HasSubstr("nothing recorded"));
  EXPECT_THAT(gpudoc("baseline list").output, Not(HasSubstr("crash")));
  r = check("train", "10", "0.95 7");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("FAILED: the workload exited with code 7"));
}

TEST_F(CliBaseline, AHangingWorkloadIsStoppedByTimeout) {
  const auto t0 = std::chrono::steady_clock::now();
  const CliRun r = gpudoc("baseline record hang --timeout 1 -- sleep 60");
  // hang guard: normally ~1.1 s (the 1 s timeout; the workload sleeps 60 s); 10x+ margin
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 20);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_THAT(r.output, HasSubstr("did not finish within --timeout 1 s"));
}

TEST_F(CliBaseline, ACorruptStoreIsBadInputNamingTheFile) {
  std::ofstream(store_) << std::string(8192, 'z');
  const CliRun r = record("train", "10", "0.95");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr(store_));
  EXPECT_THAT(r.output, HasSubstr("not a gpudoc store"));
}

TEST_F(CliBaseline, ConfigThresholdsApply) {
  ASSERT_EQ(record("train", "10", "0.95").exit_code, 0);
  const std::string cfg = dir_ + "/cfg.json";
  std::ofstream(cfg) << R"({"metrics": {"step_ms": {"threshold_percent": 200}}})";
  CliRun r = check("train", "20", "0.95", "--config " + cfg);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::ofstream(cfg) << R"({"metrics": {"step_ms": {"direction": "up"}}})";
  r = check("train", "10", "0.95", "--config " + cfg);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("metrics.step_ms.direction"));
}

TEST_F(CliBaseline, JsonShapes) {
  CliRun r = json("baseline record train --json -- " + workload_ + " 10 0.95");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto j = nlohmann::json::parse(r.output);  // the workload's output went to stderr
  EXPECT_EQ(j["baseline"], "train");
  EXPECT_EQ(j["kinds"], "workload");
  EXPECT_TRUE(j["run_id"].is_number());
  EXPECT_TRUE(j["machine"]["gpus"].is_array());
  EXPECT_EQ(j["details"]["absent"]["gpu_memory_peak_bytes"].get<std::string>().rfind("no GPU", 0), 0u);

  r = json("baseline check train --json -- " + workload_ + " 20 0.95");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["verdict"], "regression");
  EXPECT_EQ(j["exit_code"], 1);
  EXPECT_FALSE(j["confirmation"].is_null());
  bool step = false;
  for (const auto& f : j["figures"]) {
    for (const char* k : {"name", "baseline", "now", "change_percent", "bound_percent", "verdict", "direction", "note"})
      EXPECT_TRUE(f.contains(k)) << k;
    if (f["name"] == "step_ms") {
      step = true;
      EXPECT_EQ(f["verdict"], "regression");
      EXPECT_TRUE(f["confirmed"].get<bool>());
      EXPECT_NEAR(f["baseline"].get<double>(), 10.35, 1e-9);
    }
  }
  EXPECT_TRUE(step);

  r = json("baseline list --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  j = nlohmann::json::parse(r.output);
  ASSERT_EQ(j["baselines"].size(), 1u);
  EXPECT_EQ(j["baselines"][0]["name"], "train");
  EXPECT_EQ(j["baselines"][0]["last_check"]["verdict"], "regression");

  r = json("baseline show train --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["spec"]["command"][0], workload_);
  EXPECT_FALSE(j["figures"].empty());

  r = json("baseline history train --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  j = nlohmann::json::parse(r.output);
  ASSERT_EQ(j["runs"].size(), 3u);  // record, check, confirm
  EXPECT_EQ(j["runs"][0]["role"], "record");
  EXPECT_TRUE(j["runs"][0]["golden"].get<bool>());
  EXPECT_EQ(j["runs"][1]["verdict"], "regression");
  EXPECT_NEAR(j["runs"][1]["medians"]["step_ms"].get<double>(), 20.35, 1e-9);

  r = json("baseline check nope --json");
  EXPECT_EQ(r.exit_code, 2);
  j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["error"]["kind"], "usage");
}

TEST_F(CliBaseline, ListShowHistoryForPeople) {
  ASSERT_EQ(record("train", "10", "0.95").exit_code, 0);
  ASSERT_EQ(check("train", "10", "0.95").exit_code, 0);
  ASSERT_EQ(check("train", "11", "0.95").exit_code, 0);
  CliRun r = gpudoc("baseline list");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("train"));
  EXPECT_THAT(r.output, HasSubstr("ok"));
  r = gpudoc("baseline show train");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("workload: " + workload_));
  EXPECT_THAT(r.output, HasSubstr("default: time"));
  r = gpudoc("baseline history train");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("3 runs"));
  EXPECT_THAT(r.output, HasSubstr("trend"));
  EXPECT_THAT(r.output, HasSubstr("▁"));  // a sparkline
}

// The page's embedded data, parsed back (the plots themselves are checked in a browser:
// tests/integration/html_browser_test.cpp).
nlohmann::json page_data(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string open = "<script type=\"application/json\" id=\"gpudoc-data\">";
  const auto a = page.find(open);
  if (a == std::string::npos) return nullptr;
  const auto b = page.find("</script>", a);
  return nlohmann::json::parse(page.substr(a + open.size(), b - a - open.size()));
}

TEST_F(CliBaseline, HistoryHtmlDrawsEveryRunWithTheBaselineTheBoundAndTheVerdicts) {
  ASSERT_EQ(record("train", "10", "0.95").exit_code, 0);
  ASSERT_EQ(check("train", "10", "0.95").exit_code, 0);
  ASSERT_EQ(check("train", "20", "0.95").exit_code, 1);  // regression, confirmed by a re-run
  const std::string page = dir_ + "/history.html";
  CliRun r = gpudoc("baseline history train --html " + page);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("HTML page: " + page));
  EXPECT_THAT(r.output, HasSubstr("trend"));  // the terminal view is still printed
  const auto d = page_data(page);
  ASSERT_TRUE(d.is_object());
  EXPECT_EQ(d["baseline"], "train");
  ASSERT_EQ(d["runs"].size(), 4u);  // record, check, check, confirm
  EXPECT_EQ(d["runs"][0]["role"], "record");
  EXPECT_TRUE(d["runs"][0]["golden"].get<bool>());
  EXPECT_EQ(d["runs"][3]["role"], "confirm");
  const nlohmann::json* step = nullptr;
  for (const auto& f : d["figures"])
    if (f["name"] == "step_ms") step = &f;
  ASSERT_NE(step, nullptr);
  EXPECT_EQ((*step)["direction"], "lower");
  EXPECT_NEAR((*step)["baseline"].get<double>(), 10.35, 1e-9);
  EXPECT_NEAR((*step)["bound"].get<double>(), 10.35 * 1.10, 1e-9);  // time: 10 %, above the 2x noise
  EXPECT_EQ((*step)["verdicts"], nlohmann::json({"", "ok", "regression", ""}));
  EXPECT_NEAR((*step)["values"][2].get<double>(), 20.35, 1e-9);

  // --json names the page; an unwritable FILE is an I/O error (exit 2).
  r = json("baseline history train --json --html " + page);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(r.output)["html"], page);
  r = gpudoc("baseline history train --html " + dir_ + "/no/such/dir/h.html");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("writing " + dir_ + "/no/such/dir/h.html"));
}

TEST_F(CliBaseline, StoreFromTheEnvironment) {
  const std::string env_store = dir_ + "/env.db";
  const std::string cmd = "GPUDOC_STORE=" + env_store + " " + std::string(GPUDOC_BINARY_DIR) +
                          "/src/cli/gpudoc baseline record e -- " + workload_ + " 10 0.9 >/dev/null 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_TRUE(std::filesystem::exists(env_store));
}

}  // namespace
}  // namespace gpudoc::testing
