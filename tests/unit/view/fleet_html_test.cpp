// view::fleet_html: every table figure names its place in fleet::to_json's document and carries its
// exact value there; names from Prometheus are escaped; the timeline, the causes and the groups each
// get their plot's place.
#include "view/fleet_html.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "view/web_assets.hpp"

namespace gpudoc::view {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

fleet::FleetReport hostile_report() {
  fleet::FleetReport r;
  r.url = "http://prom:9090";
  r.start_s = 1.7e9;
  r.end_s = 1.7e9 + 7 * 86400;
  r.by = "namespace";
  r.gpus = 3;
  r.nodes = {"node-a", "<b>node-b</b>"};
  r.now = {.observed_s = 36000,
           .useful_s = 20000,
           .unexplained_s = 4000,
           .lost_s = 12000,
           .energy_j = 9e6,
           .lost_energy_j = 2e6,
           .money = {{"USD", 37.2}},
           .money_lost = {{"USD", 12.4}},
           .unpriced_s = 1800};
  r.previous = {.observed_s = 30000, .useful_s = 15000, .unexplained_s = 5000, .lost_s = 10000};
  r.causes = {{.id = "input_bound",
               .gpu_s = 9000,
               .energy_j = 1.5e6,
               .money = {{"USD", 9.3}},
               .previous_gpu_s = 7000,
               .title = "The GPU waits on its input",
               .next_step = "gpudoc profile -- <cmd>"},
              {.id = "straggler",
               .gpu_s = 3000,
               .energy_j = 5e5,
               .money = {},
               .previous_gpu_s = 0,
               .title = "",
               .next_step = ""}};
  r.groups = {{.key = "team-<script>alert(1)</script>",
               .observed_s = 20000,
               .useful_s = 9000,
               .lost_s = 9000,
               .money_lost = {{"USD", 9.3}}},
              {.key = "", .observed_s = 16000, .useful_s = 11000, .lost_s = 3000, .money_lost = {}}};
  r.worst_jobs = {r.groups.front()};
  r.notes = {"1 node(s) stopped reporting inside the period: <b>node-b</b>"};
  r.warnings = {"remote store <i>slow</i>"};
  r.timeline = {.step_s = 21600,
                .end_s = {1.7e9 + 21600, 1.7e9 + 43200},
                .useful_s = {100, 200},
                .lost_s = {50, 60},
                .unexplained_s = {5, 6}};
  return r;
}

TEST(FleetHtml, EveryFigureIsTheJsonsAtItsPlace) {
  if (!web_assets()) GTEST_SKIP() << "built without uPlot (npm ci --prefix web)";
  const fleet::FleetReport r = hostile_report();
  auto page = fleet_html(r);
  ASSERT_TRUE(page) << page.error().message();
  const nlohmann::json doc = fleet::to_json(r);
  static const std::regex kFigure(R"re(data-figure="([^"]+)" data-value="([^"]+)")re");
  int checked = 0;
  for (std::sregex_iterator it(page->begin(), page->end(), kFigure), end; it != end; ++it, ++checked) {
    const std::string path = (*it)[1].str();
    nlohmann::json at = doc;
    for (std::size_t from = 0; from <= path.size();) {
      const std::size_t dot = std::min(path.find('.', from), path.size());
      const std::string key = path.substr(from, dot - from);
      ASSERT_TRUE(at.is_array() || at.contains(key)) << path;
      at = at.is_array() ? nlohmann::json(at.at(std::stoul(key))) : nlohmann::json(at[key]);
      from = dot + 1;
    }
    EXPECT_EQ(std::stod((*it)[2].str()), at.get<double>()) << path;
  }
  // Every figure carries its value, and the page's tables hold the totals, the two periods, both
  // causes and both groups (38 figures for this report).
  std::size_t named = 0;
  for (std::size_t at = page->find("data-figure="); at != std::string::npos; at = page->find("data-figure=", at + 1)) {
    ++named;
  }
  EXPECT_EQ(named, static_cast<std::size_t>(checked));
  EXPECT_GE(checked, 30);
  EXPECT_THAT(*page, HasSubstr("data-figure=\"causes.0.gpu_hours\""));
  EXPECT_THAT(*page, HasSubstr("data-figure=\"totals.money.USD\""));
}

TEST(FleetHtml, NamesFromPrometheusAreEscapedAndEachPlotHasItsPlace) {
  if (!web_assets()) GTEST_SKIP() << "built without uPlot (npm ci --prefix web)";
  auto page = fleet_html(hostile_report());
  ASSERT_TRUE(page) << page.error().message();
  EXPECT_THAT(*page, Not(HasSubstr("<script>alert(1)")));
  EXPECT_THAT(*page, Not(HasSubstr("<b>node-b")));
  EXPECT_THAT(*page, Not(HasSubstr("<i>slow")));
  EXPECT_THAT(*page, HasSubstr("team-&lt;script&gt;alert(1)&lt;/script&gt;"));
  EXPECT_THAT(*page, HasSubstr("gpudoc profile -- &lt;cmd&gt;"));
  for (const char* id : {"id=\"timeline\"", "id=\"causes\"", "id=\"groups-plot\"", "id=\"gpudoc-data\""})
    EXPECT_THAT(*page, HasSubstr(id));
  EXPECT_THAT(*page, HasSubstr("(none)"));  // the group without the label
}

TEST(FleetHtml, APeriodWithoutCausesOrGroupsSaysSo) {
  if (!web_assets()) GTEST_SKIP() << "built without uPlot (npm ci --prefix web)";
  fleet::FleetReport r;
  r.by = "node";
  auto page = fleet_html(r);
  ASSERT_TRUE(page) << page.error().message();
  EXPECT_THAT(*page, HasSubstr("No GPU time was lost to a named cause in the period."));
  EXPECT_THAT(*page, HasSubstr("None in the period."));
  EXPECT_THAT(*page, Not(HasSubstr("id=\"causes\"")));
}

}  // namespace
}  // namespace gpudoc::view
