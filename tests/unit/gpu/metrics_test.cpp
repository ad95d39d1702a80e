#include "gpu/metrics.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

namespace gpudoc::gpu {
namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Units live in names: every metric's name ends with the word for its unit.
TEST(Metrics, EveryNameEndsWithItsUnit) {
  const std::map<std::string, std::set<std::string>> suffix_for_unit = {
      {"percent", {"_percent"}},
      {"W", {"_watts"}},
      {"MHz", {"_mhz"}},
      {"Cel", {"_celsius"}},
      {"By", {"_bytes"}},
      {"By/s", {"_bytes_per_second"}},
      {"J", {"_joules"}},
      {"bitmask", {"_mask"}},
      {"1", {"_generation", "_width", "_errors", "_rows"}},
      {"bool", {"_pending", "_failure"}}};
  for (Metric m : all_metrics()) {
    const auto& mi = info(m);
    auto it = suffix_for_unit.find(std::string(mi.unit));
    ASSERT_NE(it, suffix_for_unit.end()) << mi.name << " has an unknown unit " << mi.unit;
    bool ok = false;
    for (const auto& s : it->second) ok = ok || ends_with(mi.name, s);
    EXPECT_TRUE(ok) << mi.name << " does not end with the suffix for unit " << mi.unit;
  }
}

TEST(Metrics, NamesRoundTripAndAreUnique) {
  std::set<std::string_view> seen;
  for (Metric m : all_metrics()) {
    EXPECT_TRUE(seen.insert(info(m).name).second);
    EXPECT_EQ(metric_from_name(info(m).name), m);
  }
  EXPECT_FALSE(metric_from_name("gpu_utilisation").has_value());
}

TEST(Metrics, GroupsRespectSensorRates) {
  EXPECT_GE(info(MetricGroup::kGpm).min_period.count(), 100);          // GPM samples >= 100 ms apart
  EXPECT_GE(info(MetricGroup::kEnergy).default_period.count(), 1000);  // 4 ms of CPU per read
  EXPECT_GE(info(MetricGroup::kProcesses).default_period.count(), 1000);
  for (MetricGroup g : all_groups()) {
    EXPECT_GE(info(g).default_period, info(g).min_period) << info(g).name;
    EXPECT_EQ(group_from_name(info(g).name), g);
    EXPECT_TRUE(metrics_in(g).any() || g == MetricGroup::kProcesses) << info(g).name;
  }
}

TEST(Metrics, ClockEventReasonNames) {
  EXPECT_EQ(clock_event_reason_names(0), "none");
  EXPECT_EQ(clock_event_reason_names(0x1), "gpu_idle");
  EXPECT_EQ(clock_event_reason_names(0x4 | 0x40), "sw_power_cap,hw_thermal_slowdown");
  EXPECT_EQ(clock_event_reason_names(0x10000), "other");
}

// --period GROUP=MS, moved here from the CLI with its messages.
TEST(Metrics, ParseGroupPeriod) {
  auto ok = parse_group_period("fast=200");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->first, MetricGroup::kFast);
  EXPECT_EQ(ok->second, std::chrono::milliseconds(200));
  EXPECT_EQ(parse_group_period("energy=0")->second.count(), 0);  // 0 turns it off
  auto fast = parse_group_period("fast=10");
  ASSERT_FALSE(fast.ok());
  EXPECT_EQ(fast.error().kind(), core::ErrorKind::kUsage);
  EXPECT_EQ(fast.error().message().rfind("fast=10: 10 ms is faster than the sensor allows (minimum 100 ms: ", 0), 0u)
      << fast.error().message();
  EXPECT_EQ(parse_group_period("warp=100")
                .error()
                .message()
                .rfind("warp=100: unknown group 'warp' (groups: utilization, fast", 0),
            0u);
  EXPECT_EQ(parse_group_period("fast").error().message(), "fast: expected GROUP=MS, e.g. fast=100");
  const std::string expected = "; expected milliseconds, a whole number from 0 to 86400000 (0 turns the group off)";
  const std::pair<const char*, const char*> bad[] = {
      {"fast=", "not a number"},           {"fast=1.5", "not a whole number"},
      {"fast=-100", "out of range"},       {"fast=100ms", "not a number"},
      {"fast=inf", "not a finite number"}, {"fast=99999999999999999999", "out of range"},
      {"fast=86400001", "out of range"},
  };
  for (const auto& [text, why] : bad)
    EXPECT_EQ(parse_group_period(text).error().message(), std::string(text) + ": " + why + expected) << text;
  EXPECT_EQ(parse_group_period("energy=86400000")->second.count(), 86'400'000);  // a day at most
  const std::string help = describe_groups();
  for (MetricGroup g : all_groups()) EXPECT_NE(help.find(info(g).name), std::string::npos);
  EXPECT_NE(help.find("fast            100 ms (min 100 ms)"), std::string::npos) << help;
  // A command's own defaults: a group it leaves off says so.
  std::array<std::chrono::milliseconds, kMetricGroupCount> periods{};
  for (MetricGroup g : all_groups()) periods[index(g)] = info(g).default_period;
  periods[index(MetricGroup::kGpm)] = std::chrono::milliseconds(0);
  periods[index(MetricGroup::kFast)] = std::chrono::milliseconds(250);
  const std::string own = describe_groups(periods);
  EXPECT_NE(own.find("gpm                off (min 100 ms)"), std::string::npos) << own;
  EXPECT_NE(own.find("fast            250 ms (min 100 ms)"), std::string::npos) << own;
}

}  // namespace
}  // namespace gpudoc::gpu
