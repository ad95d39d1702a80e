// view::build_health_history: the stored `gpudoc health --json` documents as `gpudoc report` plots
// them — one value per run and series (NaN where a run lacks it), and every warning and failure.
#include "view/health_report.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace gpudoc::view {
namespace {

store::StoredResult run_at(std::int64_t unix_s, nlohmann::json payload) {
  store::StoredResult r;
  r.kind = "health";
  r.time_unix_ns = unix_s * 1'000'000'000;
  r.payload = std::move(payload);
  return r;
}

TEST(HealthHistory, EachRunIsAColumnOfEverySeriesAndItsProblemsAreListed) {
  std::vector<store::StoredResult> rows;
  rows.push_back(run_at(
      1'700'000'000,
      {{"checks",
        {{{"gpu", 0},
          {"check", "clocks"},
          {"status", "pass"},
          {"values", {{{"name", "sm_clock_mhz"}, {"value", 1980}}, {{"name", "not_plotted"}, {"value", 1}}}}}}}}));
  rows.push_back(run_at(1'700'000'060, {{"checks",
                                         {{{"gpu", 0},
                                           {"check", "ecc"},
                                           {"status", "fail"},
                                           {"evidence", "2 uncorrected"},
                                           {"values", {{{"name", "temperature_celsius"}, {"value", 70}}}}},
                                          {{"check", "driver"}, {"status", "warn"}, {"evidence", "old"}}}}}));
  rows.push_back(run_at(1'700'000'120, nlohmann::json::object()));  // no checks: adds nothing

  const HealthHistory h = build_health_history(rows);
  ASSERT_EQ(h.times_s.size(), 3U);
  EXPECT_DOUBLE_EQ(h.times_s[1], 1'700'000'060.0);
  ASSERT_EQ(h.series.count(0), 1U);
  const auto& gpu0 = h.series.at(0);
  EXPECT_EQ(gpu0.count("not_plotted"), 0U);
  const auto& clock = gpu0.at("sm_clock_mhz");
  ASSERT_EQ(clock.size(), 3U);
  EXPECT_DOUBLE_EQ(clock[0], 1980.0);
  EXPECT_TRUE(std::isnan(clock[1]));
  EXPECT_TRUE(std::isnan(clock[2]));
  const auto& temp = gpu0.at("temperature_celsius");
  ASSERT_EQ(temp.size(), 3U);
  EXPECT_TRUE(std::isnan(temp[0]));
  EXPECT_DOUBLE_EQ(temp[1], 70.0);
  ASSERT_EQ(h.problems.size(), 2U);
  EXPECT_NE(h.problems[0].find("GPU 0 ecc fail: 2 uncorrected"), std::string::npos) << h.problems[0];
  EXPECT_NE(h.problems[1].find("node driver warn: old"), std::string::npos) << h.problems[1];
}

}  // namespace
}  // namespace gpudoc::view
