// The work a job reports (telemetry/work.hpp): steps are a counter, samples and tokens add up; a
// command's ::gpudoc lines gathered into step events that keep those totals.
#include "telemetry/work.hpp"

#include <gtest/gtest.h>

namespace gpudoc::telemetry {
namespace {

TEST(TelemetryWork, StepIsACounterSamplesAndTokensAddUp) {
  WorkCounter w;
  EXPECT_TRUE(w.add(nlohmann::json::parse(R"({"step": 10, "samples": 256, "tokens": 1000, "loss": 2.0})")).empty());
  EXPECT_TRUE(w.add(nlohmann::json::parse(R"({"step": 20, "samples": 256, "tokens": 1000})")).empty());
  EXPECT_TRUE(w.add(nlohmann::json::parse(R"({"step": 15})")).empty());  // out of order: the largest stands
  EXPECT_DOUBLE_EQ(*w.work().steps, 20);
  EXPECT_DOUBLE_EQ(*w.work().samples, 512);
  EXPECT_DOUBLE_EQ(*w.work().tokens, 2000);
}

TEST(TelemetryWork, EventsAndBadValuesAreNotCounted) {
  WorkCounter w;
  EXPECT_TRUE(w.add(nlohmann::json::parse(R"({"event": "end", "steps": 99, "samples": 5})")).empty());
  const auto refused = w.add(nlohmann::json::parse(R"({"samples": -1, "tokens": "many", "step": null})"));
  EXPECT_EQ(refused, (std::vector<std::string>{"step", "samples", "tokens"}));
  EXPECT_TRUE(w.work().empty());
  EXPECT_TRUE(w.add(nlohmann::json::array()).empty());
}

TEST(TelemetryWork, RunsAddUpAndJsonNamesWhatIsMissing) {
  Work a{.steps = 10, .samples = 100, .tokens = std::nullopt};
  a.add(Work{.steps = 5, .samples = std::nullopt, .tokens = 7});
  EXPECT_DOUBLE_EQ(*a.steps, 15);
  EXPECT_DOUBLE_EQ(*a.samples, 100);
  EXPECT_DOUBLE_EQ(*a.tokens, 7);
  const auto j = to_json(Work{.steps = 3, .samples = std::nullopt, .tokens = std::nullopt});
  EXPECT_EQ(j["steps"], 3.0);
  EXPECT_TRUE(j["samples"].is_null());
  EXPECT_TRUE(is_work_key("tokens"));
  EXPECT_FALSE(is_work_key("step_ms"));
}

TEST(TelemetryWorkLines, LinesBetweenTwoTakesBecomeOneEventWithTheirTotals) {
  WorkLines w;
  EXPECT_FALSE(w.take().has_value());
  w.add_line(R"(::gpudoc {"step": 1, "samples": 32, "tokens": 4096, "loss": 2.5})");
  w.add_line(R"(::gpudoc {"step": 2, "samples": 32, "tokens": 4096})");
  w.add_line("epoch 1 done");                                    // not a ::gpudoc line
  w.add_line(R"(::gpudoc {"step_ms": 41.2})");                   // figures only: no work
  w.add_line(R"(::gpudoc {"event": "phase", "samples": 999})");  // an event, not a report
  w.add_line(R"(::gpudoc {"samples": )");                        // not JSON
  w.add_line(R"(::gpudoc [1, 2])");                              // not an object
  auto first = w.take();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(*first, nlohmann::json::parse(R"({"step": 2.0, "samples": 64.0, "tokens": 8192.0, "lines": 2})"));
  EXPECT_FALSE(w.take().has_value()) << "nothing came since";
  w.add_line(R"(::gpudoc {"step": 3, "samples": 32})");
  auto second = w.take();
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(*second, nlohmann::json::parse(R"({"step": 3.0, "samples": 32.0, "lines": 1})"));
  // The events' totals read back as the lines': steps a counter, samples summed.
  WorkCounter total;
  EXPECT_TRUE(total.add(*first).empty());
  EXPECT_TRUE(total.add(*second).empty());
  EXPECT_DOUBLE_EQ(*total.work().steps, 3);
  EXPECT_DOUBLE_EQ(*total.work().samples, 96);
  EXPECT_DOUBLE_EQ(*total.work().tokens, 8192);
}

TEST(TelemetryWorkLines, RefusedValuesAreCountedAndBadBytesDoNotStopTheLine) {
  WorkLines w;
  w.add_line(R"(::gpudoc {"samples": -5, "tokens": "many"})");
  w.add_line("::gpudoc {\"samples\": 8, \"name\": \"b\xff\"}");  // invalid UTF-8 in a string
  auto f = w.take();
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ((*f)["refused"], 2);
  EXPECT_EQ((*f)["lines"], 2);
  EXPECT_EQ((*f)["samples"], 8.0);
  EXPECT_FALSE(f->contains("tokens"));
}

}  // namespace
}  // namespace gpudoc::telemetry
