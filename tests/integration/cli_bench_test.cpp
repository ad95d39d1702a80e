// `gpudoc bench` end to end. On a machine without a GPU (CI, this build machine) every benchmark
// is waived with its reason and the exit code is 3; on a GPU machine those two tests are skipped.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "cli_runner.hpp"
#include "support/temp_dir.hpp"

namespace gpudoc::testing {
namespace {

const char* const kKeys[] = {"hbm.copy",
                             "hbm.read",
                             "hbm.write",
                             "pcie.h2d.pinned",
                             "pcie.d2h.pinned",
                             "pcie.bidir.pinned",
                             "pcie.h2d.pageable",
                             "pcie.d2h.pageable",
                             "pcie.bidir.pageable",
                             "gemm.fp32",
                             "gemm.tf32",
                             "gemm.fp16",
                             "gemm.bf16",
                             "gemm.fp8",
                             "gemm.sweep.bf16.1024",
                             "gemm.sweep.bf16.2048",
                             "gemm.sweep.bf16.4096",
                             "gemm.sweep.bf16.16384",
                             "launch.throughput",
                             "launch.latency",
                             "launch.graph_node",
                             "p2p.bandwidth",
                             "p2p.bidirectional",
                             "p2p.latency",
                             "nccl.all_reduce",
                             "nccl.all_gather",
                             "nccl.reduce_scatter"};
const char* const kMultiGpuKeys[] = {"p2p.bandwidth",   "p2p.bidirectional", "p2p.latency",
                                     "nccl.all_reduce", "nccl.all_gather",   "nccl.reduce_scatter"};

bool machine_has_gpu() {
  const CliRun r = run_gpudoc("bench --only launch.latency --quick --json");
  return r.exit_code == 0;
}

TEST(CliBench, ListExitsZeroAndNamesEveryKey) {
  const CliRun r = run_gpudoc("bench --list");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const char* key : kKeys) EXPECT_THAT(r.output, ::testing::HasSubstr(key));
}

TEST(CliBench, HelpTeachesTheFormulas) {
  const CliRun r = run_gpudoc("bench --help");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("2 x buffer bytes / kernel time"));
  EXPECT_THAT(r.output, ::testing::HasSubstr("--only"));
}

TEST(CliBench, UnknownKeyIsUsageErrorListingValidKeys) {
  const CliRun r = run_gpudoc("bench --only nope");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("unknown benchmark 'nope'"));
  EXPECT_THAT(r.output, ::testing::HasSubstr("launch.graph_node"));
}

TEST(CliBench, QuickAndFullExcludeEachOther) { EXPECT_EQ(run_gpudoc("bench --quick --full").exit_code, 2); }

TEST(CliBench, WithoutGpuEveryBenchmarkIsWaivedExit3) {
  if (machine_has_gpu()) GTEST_SKIP() << "this machine has a GPU";
  const CliRun r = run_gpudoc("bench");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("no GPU benchmark can run"));
  for (const char* key : kKeys) EXPECT_THAT(r.output, ::testing::HasSubstr(key));
  EXPECT_THAT(r.output, ::testing::AnyOf(::testing::HasSubstr("waived: no GPU"),
                                         ::testing::HasSubstr("waived: built without CUDA")));
}

TEST(CliBench, WithoutGpuJsonRecordsEachWaiver) {
  if (machine_has_gpu()) GTEST_SKIP() << "this machine has a GPU";
  const CliRun js = run_gpudoc_stdout("bench --json");
  EXPECT_EQ(js.exit_code, 3);
  const auto j = nlohmann::json::parse(js.output);
  ASSERT_EQ(j["results"].size(), std::size(kKeys));
  for (const auto& r : j["results"]) {
    EXPECT_EQ(r["status"], "waived") << r.dump();
    EXPECT_THAT(r["reason"].get<std::string>(), ::testing::StartsWith("waived: ")) << r.dump();
  }
  EXPECT_TRUE(j["machine"]["gpu"].is_null());
}

// Without a driver, the CUDA runtime's own words are "CUDA driver version is insufficient for CUDA
// runtime version"; gpudoc says what is wrong, in the table's header and in --json.
TEST(CliBench, WithoutDriverSaysNoNvidiaDriverIsInstalled) {
  if (machine_has_gpu()) GTEST_SKIP() << "this machine has a GPU";
  if (void* libcuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL); libcuda != nullptr)
    GTEST_SKIP() << "an NVIDIA driver is installed here (libcuda.so.1 loads)";  // never closed, as gpudoc's
  const CliRun r = run_gpudoc("bench --only launch.latency --quick");
  if (r.output.find("built without CUDA") != std::string::npos) GTEST_SKIP() << "built without CUDA";
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_THAT(r.output,
              ::testing::HasSubstr("no GPU benchmark can run: no NVIDIA driver is installed (libcuda.so.1 not found)"));
  EXPECT_THAT(r.output, ::testing::Not(::testing::HasSubstr("insufficient")));

  const CliRun js = run_gpudoc_stdout("bench --only launch.latency --quick --json");
  EXPECT_EQ(js.exit_code, 3);
  const auto j = nlohmann::json::parse(js.output);
  EXPECT_EQ(j["machine"]["no_gpu_reason"], "no NVIDIA driver is installed (libcuda.so.1 not found)") << js.output;
  EXPECT_EQ(j["results"][0]["reason"], "waived: no GPU (no NVIDIA driver is installed (libcuda.so.1 not found))");
}

// p2p.* and nccl.* without a GPU: listed, each waived with its reason, exit 3, valid JSON.
TEST(CliBench, WithoutGpuMultiGpuBenchmarksAreWaivedExit3) {
  if (machine_has_gpu()) GTEST_SKIP() << "this machine has a GPU";
  const CliRun r = run_gpudoc("bench --only p2p,nccl");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  for (const char* key : kMultiGpuKeys) EXPECT_THAT(r.output, ::testing::HasSubstr(key));
  EXPECT_THAT(r.output, ::testing::AnyOf(::testing::HasSubstr("waived: no GPU"),
                                         ::testing::HasSubstr("waived: built without CUDA")));

  const CliRun js = run_gpudoc_stdout("bench --only nccl,p2p --quick --json");
  EXPECT_EQ(js.exit_code, 3);
  const auto j = nlohmann::json::parse(js.output);
  ASSERT_EQ(j["results"].size(), std::size(kMultiGpuKeys));
  for (std::size_t i = 0; i < std::size(kMultiGpuKeys); ++i) {
    EXPECT_EQ(j["results"][i]["key"], kMultiGpuKeys[i]);  // registry order, whatever --only's order
    EXPECT_EQ(j["results"][i]["status"], "waived");
    EXPECT_THAT(j["results"][i]["reason"].get<std::string>(), ::testing::StartsWith("waived: "));
  }
}

// gemm.* and pcie.* without a GPU: listed, each waived with its reason, exit 3, valid JSON whose
// machine context says why there is no NVML context either.
TEST(CliBench, WithoutGpuGemmAndPcieAreWaivedExit3) {
  if (machine_has_gpu()) GTEST_SKIP() << "this machine has a GPU";
  const CliRun r = run_gpudoc("bench --only gemm,pcie --quick");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("gemm.sweep.bf16.16384"));
  EXPECT_THAT(r.output, ::testing::HasSubstr("pcie.bidir.pageable"));

  const CliRun js = run_gpudoc_stdout("bench --only pcie,gemm --quick --json");
  EXPECT_EQ(js.exit_code, 3);
  const auto j = nlohmann::json::parse(js.output);
  ASSERT_EQ(j["results"].size(), 15u);                   // 6 pcie + 5 gemm + 4 sweep sizes
  EXPECT_EQ(j["results"][0]["key"], "pcie.h2d.pinned");  // registry order: pcie before gemm
  EXPECT_EQ(j["results"][6]["key"], "gemm.fp32");
  for (const auto& res : j["results"]) {
    EXPECT_EQ(res["status"], "waived") << res.dump();
    EXPECT_THAT(res["reason"].get<std::string>(), ::testing::AnyOf(::testing::StartsWith("waived: no GPU"),
                                                                   ::testing::StartsWith("waived: built without CUDA")))
        << res.dump();
  }
  EXPECT_TRUE(j["machine"]["nvml"].is_null());
  EXPECT_FALSE(j["machine"]["nvml_unavailable_reason"].get<std::string>().empty());
  EXPECT_TRUE(j["conditions"].is_null());
  EXPECT_TRUE(j["wall_seconds"].is_number());
}

TEST(CliBench, ListTeachesTheGemmAndPcieFormulas) {
  const CliRun r = run_gpudoc("bench --list");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("TFLOP/s = 2*M*N*K / time per matmul / 1e12"));
  EXPECT_THAT(r.output, ::testing::HasSubstr("(bytes in + bytes out) / time / 1e9"));
}

TEST(CliBench, ListNamesTheMultiGpuFormulas) {
  const CliRun r = run_gpudoc("bench --list");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("2(n-1)/n"));
  EXPECT_THAT(r.output, ::testing::HasSubstr("cudaMemcpyPeerAsync"));
}

// --html / --from: a saved real H200 run becomes a page; every bad input names itself, exit 2.
class CliBenchHtml : public ::testing::Test {
 protected:
  std::string path(const std::string& name) const { return tmp_.file(name); }
  TempDir tmp_{"gpudoc-bench-html"};
};

TEST_F(CliBenchHtml, SavedRunBecomesAPage) {
  const CliRun r = run_gpudoc("bench --from " + data_file("bench_h200_full.json") + " --html " + path("h200.html"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("HTML page: " + path("h200.html") + " (27 results from"));
  std::ifstream in(path("h200.html"));
  const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(page, ::testing::HasSubstr("gpudoc bench — NVIDIA H200"));
  EXPECT_THAT(page, ::testing::HasSubstr("kernel: cluster 2x1x1 of heuristics #0 (TN)"));  // gemm.tf32's choice
  EXPECT_THAT(page, ::testing::HasSubstr("<td class=\"num wide\">10.83 %</td>"));          // launch.throughput
  const CliRun j =
      run_gpudoc("bench --from " + data_file("bench_h200_full.json") + " --html " + path("j.html") + " --json");
  ASSERT_EQ(j.exit_code, 0) << j.output;
  EXPECT_EQ(nlohmann::json::parse(j.output)["results"], 27);
}

TEST_F(CliBenchHtml, BadInputIsNamedExit2) {
  std::ofstream(path("text.json")) << "not json at all";
  std::ofstream(path("other.json")) << R"({"traces": []})";
  struct Case {
    std::string args, says;
  } cases[] = {
      {"--from " + path("missing.json") + " --html " + path("p.html"), "missing.json"},
      {"--from " + path("text.json") + " --html " + path("p.html"), "text.json: not JSON"},
      {"--from " + path("other.json") + " --html " + path("p.html"), "other.json: not a gpudoc bench report"},
      {"--from " + data_file("bench_h200_full.json"), "give --html FILE too"},
      {"--from " + data_file("bench_h200_full.json") + " --html " + path("p.html") + " --quick", "for a new run"},
      {"--from " + data_file("bench_h200_full.json") + " --html " + path("no/such/dir/p.html"),
       "writing " + path("no/such/dir/p.html")},
  };
  for (const Case& c : cases) {
    const CliRun r = run_gpudoc("bench " + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_THAT(r.output, ::testing::HasSubstr(c.says)) << c.args;
  }
  EXPECT_FALSE(std::filesystem::exists(path("p.html")));
}

TEST_F(CliBenchHtml, WithoutGpuThePageListsTheWaivers) {
  if (machine_has_gpu()) GTEST_SKIP() << "this machine has a GPU";
  const CliRun r = run_gpudoc("bench --only hbm,launch --html " + path("none.html"));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("HTML page: " + path("none.html")));
  std::ifstream in(path("none.html"));
  const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(page, ::testing::HasSubstr("<code>launch.graph_node</code>"));
  EXPECT_THAT(page, ::testing::HasSubstr("class=\"muted\">waived"));
}

}  // namespace
}  // namespace gpudoc::testing
