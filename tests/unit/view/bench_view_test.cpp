// The bench page: the results table (waivers, CV above 2 % marked, verified in either JSON shape),
// the plotted data (samples per result, the host's CPU time beside launch figures, NCCL curves),
// the p2p matrix as a table; names escaped, and anything that is not a bench report refused.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <regex>
#include <string>

#include "view/bench_html.hpp"

namespace gpudoc::view {
namespace {

using nlohmann::json;

const WebAssets kAssets{"/* uPlot stand-in */ var s = \"</script>\";", ".u{}", "uplot test"};

json ok_result(const std::string& key, const std::string& unit, std::vector<double> samples, double median, double cv) {
  return {
      {"key", key},
      {"status", "ok"},
      {"conditions",
       {{"sm_clock_mhz", {{"min", 1400}, {"median", 1515}, {"max", 1980}}}, {"clock_event_reasons", "sw_power_cap"}}},
      {"result",
       {{"key", key},
        {"unit", unit},
        {"median", median},
        {"min", 1.0},
        {"max", 9.0},
        {"cv", cv},
        {"samples", samples},
        {"params", json::object()},
        {"verified", {{"ok", true}, {"detail", "64 elements"}}}}}};
}

json report() {
  json launch = ok_result("launch.throughput", "us", {3.3, 3.4, 4.2, 4.3}, 3.8, 0.12);
  launch["result"]["params"] = {{"host_thread_cpu_us", {3.2, 3.3, 4.1, 4.2}},
                                {"host_spread", "slower CPU: the thread ran"}};
  json nccl = ok_result("nccl.all_reduce", "GB/s", {361.0, 362.0}, 361.5, 0.001);
  nccl["result"]["params"] = {
      {"formula", "busbw = S / t x 2(n-1)/n"},
      {"curve",
       {{{"bytes", 8}, {"time_us", 20.1}, {"algbw_gb_per_s", 0.0004}, {"busbw_gb_per_s", 0.0004}},
        {{"bytes", 1073741824}, {"time_us", 5940.0}, {"algbw_gb_per_s", 180.8}, {"busbw_gb_per_s", 361.6}},
        {{"bytes", "bad"}}}}};
  json p2p = ok_result("p2p.bandwidth", "GB/s", {370.0, 371.0}, 370.5, 0.001);
  p2p["result"]["params"] = {
      {"matrix",
       {{"rows", "src"}, {"columns", "dst"}, {"unit", "GB/s"}, {"values", {{nullptr, 370.1}, {370.9, nullptr}}}}}};
  json gemm = ok_result("gemm.<b>&x", "TFLOP/s", {349.0, 350.0, 351.0}, 350.0, 0.003);
  gemm["result"]["verified"] = false;
  return {
      {"mode", "full"},
      {"wall_seconds", 12.5},
      {"exit_code", 4},
      {"machine",
       {{"device", 0},
        {"gpu", {{"name", "NVIDIA H200"}, {"uuid", "GPU-1"}, {"sm_count", 132}}},
        {"nvml", {{"driver_version", "580.159.04"}, {"cuda_driver_version", "13.0"}, {"power_limit_watts", 700.0}}}}},
      {"conditions", {{"sm_clock_mhz", {{"min", 1185}, {"median", 1515}, {"max", 1980}}}}},
      {"results",
       {launch,
        nccl,
        p2p,
        gemm,
        {{"key", "hbm.copy"}, {"status", "waived"}, {"reason", "waived: built without CUDA"}},
        {{"key", "pcie.h2d.pinned"}, {"status", "failed"}, {"reason", "cudaMemcpyAsync: out of memory"}},
        "not an object"}}};
}

// The page's embedded data.
json data_of(const std::string& page) {
  std::smatch m;
  const std::regex re("<script type=\"application/json\" id=\"gpudoc-data\">([^<]*)</script>");
  EXPECT_TRUE(std::regex_search(page, m, re));
  return json::parse(m[1].str());
}

TEST(BenchView, TableMarksSpreadWaiversFailuresAndVerification) {
  auto page = render_bench_html(report(), kAssets);
  ASSERT_TRUE(page.ok()) << page.error().message();
  const std::string& p = *page;
  EXPECT_NE(p.find("<title>gpudoc bench — NVIDIA H200</title>"), std::string::npos);
  EXPECT_NE(p.find("mode full · 12.5 s · GPU 0 NVIDIA H200 (GPU-1) · 132 SMs · driver 580.159.04 (CUDA 13.0) · power "
                   "limit 700 W · exit code 4"),
            std::string::npos);
  EXPECT_NE(p.find("During the run: SM clock 1185–1980 MHz (median 1515)"), std::string::npos);
  EXPECT_NE(p.find("<td class=\"num wide\">12.00 %</td>"), std::string::npos);  // launch: CV above 2 %
  EXPECT_NE(p.find("<td class=\"num\">0.30 %</td>"), std::string::npos);        // gemm: within
  EXPECT_NE(p.find("slower CPU: the thread ran"), std::string::npos);
  EXPECT_NE(p.find("<span title=\"64 elements\">yes</span>"), std::string::npos);
  EXPECT_NE(p.find("<b class=\"bad\">NO</b>"), std::string::npos);  // gemm's "verified": false
  EXPECT_NE(p.find("<td class=\"muted\">waived: built without CUDA</td>"), std::string::npos);
  EXPECT_NE(p.find("<td class=\"bad\">cudaMemcpyAsync: out of memory</td>"), std::string::npos);
  // The key with markup is text, in the table and in the data.
  EXPECT_EQ(p.find("gemm.<b>&x"), std::string::npos);
  EXPECT_NE(p.find("gemm.&lt;b&gt;&amp;x"), std::string::npos);
  // The stand-in library's "</script>" cannot end its element early.
  EXPECT_EQ(p.find("var s = \"</script>\""), std::string::npos);
}

TEST(BenchView, DataHoldsSamplesHostCpuCurvesAndTheMatrixIsATable) {
  auto page = render_bench_html(report(), kAssets);
  ASSERT_TRUE(page.ok());
  const json d = data_of(*page);
  ASSERT_EQ(d["samples"].size(), 4u);  // the four results that ran
  EXPECT_EQ(d["samples"][0]["key"], "launch.throughput");
  EXPECT_EQ(d["samples"][0]["values"], json({3.3, 3.4, 4.2, 4.3}));
  EXPECT_EQ(d["samples"][0]["host_cpu"], json({3.2, 3.3, 4.1, 4.2}));
  EXPECT_FALSE(d["samples"][1].contains("host_cpu"));
  EXPECT_EQ(d["samples"][3]["key"], "gemm.<b>&x");
  ASSERT_EQ(d["curves"].size(), 1u);
  EXPECT_EQ(d["curves"][0]["bytes"], json({8.0, 1073741824.0}));  // the malformed point is left out
  EXPECT_EQ(d["curves"][0]["busbw"][1], 361.6);
  EXPECT_NE(page->find("<div id=\"curve-1\"></div>"), std::string::npos);
  EXPECT_NE(page->find("<th>dst 1</th>"), std::string::npos);
  EXPECT_NE(page->find("<tr><th>src 0</th><td class=\"num\">—</td><td class=\"num\">370</td></tr>"), std::string::npos);
}

TEST(BenchView, RefusesWhatIsNotABenchReport) {
  for (const json& bad : {json::array(), json{{"results", 3}}, json{{"a", 1}}, json("text")}) {
    auto page = render_bench_html(bad, kAssets);
    ASSERT_FALSE(page.ok()) << bad.dump();
    EXPECT_EQ(page.error().kind(), core::ErrorKind::kBadInput);
    EXPECT_NE(page.error().message().find("gpudoc bench --json"), std::string::npos);
  }
  // An empty run is a page that says so.
  auto empty = render_bench_html(json{{"results", json::array()}}, kAssets);
  ASSERT_TRUE(empty.ok());
  EXPECT_NE(empty->find("No results in this report."), std::string::npos);
}

}  // namespace
}  // namespace gpudoc::view
