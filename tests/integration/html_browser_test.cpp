// The HTML pages in a real browser: Debian's chromium, headless, loads each page offline (file://)
// and the DOM it leaves must show the plots were built (the page's script sets data-rendered="ok"
// and data-plots at its end; an error handler writes data-errors on <html>). The pages:
// `diagnose --html` of real two-GPU H200 traces, `baseline history --html` (a hostile baseline
// name included) and `report --html` over health results. Skipped only when chromium is absent
// AND GPUDOC_ALLOW_NO_BROWSER=1.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "cli_runner.hpp"
#include "store/database.hpp"
#include "support/temp_dir.hpp"

namespace {

using gpudoc::testing::CliRun;
using gpudoc::testing::data_file;
using gpudoc::testing::run_gpudoc;
using gpudoc::testing::run_shell;

std::string find_browser() {
  if (const char* env = std::getenv("GPUDOC_BROWSER"); env != nullptr && *env != '\0') return env;
  for (const char* p :
       {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome", "/snap/bin/chromium"})
    if (::access(p, X_OK) == 0) return p;
  return "";
}

std::string run_capture(const std::string& cmd, int& code) {
  CliRun r = run_shell(cmd);
  code = r.exit_code;
  return std::move(r.output);
}

std::size_t count(const std::string& s, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t p = 0; (p = s.find(needle, p)) != std::string::npos; p += needle.size()) ++n;
  return n;
}

class HtmlInBrowser : public ::testing::Test {
 protected:
  void SetUp() override {
    browser_ = find_browser();
    if (browser_.empty()) {
      const char* allow = std::getenv("GPUDOC_ALLOW_NO_BROWSER");
      if (allow != nullptr && std::string(allow) == "1") GTEST_SKIP() << "no chromium and GPUDOC_ALLOW_NO_BROWSER=1";
      FAIL()
          << "chromium not found (scripts/setup.sh installs Debian's chromium; set GPUDOC_ALLOW_NO_BROWSER=1 to skip)";
    }
  }

  // The DOM after the page's scripts ran, serialised by the browser.
  std::string dom_of(const std::filesystem::path& page) {
    std::string cmd = browser_ +
                      " --headless --no-sandbox --disable-gpu --no-first-run --disable-extensions"
                      " --user-data-dir=" +
                      (dir_ / "profile").string() +
                      " --window-size=1280,2000 --virtual-time-budget=10000 --dump-dom file://" + page.string() +
                      " 2>/dev/null";
    int code = -1;
    std::string dom = run_capture("timeout 120 " + cmd, code);
    EXPECT_EQ(code, 0) << "browser exit code; DOM:\n" << dom.substr(0, 2000);
    return dom;
  }

  // The page rendered: data-rendered="ok", data-plots=N, no error recorded.
  void expect_rendered(const std::string& dom, int plots) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(dom, m, std::regex("<body[^>]*>"))) << dom.substr(0, 2000);
    EXPECT_NE(m.str().find("data-rendered=\"ok\""), std::string::npos) << m.str();
    EXPECT_NE(m.str().find("data-plots=\"" + std::to_string(plots) + "\""), std::string::npos) << m.str();
    ASSERT_TRUE(std::regex_search(dom, m, std::regex("<html[^>]*>")));
    EXPECT_EQ(m.str().find("data-errors"), std::string::npos) << m.str();
    EXPECT_GE(count(dom, "class=\"uplot"), static_cast<std::size_t>(plots));
  }

  std::string browser_;
  gpudoc::testing::TempDir tmp_{"gpudoc-html"};
  const std::filesystem::path& dir_ = tmp_.path();
};

TEST_F(HtmlInBrowser, PlotsOfARealTwoGpuTraceRenderWithoutErrors) {
  auto page = dir_ / "straggler.html";
  auto r = run_gpudoc("diagnose " + data_file("allreduce_straggler_slow1.jsonl") + " --html " + page.string());
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.output;
  ASSERT_TRUE(std::filesystem::exists(page)) << r.output;
  std::string dom = dom_of(page);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(dom, m, std::regex("<body[^>]*>"))) << dom.substr(0, 2000);
  std::string body = m.str();
  EXPECT_NE(body.find("data-rendered=\"ok\""), std::string::npos) << body;
  // Two GPUs × (activity, power and clock, memory).
  EXPECT_NE(body.find("data-plots=\"6\""), std::string::npos) << body;
  ASSERT_TRUE(std::regex_search(dom, m, std::regex("<html[^>]*>")));
  EXPECT_EQ(m.str().find("data-errors"), std::string::npos) << m.str();
  EXPECT_GE(count(dom, "<canvas"), 6u);
  EXPECT_GE(count(dom, "class=\"uplot"), 6u);
  // The findings are in the page as text, and their windows are in the plotted data.
  EXPECT_NE(dom.find("class=\"finding sev-"), std::string::npos);
}

TEST_F(HtmlInBrowser, ManyTracesAndHostileNamesStillRender) {
  // A trace whose host and command carry markup: rendered as text, the script still runs.
  std::string evil_dir = (dir_ / "a'b<c>&d").string();
  std::filesystem::create_directories(evil_dir);
  std::string trace = evil_dir + "/x<b>&<script>alert(1).jsonl";
  std::filesystem::copy_file(data_file("sawtooth_p1000_d50.jsonl"), trace);
  auto page = dir_ / "two.html";
  auto r = run_gpudoc("diagnose '" + data_file("gemm_saturated.jsonl") + "' \"" + trace + "\" --html " + page.string());
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.output;
  std::string dom = dom_of(page);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(dom, m, std::regex("<body[^>]*>")));
  EXPECT_NE(m.str().find("data-rendered=\"ok\""), std::string::npos) << m.str();
  EXPECT_NE(m.str().find("data-plots=\"6\""), std::string::npos) << m.str();
  EXPECT_EQ(dom.find("<b>&"), std::string::npos);
  EXPECT_NE(dom.find("x&lt;b&gt;&amp;&lt;script&gt;alert(1).jsonl"), std::string::npos);
  ASSERT_TRUE(std::regex_search(dom, m, std::regex("<html[^>]*>")));
  EXPECT_EQ(m.str().find("data-errors"), std::string::npos) << m.str();
}

// A baseline with a record, an ok check and a confirmed regression; its name carries markup and a
// script end tag. Three figures (step_ms, accuracy, wall_s): three plots, the name shown as text.
TEST_F(HtmlInBrowser, BaselineHistoryWithAHostileNameRenders) {
  const std::string work = (dir_ / "work.sh").string();
  std::ofstream(work) << "#!/bin/sh\n"
                         "for j in 1 2 3 4 5 6; do echo \"::gpudoc {\\\"step_ms\\\": $1.$j}\"; done\n"
                         "echo '::gpudoc {\"accuracy\": 0.95}'\n";
  std::filesystem::permissions(work, std::filesystem::perms::owner_all);
  const std::string store = " --store " + (dir_ / "s.db").string();
  const std::string name = "'</script><script>document.body.dataset.pwned=1</script><b>&\"x'";
  auto r = run_gpudoc("baseline record " + name + store + " -- " + work + " 10");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(run_gpudoc("baseline check " + name + store + " -- " + work + " 10").exit_code, 0);
  r = run_gpudoc("baseline check " + name + store + " -- " + work + " 30");
  ASSERT_EQ(r.exit_code, 1) << r.output;
  const auto page = dir_ / "history.html";
  r = run_gpudoc("baseline history " + name + store + " --html " + page.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string dom = dom_of(page);
  expect_rendered(dom, 3);
  EXPECT_EQ(dom.find("data-pwned"), std::string::npos);  // the name's script never ran
  EXPECT_EQ(dom.find("<b>&"), std::string::npos);
  EXPECT_NE(dom.find("&lt;/script&gt;&lt;script&gt;document.body.dataset.pwned=1"), std::string::npos);
  EXPECT_NE(dom.find("REGRESSION"), std::string::npos);  // the legend and the tables mark the verdict
}

// `gpudoc report --html` over three health results (two GPUs, a failing check whose evidence carries
// markup), stored as `gpudoc health` stores them.
TEST_F(HtmlInBrowser, HealthReportRenders) {
  const std::string path = (dir_ / "s.db").string();
  {
    auto store = gpudoc::store::Database::open(path);
    ASSERT_TRUE(store.ok()) << store.error().message();
    const auto now_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    for (int i = 0; i < 3; ++i) {
      nlohmann::json checks = nlohmann::json::array();
      for (int g = 0; g < 2; ++g) {
        checks.push_back({{"check", "clocks"},
                          {"status", "pass"},
                          {"gpu", g},
                          {"evidence", "ok"},
                          {"values",
                           {{{"name", "sm_clock_mhz"}, {"value", 1980 - 10 * i}, {"unit", "MHz"}},
                            {{"name", "temperature_celsius"}, {"value", 40 + i + g}, {"unit", "C"}},
                            {{"name", "power_watts"}, {"value", 600.5 + i}, {"unit", "W"}}}}});
      }
      checks.push_back({{"check", "xid"},
                        {"status", i == 2 ? "fail" : "pass"},
                        {"gpu", nullptr},
                        {"evidence", "XID 79 </script><script>document.body.dataset.pwned=1</script>"},
                        {"values", {{{"name", "xid_count"}, {"value", i == 2 ? 1 : 0}}}}});
      const std::int64_t t = now_ns - (3 - i) * 3'600'000'000'000LL;
      auto id = store->add_result("health", "node7", t, {}, i == 2 ? "fail" : "pass", {{"checks", checks}});
      ASSERT_TRUE(id.ok()) << id.error().message();
    }
  }
  const auto page = dir_ / "report.html";
  auto r = run_gpudoc("report --store " + path + " --html " + page.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string dom = dom_of(page);
  expect_rendered(dom, 7);  // 2 GPUs x (clock, temperature, power) + the node's XIDs
  EXPECT_EQ(dom.find("data-pwned"), std::string::npos);
  EXPECT_NE(dom.find("XID 79 &lt;/script&gt;"), std::string::npos);
}

// `gpudoc bench --html` over a real H200 run (21 benchmarks ran, 6 waived): one samples plot each.
// Then a two-GPU report with NCCL curves, a p2p matrix and a key carrying a script end tag.
TEST_F(HtmlInBrowser, BenchPagesRender) {
  const auto page = dir_ / "bench.html";
  auto r = run_gpudoc("bench --from " + data_file("bench_h200_full.json") + " --html " + page.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_rendered(dom_of(page), 21);

  const nlohmann::json curve = {
      {{"bytes", 8}, {"time_us", 20.0}, {"algbw_gb_per_s", 0.0004}, {"busbw_gb_per_s", 0.0004}},
      {{"bytes", 1 << 20}, {"time_us", 30.0}, {"algbw_gb_per_s", 35.0}, {"busbw_gb_per_s", 35.0}},
      {{"bytes", 1 << 30}, {"time_us", 5940.0}, {"algbw_gb_per_s", 180.8}, {"busbw_gb_per_s", 361.6}}};
  auto result = [](const std::string& key, const nlohmann::json& params) {
    return nlohmann::json{{"key", key},
                          {"status", "ok"},
                          {"result",
                           {{"key", key},
                            {"unit", "GB/s"},
                            {"median", 361.0},
                            {"min", 360.0},
                            {"max", 362.0},
                            {"cv", 0.001},
                            {"samples", {360.0, 361.0, 362.0}},
                            {"params", params},
                            {"verified", true}}}};
  };
  const std::string evil = "nccl.all_reduce</script><script>document.body.dataset.pwned=1</script>";
  const nlohmann::json two = {{"mode", "default"},
                              {"machine", {{"device_count", 2}, {"gpu", {{"name", "NVIDIA H200"}}}}},
                              {"results",
                               {result(evil, {{"curve", curve}}), result("nccl.all_gather", {{"curve", curve}}),
                                result("p2p.bandwidth", {{"matrix",
                                                          {{"rows", "src"},
                                                           {"columns", "dst"},
                                                           {"unit", "GB/s"},
                                                           {"values", {{nullptr, 370.1}, {370.9, nullptr}}}}}})}}};
  const auto saved = dir_ / "two.json";
  std::ofstream(saved) << two.dump();
  const auto page2 = dir_ / "two.html";
  r = run_gpudoc("bench --from " + saved.string() + " --html " + page2.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string dom = dom_of(page2);
  expect_rendered(dom, 5);  // 3 samples plots + 2 curves
  EXPECT_EQ(dom.find("data-pwned"), std::string::npos);
  EXPECT_NE(dom.find("nccl.all_reduce&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(dom.find("<th>dst 1</th>"), std::string::npos);
}

}  // namespace
