// view/diagnoses.hpp: one or several diagnoses as JSON and as the report's verdict line.
#include "view/diagnoses.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpudoc::view {
namespace {

diagnose::Diagnosed with_findings(const std::string& source, std::vector<findings::Severity> severities) {
  diagnose::Diagnosed d;
  d.diagnosis.source = source;
  for (auto s : severities) d.diagnosis.findings.push_back(findings::make_finding("sawtooth", s));
  return d;
}

TEST(Diagnoses, TallyCountsAtOrAboveTheThresholdAndKeepsTheWorst) {
  std::vector<diagnose::Diagnosed> items;
  items.push_back(with_findings("a", {findings::Severity::kInfo, findings::Severity::kWarning}));
  items.push_back(with_findings("b", {findings::Severity::kCritical}));
  const auto t = tally(items, findings::Severity::kWarning);
  EXPECT_EQ(t.at_or_above, 2u);
  ASSERT_TRUE(t.worst);
  EXPECT_EQ(*t.worst, findings::Severity::kCritical);
  EXPECT_EQ(t.exit_code(), 1);
  const auto none = tally(items, findings::Severity::kCritical);
  EXPECT_EQ(none.at_or_above, 1u);
  std::vector<diagnose::Diagnosed> empty;
  EXPECT_EQ(tally(empty, findings::Severity::kInfo).exit_code(), 0);
  EXPECT_FALSE(tally(empty, findings::Severity::kInfo).worst);
}

TEST(Diagnoses, SeveralTracesListEveryFindingWithItsTrace) {
  std::vector<diagnose::Diagnosed> items;
  items.push_back(with_findings("a.jsonl", {findings::Severity::kWarning}));
  items.push_back(with_findings("b.jsonl", {findings::Severity::kInfo}));
  const auto threshold = findings::Severity::kWarning;
  const auto j = diagnoses_json(items, threshold, tally(items, threshold));
  ASSERT_EQ(j["traces"].size(), 2u);
  ASSERT_EQ(j["findings"].size(), 2u);
  EXPECT_EQ(j["findings"][0]["trace"], "a.jsonl");
  EXPECT_EQ(j["findings"][1]["trace"], "b.jsonl");
  EXPECT_EQ(j["threshold"], "warning");
  EXPECT_EQ(j["max_severity"], "warning");
  EXPECT_EQ(j["exit_code"], 1);
  items.pop_back();
  const auto one = diagnoses_json(items, threshold, tally(items, threshold));
  EXPECT_FALSE(one.contains("traces"));
  EXPECT_EQ(one["findings"].size(), 1u);
}

TEST(Diagnoses, TheVerdictLinePromisesExit1OnlyForThisMachine) {
  std::vector<diagnose::Diagnosed> items;
  items.push_back(with_findings("a", {findings::Severity::kCritical}));
  const auto threshold = findings::Severity::kWarning;
  const auto t = tally(items, threshold);
  const auto live =
      render_diagnoses(items, threshold, t, {.color = false, .banner = "", .closing = "bye\x1b[2J", .replay = false});
  EXPECT_NE(live.find("1 finding at or above warning (exit 1)."), std::string::npos) << live;
  EXPECT_EQ(live.find('\x1b'), std::string::npos) << "the closing line is escaped";
  const auto replay =
      render_diagnoses(items, threshold, t, {.color = false, .banner = "", .closing = "", .replay = true});
  EXPECT_NE(replay.find("1 finding at or above warning in the replayed traces."), std::string::npos) << replay;
  std::vector<diagnose::Diagnosed> clean;
  clean.push_back(with_findings("a", {}));
  EXPECT_NE(render_diagnoses(clean, threshold, tally(clean, threshold), {}).find("No finding at or above warning."),
            std::string::npos);
}

}  // namespace
}  // namespace gpudoc::view
