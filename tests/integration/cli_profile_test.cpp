// gpudoc profile end to end: usage and environment errors with their exit codes, and the analysis of
// saved records (--input) as text, JSON, a Chrome trace and an HTML page.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_runner.hpp"
#include "support/temp_dir.hpp"

namespace gpudoc::testing {
namespace {

// Records of a launch-bound loop: NVTX steps of 40 kernels of 2 us, launched every 12 us. Sampled
// (--sample): 30 steps, 10 traced (a launch costs 15 us while traced), 10 not (12 us; only the NVTX
// markers recorded), 10 traced, with the O and F lines (format 2); else 12 steps, all traced (format 1).
std::string loop_records(bool sampled) {
  std::ostringstream o;
  o << "H\tgpudoc-profile\t" << (sampled ? 2 : 1) << "\t42\t130001\nC\tR\t211\tcudaLaunchKernel_v7000\n";
  std::uint64_t host = 1'000'000, corr = 1;
  const int steps = sampled ? 30 : 12;
  for (int s = 0; s < steps; ++s) {
    const bool traced = !sampled || s < 10 || s >= 20;
    if (sampled && (s == 0 || s == 20)) o << "O\t" << host << "\n";
    if (sampled && s == 10) o << "F\t" << host << "\n";
    const std::uint64_t launch = sampled && traced ? 15'000 : 12'000;
    o << "N\t2\t" << s + 1 << "\t" << host << "\t7\tstep\t\n";
    for (int k = 0; k < 40; ++k, ++corr) {
      if (traced)
        o << "R\t" << host + launch - 4'000 << "\t" << host + launch - 1'000 << "\t211\t" << corr << "\t7\n"
          << "K\t" << host + launch - 2'000 << "\t" << host + launch << "\t0\t7\t" << corr
          << "\t64\t1\t1\t128\t1\t1\t0\t_ZN2at6native18elementwise_kernelILi128ELi4EEEviT_\n";
      host += launch;
    }
    o << "N\t4\t" << s + 1 << "\t" << host << "\t7\t\t\n";
  }
  o << "E\t" << host << "\t0\n";
  return o.str();
}
std::string launch_bound_records() { return loop_records(false); }
std::string sampled_records() { return loop_records(true); }

TEST(CliProfile, BadSampleWindowsAreUsageErrorsThatSayWhy) {
  for (const char* bad : {"2", "0:5", "2:x", "-1:3"}) {
    auto r = run_gpudoc(std::string("profile --sample ") + bad + " -- true");
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.output;
    EXPECT_NE(r.output.find("give seconds traced and seconds not, as ON:OFF"), std::string::npos) << r.output;
  }
}

TEST(CliProfile, ASampledProfileSaysWhatTracingCostTheSteps) {
  TempDir dir("gpudoc-profile-cli");
  const std::string records = dir.file("records.txt");
  std::ofstream(records) << sampled_records();
  auto text = run_gpudoc("profile --input " + records);
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("Sampled: traced"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("in 2 windows"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("Tracing cost this program +25.0 % a step: 0.600 ms (median of 20) while traced, "
                             "0.480 ms (median of 10) between the windows"),
            std::string::npos)
      << text.output;
  // the run's mean step: 20 steps of 0.600 ms and 10 of 0.480 ms, 0.560 ms: +16.7 % over the untraced
  EXPECT_NE(text.output.find("Over the whole run tracing added +16.7 %: a mean step of 0.560 ms, 0.480 ms untraced"),
            std::string::npos)
      << text.output;
  auto json = run_gpudoc_stdout("profile --json --input " + records);
  auto j = nlohmann::json::parse(json.output);
  EXPECT_EQ(j["sampling"]["windows"], 2);
  EXPECT_NEAR(j["sampling"]["overhead"].get<double>(), 0.25, 1e-9);
  EXPECT_NEAR(j["sampling"]["run_overhead"].get<double>(), 0.56 / 0.48 - 1, 1e-9);
  EXPECT_EQ(j["sampling"]["steps_untraced"], 10);
  // the Perfetto trace shows the two traced windows on a row of their own
  const std::string trace = dir.file("trace.json");
  ASSERT_EQ(run_gpudoc("profile --input " + records + " -o " + trace).exit_code, 0);
  std::ifstream in(trace);
  const auto t = nlohmann::json::parse(in);
  int windows = 0;
  for (const auto& e : t["traceEvents"]) windows += e.value("cat", "") == "sampling" && e["name"] == "traced" ? 1 : 0;
  EXPECT_EQ(windows, 2);
}

TEST(CliProfile, APageThatCannotBeWrittenLosesNoneOfTheAnalysis) {
  TempDir dir("gpudoc-profile-cli");
  const std::string records = dir.file("records.txt");
  std::ofstream(records) << launch_bound_records();
  const std::string page = dir.file("no-such-folder/p.html");
  auto text = run_gpudoc("profile --input " + records + " --html " + page);
  EXPECT_EQ(text.exit_code, 2) << text.output;  // a path that cannot be written: bad input
  EXPECT_NE(text.output.find("CUDA Graphs: RECOMMENDED"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find(page), std::string::npos) << text.output;
  auto json = run_gpudoc_stdout("profile --json --input " + records + " --html " + page);
  EXPECT_EQ(json.exit_code, 2);
  EXPECT_EQ(nlohmann::json::parse(json.output)["kernels"]["count"], 480) << json.output;
}

TEST(CliProfile, WithoutACommandItIsAUsageError) {
  auto r = run_gpudoc("profile");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("give a command to profile after --"), std::string::npos) << r.output;
}

TEST(CliProfile, AProgramThatNeverUsesCudaIsAnEnvironmentError) {
  auto r = run_gpudoc("profile -- true");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  // Built with CUPTI's headers: the program made no CUDA context. Without: the library is missing.
  EXPECT_TRUE(r.output.find("created no CUDA context") != std::string::npos ||
              r.output.find("libgpudoc_profile.so") != std::string::npos ||
              r.output.find("CUPTI (libcupti.so) was not found") != std::string::npos)
      << r.output;
}

TEST(CliProfile, DurationStopsTheProgram) {
  const auto start = std::chrono::steady_clock::now();
  auto r = run_gpudoc("profile --duration 0.5 -- sleep 120");
  const auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 20.0);               // hang guard: SIGINT ends sleep at once, normally ~0.6 s; 30x margin
  EXPECT_EQ(r.exit_code, 3) << r.output;  // and sleep made no CUDA context: nothing to analyse
}

TEST(CliProfile, AnotherCuptiToolAlreadySetUpIsAnEnvironmentError) {
  auto r = run_shell("CUDA_INJECTION64_PATH=/opt/nsight/libToolsInjection64.so " + gpudoc_binary() +
                     " profile -- true 2>&1");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.output.find("another CUPTI tool is already set up for this program "
                          "(CUDA_INJECTION64_PATH=/opt/nsight/libToolsInjection64.so"),
            std::string::npos)
      << r.output;
}

// Records made on an H200 by `gpudoc profile --records` (tools/profile_device_run.sh): the loop of
// 200 tiny kernels per step and the loop with an .item() each step (docs/results/profile.md).
TEST(CliProfile, RecordedH200ProfilesGiveTheirVerdicts) {
  auto tiny = run_gpudoc_stdout("profile --json --input " + data_file("profile/tiny_h200.records.txt"));
  ASSERT_EQ(tiny.exit_code, 0) << tiny.output;
  auto t = nlohmann::json::parse(tiny.output);
  EXPECT_EQ(t["step_source"], "nvtx:step");
  EXPECT_EQ(t["steps"], 7);  // 8 timed steps, the first left out as warm-up
  EXPECT_EQ(t["kernels"]["count"], 2801);
  EXPECT_EQ(t["cuda_graphs"]["verdict"], "recommend");
  EXPECT_EQ(t["cuda_graphs"]["kernels_per_step"], 200);
  EXPECT_TRUE(t["complete"].get<bool>());
  // As a graph this loop ran 0.231 ms per step on the H200 (docs/results/profile.md): within 30 %.
  EXPECT_NEAR(t["cuda_graphs"]["predicted_step_ns"].get<double>(), 231'000.0, 0.3 * 231'000.0);

  auto item = run_gpudoc_stdout("profile --json --input " + data_file("profile/item_h200.records.txt"));
  ASSERT_EQ(item.exit_code, 0) << item.output;
  auto i = nlohmann::json::parse(item.output);
  EXPECT_EQ(i["cuda_graphs"]["verdict"], "fix_first");
  ASSERT_FALSE(i["cuda_graphs"]["fix_first"].empty());
  EXPECT_EQ(i["cuda_graphs"]["fix_first"][0]["what"], "sync");
  EXPECT_GT(i["idle_ns"]["sync"].get<std::uint64_t>(), 0u);
}

TEST(CliProfile, SavedRecordsAreAnalysedAsTextJsonTraceAndHtml) {
  TempDir dir("gpudoc-profile-cli");
  const std::string records = dir.file("records.txt");
  std::ofstream(records) << launch_bound_records();
  auto text = run_gpudoc("profile --input " + records);
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("Steps: 11 from NVTX ranges \"step\""), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("CUDA Graphs: RECOMMENDED"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("Kernel durations:  2-4 us 480\n"), std::string::npos) << text.output;

  auto json = run_gpudoc_stdout("profile --json --input " + records + " -o " + dir.file("t.json") + " --html " +
                                dir.file("p.html"));
  ASSERT_EQ(json.exit_code, 0);
  auto j = nlohmann::json::parse(json.output);
  EXPECT_EQ(j["cuda_graphs"]["verdict"], "recommend");
  EXPECT_EQ(j["cuda_graphs"]["kernels_per_step"], 40);
  EXPECT_EQ(j["kernels"]["count"], 480);
  std::ifstream trace(dir.file("t.json"));
  auto t = nlohmann::json::parse(trace);
  ASSERT_TRUE(t.contains("traceEvents"));
  std::size_t kernels = 0;
  for (const auto& e : t["traceEvents"]) kernels += e.value("cat", "") == "kernel" ? 1 : 0;
  EXPECT_EQ(kernels, 480u);
  std::ifstream page(dir.file("p.html"));
  std::stringstream html;
  html << page.rdbuf();
  EXPECT_NE(html.str().find("CUDA Graphs: RECOMMENDED"), std::string::npos);
}

TEST(CliProfile, RecordsLeftOutAtTheFilesBoundAreReportedAsSuch) {
  TempDir dir("gpudoc-profile-cli");
  const std::string records = dir.file("records.txt");
  std::ofstream(records) << launch_bound_records() << "X\tLIMIT\t5000\nX\tLIMIT\t700\n";
  auto text = run_gpudoc("profile --input " + records);
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("the records file reached its bound (GPUDOC_PROFILE_MAX_MIB, default 512 MiB); 5700 "
                             "records after it were counted, not written"),
            std::string::npos)
      << text.output;
  EXPECT_EQ(text.output.find("CUPTI dropped"), std::string::npos) << text.output;
  auto json = run_gpudoc_stdout("profile --json --input " + records);
  auto j = nlohmann::json::parse(json.output);
  EXPECT_EQ(j["records_over_file_limit"], 5700);
  EXPECT_EQ(j["dropped_records"], 5700);
}

TEST(CliProfile, BadRecordsAreBadInputNamingTheLine) {
  TempDir dir("gpudoc-profile-cli");
  const std::string records = dir.file("records.txt");
  std::ofstream(records) << "H\tgpudoc-profile\t1\t42\t1\nK\tnope\n";
  auto r = run_gpudoc("profile --input " + records);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("records.txt line 2: malformed 'K' record"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace gpudoc::testing
