// `gpudoc diagnose` and `gpudoc doctor` end to end on the real H200 traces in tests/data: exit
// codes, the JSON document, bad input named by file and line, and doctor's replay without a GPU.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "support/temp_dir.hpp"

namespace {

using gpudoc::testing::CliRun;
using gpudoc::testing::data_file;
using gpudoc::testing::run_gpudoc;

using gpudoc::testing::nvml_present;
using gpudoc::testing::run_gpudoc_stdout;

// stdout only (the JSON document), stderr discarded.
CliRun run_stdout(const std::string& args, const std::string& env = "") { return run_gpudoc_stdout(args, env); }

// A file with `content`, in a private folder of its own (never a guessable name in $TMPDIR).
struct TempFile : gpudoc::testing::TempFile {
  explicit TempFile(const std::string& content, const std::string& ext = ".jsonl")
      : gpudoc::testing::TempFile("input" + ext, content) {}
};

bool has(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

std::vector<std::string> ids(const nlohmann::json& j) {
  std::vector<std::string> out;
  for (const auto& f : j["findings"]) out.push_back(f["id"]);
  return out;
}

bool contains_id(const nlohmann::json& j, const std::string& id) {
  auto v = ids(j);
  return std::find(v.begin(), v.end(), id) != v.end();
}

TEST(CliDiagnose, SawtoothTraceIsAWarningFindingWithEvidence) {
  auto r = run_stdout("diagnose " + data_file("sawtooth_p1000_d50.jsonl") + " --json");
  ASSERT_EQ(r.exit_code, 1) << r.output;
  auto j = nlohmann::json::parse(r.output);
  ASSERT_TRUE(j["findings"].is_array());
  ASSERT_TRUE(contains_id(j, "sawtooth")) << j.dump(2);
  EXPECT_EQ(j["threshold"], "warning");
  EXPECT_EQ(j["exit_code"], 1);
  for (const auto& f : j["findings"]) {
    EXPECT_TRUE(f.contains("id") && f.contains("severity") && f.contains("gpus") && f.contains("window")) << f.dump();
    EXPECT_TRUE(f.contains("evidence") && f.contains("next_steps") && f.contains("confidence")) << f.dump();
  }
  EXPECT_FALSE(has(r.output, "\"traces\""));  // one trace: the diagnosis itself
}

TEST(CliDiagnose, TextReportNamesTheFindingWithChartAndNextSteps) {
  auto r = run_gpudoc("diagnose " + data_file("sawtooth_p1000_d50.jsonl"));
  ASSERT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "gpudoc diagnose — sawtooth_p1000_d50.jsonl")) << r.output;
  EXPECT_TRUE(has(r.output, "GPU 0 NVIDIA H200")) << r.output;
  EXPECT_TRUE(has(r.output, " util ")) << r.output;
  EXPECT_TRUE(has(r.output, "sawtooth")) << r.output;
  EXPECT_TRUE(has(r.output, "next steps:")) << r.output;
  EXPECT_TRUE(has(r.output, "at or above warning (exit 1)")) << r.output;
  EXPECT_FALSE(has(r.output, "\x1b[")) << "no colour when stdout is not a terminal";
}

TEST(CliDiagnose, SaturatedGemmHasNoWarningAndThresholdDecidesTheExitCode) {
  auto r = run_stdout("diagnose " + data_file("gemm_saturated.jsonl") + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto j = nlohmann::json::parse(r.output);
  EXPECT_TRUE(contains_id(j, "healthy")) << j.dump(2);
  // healthy is info: with --min-severity info it counts.
  EXPECT_EQ(run_stdout("diagnose " + data_file("gemm_saturated.jsonl") + " --min-severity info").exit_code, 1);
  // the sawtooth is below critical (unless it lost most of the GPU's time, which this one did not).
  auto s = run_stdout("diagnose " + data_file("sawtooth_p1000_d50.jsonl") + " --json --min-severity critical");
  auto sj = nlohmann::json::parse(s.output);
  EXPECT_EQ(s.exit_code, sj["max_severity"] == "critical" ? 1 : 0) << s.output;
}

TEST(CliDiagnose, SeveralTracesGiveOneDocumentWithTraces) {
  auto r = run_stdout("diagnose " + data_file("gemm_saturated.jsonl") + " " + data_file("sawtooth_p1000_d50.jsonl") +
                      " --json");
  ASSERT_EQ(r.exit_code, 1) << r.output;
  auto j = nlohmann::json::parse(r.output);
  ASSERT_EQ(j["traces"].size(), 2u);
  EXPECT_TRUE(j["traces"][0]["findings"].is_array());
  bool saw = false;
  for (const auto& f : j["findings"]) {
    EXPECT_TRUE(f.contains("trace")) << f.dump();
    if (f["id"] == "sawtooth") {
      saw = true;
      EXPECT_TRUE(has(f["trace"].get<std::string>(), "sawtooth_p1000_d50.jsonl"));
    }
  }
  EXPECT_TRUE(saw) << j.dump(2);
}

TEST(CliDiagnose, TwoGpuStragglerTrace) {
  auto r = run_stdout("diagnose " + data_file("allreduce_straggler_slow1.jsonl") + " --json");
  auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains_id(j, "pulse")) << j.dump(2);
}

TEST(CliDiagnose, NvidiaSmiCsvIsReadAndWhatItLacksIsNamed) {
  std::string csv = "timestamp, index, utilization.gpu [%], memory.used [MiB], power.draw [W]\n";
  for (int i = 0; i < 300; ++i)
    csv += "2026/11/29 12:00:" + std::string(i / 10 < 10 ? "0" : "") + std::to_string(i / 10) + "." +
           std::to_string(i % 10) + "00, 0, " + (i % 10 < 5 ? "100 %" : "0 %") + ", 20000 MiB, " +
           (i % 10 < 5 ? "500.0 W" : "120.0 W") + "\n";
  TempFile f(csv, ".csv");
  auto r = run_stdout("diagnose " + f.path() + " --json");
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.output;
  auto j = nlohmann::json::parse(r.output);
  EXPECT_TRUE(j["findings"].is_array());
  auto text = run_gpudoc("diagnose " + f.path());
  EXPECT_TRUE(has(text.output, "Could not see:")) << text.output;
}

TEST(CliDiagnose, BadInputExitsTwoNamingFileAndLine) {
  TempFile empty("");
  auto r = run_gpudoc("diagnose " + empty.path());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, empty.path())) << r.output;

  std::string head =
      std::string(R"({"type":"header","format":"gpudoc-trace","version":1,"gpudoc_version":"0.1.0","host":"n",)") +
      R"("start_unix_ns":1780000000000000000,"backend":"nvml","gpus":[{"index":0,"name":"NVIDIA H200","uuid":"GPU-a"}],)" +
      R"("metrics":[{"name":"power_watts","unit":"W","group":"fast","period_ms":100}]})" + "\n";
  TempFile broken(head + R"({"type":"sample","t":0.1,"gpu":0,"power_watts":300})" + "\n" +
                  "{\"type\":\"sample\",\"t\":0.2,\"gpu\n");
  r = run_gpudoc("diagnose " + broken.path());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, broken.path() + " line 3")) << r.output;

  auto json = run_stdout("diagnose " + broken.path() + " --json");
  EXPECT_EQ(json.exit_code, 2);
  auto j = nlohmann::json::parse(json.output);
  EXPECT_EQ(j["error"]["exit_code"], 2);

  r = run_gpudoc("diagnose /nonexistent/run.jsonl");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "/nonexistent/run.jsonl")) << r.output;
}

TEST(CliDiagnose, ATraceCutOffMidLineIsDiagnosedAndTheCutIsShown) {
  // A full disk cut the last line of a real recording: the rest is diagnosed as before.
  std::ifstream in(data_file("sawtooth_p1000_d50.jsonl"), std::ios::binary);
  std::string whole((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  TempFile cut(whole.substr(0, whole.size() - 30));
  auto r = run_gpudoc("diagnose " + cut.path());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "dropped: " + cut.path() + " line ")) << r.output;
  EXPECT_TRUE(has(r.output, "the recording was cut off in the middle of this line")) << r.output;
  EXPECT_TRUE(has(r.output, "sawtooth")) << r.output;
  auto j = nlohmann::json::parse(run_stdout("diagnose " + cut.path() + " --json").output);
  ASSERT_EQ(j["warnings"].size(), 1u);
  EXPECT_TRUE(has(j["warnings"][0], cut.path() + " line ")) << j["warnings"];
  EXPECT_TRUE(contains_id(j, "sawtooth"));
}

TEST(CliDiagnose, RowsACsvImportDroppedAreShown) {
  std::string csv = "timestamp, index, utilization.gpu [%], power.draw [W]\n";
  for (int i = 0; i < 100; ++i)
    csv += "2026/01/02 03:04:" + std::to_string(10 + i / 10) + "." + std::to_string(i % 10) + "00, 0, 99 %, 600 W\n";
  csv += "2026/01/02 03:04:00.000, 0, 0 %, 80 W\n";  // line 102: back in time
  TempFile f(csv, ".csv");
  const std::string back = f.path() + ": 1 row skipped, its time went backwards (clock change?): line 102";
  auto r = run_gpudoc("diagnose " + f.path());
  EXPECT_TRUE(has(r.output, "dropped: " + back)) << r.output;
  auto j = nlohmann::json::parse(run_stdout("diagnose " + f.path() + " --json").output);
  EXPECT_EQ(j["warnings"], nlohmann::json::array({back}));
}

TEST(CliDiagnose, NamesFromTheTraceCannotDriveTheTerminal) {
  std::ifstream in(data_file("contention_turns.jsonl"), std::ios::binary);
  std::string t((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto replace_all = [&](const std::string& from, const std::string& to) {
    for (std::size_t p = t.find(from); p != std::string::npos; p = t.find(from, p + to.size()))
      t.replace(p, from.size(), to);
  };
  replace_all(R"("host":"vm")", R"("host":"vm\u001b]0;owned\u0007")");
  replace_all(R"("name":"NVIDIA H200")", R"("name":"H200\u001b[2J")");
  replace_all(R"("name":"python3")", R"("name":"py\u001b[31mthon\u009b")");
  TempFile f(t);
  auto r = run_gpudoc("diagnose " + f.path());
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.output;
  EXPECT_FALSE(has(r.output, "\x1b")) << r.output;
  EXPECT_FALSE(has(r.output, "\xc2\x9b")) << r.output;
  EXPECT_TRUE(has(r.output, "vm\\x1b]0;owned\\x07")) << r.output;
  EXPECT_TRUE(has(r.output, "H200\\x1b[2J")) << r.output;
  EXPECT_TRUE(has(r.output, "py\\x1b[31mthon\\u{009b}")) << r.output;  // the staircase names the processes
  auto j = nlohmann::json::parse(run_stdout("diagnose " + f.path() + " --json").output);
  EXPECT_EQ(j["gpus"][0]["name"], "H200\x1b[2J");
}

TEST(CliDiagnose, UsageErrors) {
  auto r = run_gpudoc("diagnose");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(has(r.output, "nothing to diagnose")) << r.output;
  r = run_gpudoc("diagnose " + data_file("idle.jsonl") + " --min-severity loud");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(has(r.output, "--min-severity loud")) << r.output;
  r = run_gpudoc("diagnose " + data_file("idle.jsonl") + " --window 0");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = run_gpudoc("diagnose " + data_file("idle.jsonl") + " --duration 5");
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

TEST(CliDiagnose, HelpTeaches) {
  auto r = run_gpudoc("diagnose --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* s :
       {"Examples:", "gpudoc diagnose run.jsonl", "--live", "-- python3 train.py", "Exit codes:", "sawtooth", "plateau",
        "memory_bound", "pulse", "staircase", "memory_growth", "throttled", "healthy", "idle"})
    EXPECT_TRUE(has(r.output, s)) << s << "\n" << r.output;
  r = run_gpudoc("doctor --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(has(r.output, "replay")) << r.output;
  r = run_gpudoc("--help");
  EXPECT_TRUE(has(r.output, "gpudoc doctor")) << r.output;
}

TEST(CliDiagnose, HtmlPageIsWritten) {
  TempFile page("", ".html");
  auto r = run_gpudoc("diagnose " + data_file("sawtooth_p1000_d50.jsonl") + " --html " + page.path());
  ASSERT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "wrote " + page.path())) << r.output;
  std::ifstream in(page.path());
  std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(has(html, "id=\"gpudoc-data\""));
  EXPECT_TRUE(has(html, "<code>sawtooth</code>"));
  EXPECT_TRUE(has(html, "uPlot"));
  EXPECT_FALSE(has(html, "src=\"http"));
  auto bad = run_gpudoc("diagnose " + data_file("idle.jsonl") + " --html /nonexistent/dir/x.html");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_TRUE(has(bad.output, "/nonexistent/dir/x.html")) << bad.output;
}

TEST(CliDiagnose, LiveWithoutAGpuIsAnEnvironmentError) {
  if (nvml_present()) GTEST_SKIP() << "NVML is present: the live path is tested on the GPU machine";
  auto r = run_gpudoc("diagnose --live --duration 1");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_TRUE(has(r.output, "libnvidia-ml.so.1")) << r.output;
  r = run_gpudoc("diagnose -- true");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  r = run_gpudoc("diagnose " + data_file("idle.jsonl") + " --live");
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

TEST(CliDoctor, WithoutAGpuReplaysTheBundledTracesAndSaysSo) {
  if (nvml_present()) GTEST_SKIP() << "NVML is present: doctor looks at the live GPUs there";
  auto r = run_gpudoc("doctor");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_TRUE(has(r.output, "No live GPU here")) << r.output;
  EXPECT_TRUE(has(r.output, "REPLAY of real H200 traces")) << r.output;
  EXPECT_TRUE(has(r.output, "not this machine")) << r.output;
  EXPECT_TRUE(has(r.output, "sawtooth_p1000_d50.jsonl")) << r.output;
  EXPECT_TRUE(has(r.output, "allreduce_straggler_slow1.jsonl")) << r.output;
  EXPECT_TRUE(has(r.output, "in the replayed traces")) << r.output;
  EXPECT_FALSE(has(r.output, "(exit 1)")) << "doctor exits 3 after a replay: " << r.output;

  auto j = run_stdout("doctor --json");
  EXPECT_EQ(j.exit_code, 3);
  auto doc = nlohmann::json::parse(j.output);
  EXPECT_EQ(doc["replay"], true);
  EXPECT_EQ(doc["traces"].size(), 4u);
  EXPECT_TRUE(contains_id(doc, "sawtooth")) << doc.dump(2);
}

TEST(CliDoctor, ReplayIsFoundFromAnotherWorkingDirectoryAndByEnvironment) {
  auto r = run_stdout("doctor --replay --json", "cd / &&");
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.output;
  EXPECT_EQ(nlohmann::json::parse(r.output)["replay"], true);
  std::string dir = std::filesystem::canonical(std::string(GPUDOC_SOURCE_DIR) + "/tests/data").string();
  auto env = run_stdout("doctor --replay --json", "GPUDOC_DATA_DIR=" + dir);
  EXPECT_EQ(nlohmann::json::parse(env.output)["replay_dir"], dir) << env.output;
}

}  // namespace
