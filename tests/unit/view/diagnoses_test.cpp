// view/diagnoses.hpp: one or several diagnoses as JSON and as the report's verdict line.
#include "view/diagnoses.hpp"

#include <gtest/gtest.h>

#include <algorithm>
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

TEST(Diagnoses, ThePageIsTitledByItsTraceOrTheirNumber) {
  std::vector<diagnose::Diagnosed> items;
  items.push_back(with_findings("/data/run.jsonl", {findings::Severity::kWarning}));
  EXPECT_EQ(diagnoses_title(items), "run.jsonl");
  auto page = diagnoses_html(items, {.banner = "REPLAY"});
  if (!page && page.error().kind() == core::ErrorKind::kEnvironment) GTEST_SKIP() << "built without uPlot";
  ASSERT_TRUE(page.ok()) << page.error().message();
  EXPECT_NE(page->find("<title>gpudoc diagnose — run.jsonl</title>"), std::string::npos);
  EXPECT_NE(page->find("REPLAY"), std::string::npos);
  auto titled = diagnoses_html(items, {.title = "mine"});
  ASSERT_TRUE(titled.ok());
  EXPECT_NE(titled->find("<title>gpudoc diagnose — mine</title>"), std::string::npos);
  items.push_back(with_findings("/data/b.jsonl", {}));
  EXPECT_EQ(diagnoses_title(items), "2 traces");
}

TEST(Diagnoses, ALiveRunSaysTheCommandsExitCodeAndWhereTheTraceIs) {
  diagnose::LiveResult r;
  r.command_exit_code = 3;
  r.trace_path = "/tmp/gpudoc-diagnose-x/live.jsonl";
  r.end_reason = "command_exited";
  const auto s = live_summary(r);
  EXPECT_EQ(s.closing,
            "The command exited with code 3. The trace is in /tmp/gpudoc-diagnose-x/live.jsonl (gpudoc diagnose "
            "/tmp/gpudoc-diagnose-x/live.jsonl --html report.html to look at it again).");
  EXPECT_EQ(s.extra["command_exit_code"], 3);
  EXPECT_EQ(s.extra["trace"], r.trace_path);
  EXPECT_EQ(s.extra["end_reason"], "command_exited");
  diagnose::LiveResult plain;
  plain.end_reason = "duration";
  const auto p = live_summary(plain);
  EXPECT_EQ(p.closing, "");
  EXPECT_FALSE(p.extra.contains("trace"));
  EXPECT_FALSE(p.extra.contains("command_exit_code"));
}

TEST(Diagnoses, DoctorSaysWhoseGpusItLookedAt) {
  EXPECT_EQ(doctor_closing(10, true, false).rfind("That was 10 s of live telemetry.", 0), 0U);
  EXPECT_EQ(doctor_closing(10, false, true), "That was a replayed recording, not this machine's GPUs.");
  EXPECT_EQ(doctor_closing(10, false, false), "That was scripted fake GPUs, not this machine's GPUs.");
  const auto unasked = doctor_replay_words(3, "/usr/share/gpudoc/traces", "no NVIDIA driver", false);
  EXPECT_EQ(unasked.intro.rfind("No live GPU here (no NVIDIA driver).\nThis is a REPLAY", 0), 0U) << unasked.intro;
  EXPECT_NE(unasked.banner.find("(/usr/share/gpudoc/traces)"), std::string::npos);
  EXPECT_NE(unasked.closing.find("a replay of 3 recorded H200 traces, not this machine: no NVIDIA driver."),
            std::string::npos);
  EXPECT_NE(unasked.closing.find("gpudoc diagnose /usr/share/gpudoc/traces/*.jsonl"), std::string::npos);
  EXPECT_EQ(doctor_replay_words(3, "/d", "--replay was given", true).intro.rfind("This is a REPLAY", 0), 0U);
}

TEST(Diagnoses, TheFindingsHelpListsEveryDiagnoseFindingOfTheCatalogAndNoOther) {
  const std::string help = findings_help();
  EXPECT_EQ(help.rfind("Findings (docs/findings.md):\n", 0), 0u) << help;
  EXPECT_NE(help.find("\n  sawtooth          Sawtooth: the GPU waits for its input\n"), std::string::npos) << help;
  std::size_t diagnose_entries = 0;
  for (const auto& e : findings::catalog()) {
    const bool listed = help.find("\n  " + std::string(e.id) + " ") != std::string::npos;
    EXPECT_EQ(listed, e.area == "diagnose") << e.id;
    diagnose_entries += e.area == "diagnose" ? 1 : 0;
  }
  EXPECT_EQ(static_cast<std::size_t>(std::count(help.begin(), help.end(), '\n')), diagnose_entries + 1);
}

}  // namespace
}  // namespace gpudoc::view
