// The HTML report in a real browser: Debian's chromium, headless, loads a page made from a real
// two-GPU H200 trace (offline, file://) and the DOM it leaves must show the plots were built
// (the page's script sets data-rendered="ok" and data-plots at its end; an error handler writes
// data-errors on <html>). Skipped only when chromium is absent AND GPUDOC_ALLOW_NO_BROWSER=1.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>

#include "cli_runner.hpp"

namespace {

using gpudoc::testing::data_file;
using gpudoc::testing::CliRun;
using gpudoc::testing::run_gpudoc;
using gpudoc::testing::run_shell;

std::string find_browser() {
  if (const char* env = std::getenv("GPUDOC_BROWSER"); env != nullptr && *env != '\0') return env;
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome", "/snap/bin/chromium"})
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
      FAIL() << "chromium not found (scripts/setup.sh installs Debian's chromium; set GPUDOC_ALLOW_NO_BROWSER=1 to skip)";
    }
    dir_ = std::filesystem::temp_directory_path() / ("gpudoc-html-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // The DOM after the page's scripts ran, serialised by the browser.
  std::string dom_of(const std::filesystem::path& page) {
    std::string cmd = browser_ +
                      " --headless --no-sandbox --disable-gpu --no-first-run --disable-extensions"
                      " --user-data-dir=" + (dir_ / "profile").string() +
                      " --window-size=1280,2000 --virtual-time-budget=10000 --dump-dom file://" + page.string() +
                      " 2>/dev/null";
    int code = -1;
    std::string dom = run_capture("timeout 120 " + cmd, code);
    EXPECT_EQ(code, 0) << "browser exit code; DOM:\n" << dom.substr(0, 2000);
    return dom;
  }

  std::string browser_;
  std::filesystem::path dir_;
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

}  // namespace
