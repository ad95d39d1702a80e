// `gpudoc watch` and `gpudoc record` end to end on a machine without a GPU (CI): replay of a real
// H200 trace, and the environment error when NVML is missing.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "support/temp_dir.hpp"

namespace {

using gpudoc::testing::data_file;
using gpudoc::testing::run_gpudoc;
using gpudoc::testing::TempDir;

using gpudoc::testing::nvml_present;

TEST(CliWatch, ReplaysARealTraceAndSaysSo) {
  auto r = run_gpudoc("watch " + data_file("sawtooth_p1000_d50.jsonl") +
                      " --speed 20 --interval 200 --duration 0.6 --no-clear");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("REPLAY, not live (×20): sawtooth_p1000_d50.jsonl, recorded 2026-11-29"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("GPU 0 NVIDIA H200"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("that was a replay"), std::string::npos);
  // The sawtooth at 20× speed: after 0.6 s of wall time the replay is 12 s in; power was read.
  EXPECT_NE(r.output.find(" W / 700 W"), std::string::npos) << r.output;
}

TEST(CliWatch, JsonFramesCarryLatestValuesOfEveryGpu) {
  auto r = run_gpudoc("watch " + data_file("allreduce_straggler_slow1.jsonl") +
                      " --speed 20 --interval 300 --duration 0.4 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto first_line = r.output.substr(0, r.output.find('\n'));
  auto j = nlohmann::json::parse(first_line, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << first_line;
  ASSERT_EQ(j["gpus"].size(), 2u);
  EXPECT_TRUE(j["gpus"][0].contains("power_watts"));
  EXPECT_TRUE(j["gpus"][1].contains("gpm_sm_activity_percent"));
  EXPECT_EQ(j["replay"], data_file("allreduce_straggler_slow1.jsonl"));
}

TEST(CliWatch, ReplaysAnNvidiaSmiCsvLog) {
  const TempDir tmp("gpudoc-cli-smi");  // private: never a guessable name in $TMPDIR
  const std::string path = tmp.file("smi.csv");
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(
        "timestamp, index, utilization.gpu [%], power.draw [W], clocks.current.sm [MHz], clocks_event_reasons.active\n",
        f);
    for (int i = 0; i < 30; ++i)
      std::fprintf(f, "2026/11/29 18:45:%02d.%03d, 0, %d %%, %d.5 W, 1530 MHz, 0x0000000000000004\n", 10 + i / 10,
                   (i % 10) * 100, i % 2 == 0 ? 100 : 0, 600 + i);
    std::fclose(f);
  }
  auto info = run_gpudoc("trace info " + path);
  EXPECT_EQ(info.exit_code, 0) << info.output;
  auto r = run_gpudoc("watch " + path + " --speed 4 --interval 300 --duration 0.3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto j = nlohmann::json::parse(r.output.substr(0, r.output.find('\n')), nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.output;
  EXPECT_EQ(j["gpus"][0]["sm_clock_mhz"], 1530);
  EXPECT_EQ(j["gpus"][0]["clock_event_reasons_mask"], 4);
  std::remove(path.c_str());
  auto bad = run_gpudoc("trace info " + data_file("README.md"));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("neither a gpudoc trace"), std::string::npos) << bad.output;
}

TEST(CliWatch, BadTraceIsExitTwoNamingTheFile) {
  auto r = run_gpudoc("watch /nonexistent/trace.jsonl");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("/nonexistent/trace.jsonl"), std::string::npos) << r.output;
}

TEST(CliRecord, WithoutNvmlExitsThreeSayingWhatIsMissingAndWhatWorks) {
  if (nvml_present()) GTEST_SKIP() << "NVML is installed here";
  const TempDir tmp("gpudoc-cli-record");
  const std::string out = tmp.file("record.jsonl");
  auto r = run_gpudoc("record -o " + out + " --duration 1");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("libnvidia-ml.so.1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("gpudoc watch tests/data/"), std::string::npos) << r.output;
  auto j = run_gpudoc("record --json -o " + out + " --duration 1");
  EXPECT_EQ(j.exit_code, 3);
  // stdout's JSON and stderr's message arrive interleaved here: take the JSON block.
  auto begin = j.output.find("{\n");
  auto end = j.output.find("\n}\n", begin);
  ASSERT_NE(begin, std::string::npos) << j.output;
  auto parsed = nlohmann::json::parse(j.output.substr(begin, end + 2 - begin), nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << j.output;
  EXPECT_EQ(parsed["error"]["kind"], "environment");
}

TEST(CliRecord, UsageErrorsAreExitTwo) {
  EXPECT_EQ(run_gpudoc("record --duration 5").exit_code, 2);  // no -o
  const TempDir tmp("gpudoc-cli-record");
  const std::string out = tmp.file("x.jsonl");
  auto r = run_gpudoc("record -o " + out + " --period fast=10");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("faster than the sensor allows"), std::string::npos) << r.output;
  auto g = run_gpudoc("record -o " + out + " --period warp=100");
  EXPECT_EQ(g.exit_code, 2);
  EXPECT_NE(g.output.find("unknown group 'warp'"), std::string::npos) << g.output;
  EXPECT_EQ(run_gpudoc("no-such-command").exit_code, 2);
  auto mix = run_gpudoc("record -o - -- true");
  EXPECT_EQ(mix.exit_code, 2);
  EXPECT_NE(mix.output.find("would mix into it"), std::string::npos) << mix.output;
}

TEST(CliHelp, EveryCommandTeaches) {
  for (const char* cmd : {"watch", "record", "trace info"}) {
    auto r = run_gpudoc(std::string(cmd) + " --help");
    EXPECT_EQ(r.exit_code, 0) << cmd;
    EXPECT_NE(r.output.find("Examples:"), std::string::npos) << cmd << "\n" << r.output;
    EXPECT_NE(r.output.find("--json"), std::string::npos) << cmd;
  }
}

}  // namespace
