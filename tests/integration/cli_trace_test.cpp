// `gpudoc trace info` end to end: the real binary on good and bad files, exit codes and messages.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "support/temp_dir.hpp"

namespace {

using gpudoc::testing::CliRun;
using gpudoc::testing::run_gpudoc;

// A trace file with `content`, in a private folder of its own (never a guessable name in $TMPDIR).
struct TempTrace : gpudoc::testing::TempFile {
  explicit TempTrace(const std::string& content) : TempFile("trace.jsonl", content) {}
};

const std::string kGood =
    R"({"type":"header","format":"gpudoc-trace","version":1,"gpudoc_version":"0.1.0","host":"node7",)"
    R"("start_unix_ns":1780000000000000000,"backend":"nvml","gpus":[{"index":0,"name":"NVIDIA H200","uuid":"GPU-a"}],)"
    R"("metrics":[{"name":"power_watts","unit":"W","group":"fast","period_ms":100}]})"
    "\n"
    R"({"type":"sample","t":0.1,"gpu":0,"power_watts":300})"
    "\n"
    R"({"type":"sample","t":0.2,"gpu":0,"power_watts":310})"
    "\n"
    R"({"type":"sample","t":1.2,"gpu":0,"power_watts":320})"
    "\n"
    R"({"type":"event","t":1.3,"kind":"xid","gpu":0,"code":79})"
    "\n"
    R"({"type":"end","t":1.5,"sample_lines":3,"dropped_records":0,"reason":"command_exited"})"
    "\n";

TEST(CliTraceInfo, SummarisesAValidTrace) {
  TempTrace f(kGood);
  CliRun r = run_gpudoc("trace info " + f.path());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("a valid gpudoc trace (format version 1)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("node7"), std::string::npos);
  EXPECT_NE(r.output.find("2026-05-28T20:26:40.000Z"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("clean (command_exited)"), std::string::npos);
  EXPECT_NE(r.output.find("GPU 0: NVIDIA H200  GPU-a"), std::string::npos);
  EXPECT_NE(r.output.find("power_watts"), std::string::npos);
  EXPECT_NE(r.output.find("events: xid 1"), std::string::npos);
}

TEST(CliTraceInfo, JsonSummary) {
  TempTrace f(kGood);
  CliRun r = run_gpudoc("trace info --json " + f.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto j = nlohmann::json::parse(r.output, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.output;
  EXPECT_EQ(j["valid"], true);
  EXPECT_EQ(j["clean_end"], true);
  EXPECT_EQ(j["end"]["reason"], "command_exited");
  const auto& m = j["gpus"][0]["metrics"][0];
  EXPECT_EQ(m["name"], "power_watts");
  EXPECT_EQ(m["samples"], 3);
  EXPECT_EQ(m["gaps"], 1);  // 0.2 -> 1.2 is over 3 x 100 ms
  EXPECT_DOUBLE_EQ(m["longest_gap_s"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(m["min"].get<double>(), 300);
  EXPECT_DOUBLE_EQ(m["max"].get<double>(), 320);
  EXPECT_EQ(j["events"]["xid"], 1);
  // Written in its reading order (the file first, then what it holds), not sorted by key.
  EXPECT_EQ(r.output.rfind("{\n  \"file\": ", 0), 0u) << r.output.substr(0, 80);
  EXPECT_LT(r.output.find("\"valid\""), r.output.find("\"clean_end\""));
}

TEST(CliTraceInfo, ReportsATraceWithoutEnd) {
  TempTrace f(kGood.substr(0, kGood.find(R"({"type":"end")")));
  CliRun r = run_gpudoc("trace info " + f.path());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("none: the recording did not close cleanly"), std::string::npos) << r.output;
}

TEST(CliTraceInfo, RejectsABadTraceWithExitTwoAndTheLine) {
  TempTrace f(kGood.substr(0, kGood.find("300")) + R"("300"})"
                                                   "\n");
  CliRun r = run_gpudoc("trace info " + f.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output, "gpudoc: error: " + f.path() + " line 2: \"power_watts\" must be a number\n");

  CliRun j = run_gpudoc("trace info --json " + f.path());
  EXPECT_EQ(j.exit_code, 2);
  EXPECT_NE(j.output.find("\"kind\": \"bad_input\""), std::string::npos) << j.output;
}

TEST(CliTraceInfo, KeepsWhatIsCompleteOfATruncatedTraceAndSaysWhatWasCut) {
  // A full disk cut the end line: the five lines before it are the recording.
  TempTrace f(kGood.substr(0, kGood.size() - 20));
  const std::string cut = f.path() +
                          " line 6: the recording was cut off in the middle of this line (66 bytes without a newline): "
                          "it is dropped; lines 1-5 are read";
  CliRun r = run_gpudoc("trace info " + f.path());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("dropped      " + cut), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("none: the recording did not close cleanly"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("events: xid 1"), std::string::npos) << r.output;

  CliRun j = run_gpudoc("trace info --json " + f.path());
  ASSERT_EQ(j.exit_code, 0) << j.output;
  auto doc = nlohmann::json::parse(j.output);
  EXPECT_EQ(doc["warnings"], nlohmann::json::array({cut}));
  EXPECT_EQ(doc["gpus"][0]["metrics"][0]["samples"], 3);
}

TEST(CliTraceInfo, NamesFromTheTraceCannotDriveTheTerminal) {
  // Host, GPU name, command and an event kind carrying OSC and CSI sequences and a newline.
  std::string evil = kGood;
  auto put = [&](const std::string& from, const std::string& to) { evil.replace(evil.find(from), from.size(), to); };
  put(R"("host":"node7")", R"("host":"node7\u001b]0;owned\u0007")");
  put(R"("name":"NVIDIA H200")", R"("name":"H200\u001b[2J\nERROR: fake")");
  put(R"("backend":"nvml",)", R"("backend":"nvml","command":["run\u009b31m"],)");
  put(R"("kind":"xid","gpu":0,"code":79)", R"("kind":"x\u001b[1mid")");
  TempTrace f(evil);
  CliRun r = run_gpudoc("trace info " + f.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find('\x1b'), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("\xc2\x9b"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("node7\\x1b]0;owned\\x07"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("GPU 0: H200\\x1b[2J\\x0aERROR: fake"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("run\\u{009b}31m"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("events: x\\x1b[1mid 1"), std::string::npos) << r.output;
  // JSON carries the names exactly (escaped as JSON, never as terminal text).
  CliRun j = run_gpudoc("trace info --json " + f.path());
  auto doc = nlohmann::json::parse(j.output);
  EXPECT_EQ(doc["host"], "node7\x1b]0;owned\x07");
  EXPECT_EQ(doc["gpus"][0]["name"], "H200\x1b[2J\nERROR: fake");
}

TEST(CliTraceInfo, ShowsTheRowsACsvImportDroppedAndWhere) {
  TempTrace f(
      "timestamp, index, power.draw [W]\n2026/01/02 03:04:05.000, 0, 1 W\n2026/01/02 03:04:04.000, 0, 2 W\n"
      "2026/01/02 03:04:05.100, 0, 3 W\n2026/01/02 03:04:05.200, 0");
  const std::string back = f.path() + ": 1 row skipped, its time went backwards (clock change?): line 3";
  const std::string cut = f.path() + " line 5: the last line is cut off (2 of 3 columns): it is skipped";
  CliRun r = run_gpudoc("trace info " + f.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("dropped      " + cut), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("dropped      " + back), std::string::npos) << r.output;
  CliRun j = run_gpudoc("trace info --json " + f.path());
  auto doc = nlohmann::json::parse(j.output);
  EXPECT_EQ(doc["warnings"], nlohmann::json::array({cut, back}));
}

TEST(CliTraceInfo, MissingFileAndUsage) {
  CliRun missing = run_gpudoc("trace info /nonexistent/run.jsonl");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.output.find("reading /nonexistent/run.jsonl: No such file or directory"), std::string::npos);
  EXPECT_EQ(run_gpudoc("trace info").exit_code, 2);
  CliRun help = run_gpudoc("trace info --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.output.find("docs/trace-format.md"), std::string::npos) << help.output;
}

}  // namespace
