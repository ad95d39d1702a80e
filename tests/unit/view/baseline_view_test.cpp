// The baseline history page: every figure gets a plot host, a values table and its columns in
// the embedded data (value per run, baseline, bound, verdicts); names are escaped in the HTML and
// cannot end the data's <script> element; values that are not finite become gaps.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <string>

#include "view/baseline_html.hpp"

namespace gpudoc::view {
namespace {

const WebAssets kAssets{"/* uPlot stand-in */ var s = \"</script>\";", ".u{}", "uplot test"};

constexpr std::int64_t kT0 = 1'796'083'200'000'000'000;  // 2026-12-01 00:00:00 UTC

BaselineHistory make_history(const std::string& name = "train", const std::string& figure = "step_ms") {
  BaselineHistory h;
  h.name = name;
  h.kinds = "workload";
  h.store = "/tmp/store.db";
  h.config = "built-in defaults";
  h.runs = {{1, kT0, "record", "", true},
            {2, kT0 + 3'600'000'000'000, "check", "ok", false},
            {3, kT0 + 7'200'000'000'000, "check", "regression", false},
            {4, kT0 + 7'260'000'000'000, "confirm", "regression", false}};
  BaselineHistoryFigure step;
  step.name = figure;
  step.unit = "ms";
  step.direction = "lower";
  step.baseline_value = 10.35;
  step.bound_percent = 10;
  step.bound_value = 11.385;
  step.rule = "default: *_ms (time)";
  step.values = {10.35, 10.4, 20.7, 20.6};
  step.verdicts = {"", "ok", "regression", ""};
  BaselineHistoryFigure acc;
  acc.name = "accuracy";
  acc.direction = "higher";
  acc.baseline_value = 0.95;
  acc.bound_percent = 1;
  acc.bound_value = 0.9405;
  acc.values = {0.95, 0.95, std::nullopt, std::numeric_limits<double>::quiet_NaN()};
  acc.verdicts = {"", "ok", "missing", ""};
  BaselineHistoryFigure mem;
  mem.name = "peak_gpu_memory_bytes";
  mem.unit = "By";
  mem.direction = "unknown";
  mem.values = {1024.0 * 1024 * 1024, std::nullopt, std::nullopt, std::nullopt};
  mem.verdicts = {"", "info", "", ""};
  h.figures = {step, acc, mem};
  return h;
}

// The embedded page data, parsed back.
nlohmann::json data_of(const std::string& page) {
  const std::string open = "<script type=\"application/json\" id=\"gpudoc-data\">";
  auto a = page.find(open);
  EXPECT_NE(a, std::string::npos);
  a += open.size();
  auto b = page.find("</script>", a);
  EXPECT_NE(b, std::string::npos);
  return nlohmann::json::parse(page.substr(a, b - a));
}

std::size_t count(const std::string& s, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t p = 0; (p = s.find(needle, p)) != std::string::npos; p += needle.size()) ++n;
  return n;
}

TEST(BaselineHistoryHtml, EveryFigureHasAPlotHostATableAndItsColumns) {
  const std::string page = render_baseline_history_html(make_history(), kAssets);
  EXPECT_EQ(page.rfind("<!doctype html>", 0), 0u);
  EXPECT_NE(page.find("<title>gpudoc baseline history — train</title>"), std::string::npos);
  for (int i = 0; i < 3; ++i) EXPECT_NE(page.find("id=\"plot-" + std::to_string(i) + "\""), std::string::npos) << i;
  EXPECT_NE(page.find("lower is better · bound +10.0 % · baseline 10.35 ms · regression beyond 11.38 ms"),
            std::string::npos);
  EXPECT_NE(page.find("higher is better · bound −1.0 % · baseline 0.95 · regression beyond 0.9405"), std::string::npos);
  EXPECT_NE(page.find("no direction known: shown, not gated"), std::string::npos);
  EXPECT_NE(page.find("<td class=\"num\">1.0 GiB</td>"), std::string::npos);  // bytes in GiB, not 1073741824
  EXPECT_NE(page.find("<td class=\"v-regression\">REGRESSION</td>"), std::string::npos);
  EXPECT_NE(page.find("<td class=\"v-missing\">MISSING</td>"), std::string::npos);
  EXPECT_NE(page.find("<td>1*</td>"), std::string::npos);  // the golden run is marked
  EXPECT_NE(page.find("2026-12-01 01:00:00Z"), std::string::npos);

  const auto d = data_of(page);
  EXPECT_EQ(d["baseline"], "train");
  ASSERT_EQ(d["runs"].size(), 4u);
  EXPECT_DOUBLE_EQ(d["runs"][1]["t"].get<double>(), 1796086800.0);
  EXPECT_EQ(d["runs"][0]["golden"], true);
  EXPECT_EQ(d["runs"][3]["role"], "confirm");
  ASSERT_EQ(d["figures"].size(), 3u);
  const auto& step = d["figures"][0];
  EXPECT_EQ(step["name"], "step_ms");
  EXPECT_EQ(step["values"], nlohmann::json({10.35, 10.4, 20.7, 20.6}));
  EXPECT_EQ(step["verdicts"], nlohmann::json({"", "ok", "regression", ""}));
  EXPECT_DOUBLE_EQ(step["baseline"].get<double>(), 10.35);
  EXPECT_DOUBLE_EQ(step["bound"].get<double>(), 11.385);
  // Absent and not-finite values are gaps; a figure without a direction has no lines.
  EXPECT_EQ(d["figures"][1]["values"], nlohmann::json({0.95, 0.95, nullptr, nullptr}));
  EXPECT_TRUE(d["figures"][2]["baseline"].is_null());
  EXPECT_TRUE(d["figures"][2]["bound"].is_null());
}

TEST(BaselineHistoryHtml, HostileNamesAreEscapedAndCannotEndTheScript) {
  const std::string evil = "</script><script>alert(1)</script><b>&'\"";
  const std::string page =
      render_baseline_history_html(make_history(evil, "x</SCRIPT><img src=x onerror=alert(2)>"), kAssets);
  // Four script elements (error hook, data, the plot library, the page's code): no more ends.
  EXPECT_EQ(count(page, "</script>"), 4u);
  EXPECT_EQ(page.find("<script>alert"), std::string::npos);
  EXPECT_EQ(page.find("<img"), std::string::npos);
  EXPECT_EQ(page.find("</SCRIPT>"), std::string::npos);
  EXPECT_NE(page.find("&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;b&gt;&amp;&#39;&quot;"),
            std::string::npos);
  EXPECT_NE(page.find("<code>x&lt;/SCRIPT&gt;&lt;img src=x onerror=alert(2)&gt;</code>"), std::string::npos);
  // The library's own "</script>" is guarded too, and the data still reads back unchanged.
  EXPECT_NE(page.find("var s = \"<\\/script>\";"), std::string::npos);
  const auto d = data_of(page);
  EXPECT_EQ(d["baseline"], evil);
  EXPECT_EQ(d["figures"][0]["name"], "x</SCRIPT><img src=x onerror=alert(2)>");
}

TEST(BaselineHistoryHtml, InvalidUtf8AndAnEmptyHistoryStillRender) {
  BaselineHistory h = make_history("bad\xff\xfename", "fig\xc3");
  std::string page;
  ASSERT_NO_THROW(page = render_baseline_history_html(h, kAssets));
  EXPECT_NO_THROW((void)data_of(page));
  BaselineHistory empty;
  empty.name = "none";
  page = render_baseline_history_html(empty, kAssets);
  EXPECT_NE(page.find("No figures"), std::string::npos);
  EXPECT_EQ(data_of(page)["figures"].size(), 0u);
}

TEST(BaselineHistoryHtml, UsesTheEmbeddedAssetsWhenBuiltWithThem) {
  auto page = render_baseline_history_html(make_history());
  if (!web_assets()) {
    ASSERT_FALSE(page.ok());
    EXPECT_EQ(page.error().kind(), core::ErrorKind::kEnvironment);
    return;
  }
  ASSERT_TRUE(page.ok());
  EXPECT_NE(page->find("uPlot"), std::string::npos);
  EXPECT_LT(page->size(), 200u * 1024);
}

}  // namespace
}  // namespace gpudoc::view
