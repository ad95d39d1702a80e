// The Cost block and the HTML section (view/cost_view.hpp) on a real H200 trace: time and energy
// without prices, money with them, every name from the trace escaped.
#include "view/cost_view.hpp"

#include <gtest/gtest.h>

#include "diagnose/diagnose.hpp"
#include "telemetry/trace.hpp"
#include "view/baseline_report.hpp"
#include "view/diagnose_html.hpp"
#include "view/profile_report.hpp"

namespace gpudoc::view {
namespace {

cost::JobCost job_of(const std::string& name, const std::string& gpu_name = "") {
  auto t = telemetry::read_trace_file(std::string(GPUDOC_SOURCE_DIR) + "/tests/data/" + name);
  if (!t) throw std::runtime_error(t.error().message());
  if (!gpu_name.empty()) t->header.gpus[0].name = gpu_name;
  const auto d = diagnose::diagnose(*t, {});
  return cost::cost_of_trace(*t, d, {});
}

TEST(CostView, WithoutPricesTimeAndEnergyAndWhatMoneyNeeds) {
  const std::string text = render_cost(job_of("sawtooth_p1000_d50.jsonl"), cost::PriceBook{});
  EXPECT_EQ(text.rfind("Cost: 1 GPU × ", 0), 0u) << text;
  EXPECT_NE(text.find("GPU-h"), std::string::npos);
  EXPECT_NE(text.find("kWh (NVML energy counter"), std::string::npos) << text;
  EXPECT_NE(text.find("useful"), std::string::npos);
  EXPECT_NE(text.find("sawtooth"), std::string::npos);
  EXPECT_NE(text.find("unexplained"), std::string::npos);
  EXPECT_NE(text.find("money needs a price"), std::string::npos);
  EXPECT_EQ(text.find("USD"), std::string::npos);
}

TEST(CostView, WithPricesMoneyAndCo2InTheBooksCurrency) {
  cost::PriceBook book;
  book.currency = "EUR";
  book.overrides.value[cost::kGpuHour] = 3.72;
  book.overrides.value[cost::kKwh] = 0.14;
  book.overrides.value[cost::kPue] = 1.3;
  book.overrides.value[cost::kCo2] = 380;
  const std::string text = render_cost(job_of("gemm_saturated.jsonl"), book);
  EXPECT_NE(text.find(" EUR"), std::string::npos) << text;
  EXPECT_NE(text.find(" CO2"), std::string::npos);
  EXPECT_EQ(text.find("money needs a price"), std::string::npos);
}

TEST(CostView, NamesFromTheTraceAreEscaped) {
  cost::PriceBook book;
  const auto job = job_of("idle.jsonl", "evil\x1b]0;owned\x07<script>");
  // The GPU's name reaches the text where a price is missing for it.
  book.currency = "USD";
  book.entries.push_back({.gpu = "other", .node = std::nullopt, .values = {}});
  book.entries.back().values.value[cost::kKwh] = 0.1;
  const std::string text = render_cost(job, book);
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_NE(text.find("no GPU-hour price"), std::string::npos) << text;
  const std::string html = cost_html(job, book);
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;"), std::string::npos);
}

TEST(CostView, TheDiagnosePageHasACostSectionWhenAskedFor) {
  auto t = telemetry::read_trace_file(std::string(GPUDOC_SOURCE_DIR) + "/tests/data/sawtooth_p500_d50.jsonl");
  ASSERT_TRUE(t);
  const auto d = diagnose::diagnose(*t, {});
  const WebAssets assets{"/*uplot*/", ".u{}", "uplot test"};
  HtmlReport r{&*t, &d};
  const cost::PriceBook book;
  EXPECT_EQ(render_diagnose_html({&r, 1}, {}, assets).find("<div class=\"cost\">"), std::string::npos);
  const std::string page = render_diagnose_html({&r, 1}, {.prices = &book}, assets);
  EXPECT_NE(page.find("<div class=\"cost\"><h3>Cost</h3>"), std::string::npos);
  EXPECT_NE(page.find("<code>sawtooth</code>"), std::string::npos);
}

TEST(CostView, AProfileSaysWhatItsStepsCostWithoutEnergy) {
  profile::Profile p;
  p.kernel_count = 10;
  p.span_ns = 2'000'000'000;
  p.busy_ns = 1'500'000'000;
  p.idle_ns = {500'000'000, 0, 0, 0, 0};
  p.steps.resize(4);
  cost::PriceBook book;
  book.currency = "USD";
  book.overrides.value[cost::kGpuHour] = 3.6;
  const std::string text = profile_text(p, {"python3", "train.py"}, {.prices = &book, .host = "node"});
  EXPECT_NE(text.find("Cost: 1 GPU × 2.00 s (the profile's analysed steps)"), std::string::npos) << text;
  EXPECT_NE(text.find("launch"), std::string::npos);
  EXPECT_NE(text.find("per step: 500 ms of GPU time, 0.000500 USD"), std::string::npos) << text;
  EXPECT_EQ(profile_text(p, {"x"}).find("Cost:"), std::string::npos);
  // Under a millisecond a unit, a line speaks of a thousand or a million of them (as many as ran).
  p.steps.resize(4000);
  EXPECT_NE(profile_text(p, {"x"}, {.prices = &book, .host = "node"})
                .find("per thousand steps: 500 ms of GPU time, 0.000500 USD (4000 steps reported)"),
            std::string::npos);
  p.steps.resize(4'000'000);
  EXPECT_NE(profile_text(p, {"x"}, {.prices = &book, .host = "node"})
                .find("per million steps: 500 ms of GPU time, 0.000500 USD (4000000 steps reported)"),
            std::string::npos);
  const auto j = profile_json(p, {"x"}, {.prices = &book, .host = "node"});
  EXPECT_EQ(j["cost"]["gpu_time_us"], 2'000'000);
  EXPECT_TRUE(j["cost"]["energy_mj"].is_null());
  EXPECT_DOUBLE_EQ(j["cost"]["money"].get<double>(), 0.002);
}

TEST(CostView, ABaselineRecordSaysWhatItsWorkloadRunsCost) {
  baseline::Recorded r;
  r.baseline.name = "train";
  r.run_id = 7;
  const std::string without = render_recorded(r, "store.db", baseline::Config{});
  EXPECT_EQ(without.find("Cost:"), std::string::npos);
  EXPECT_TRUE(recorded_json(r, "store.db", baseline::Config{})["cost"].is_null());
  r.got.cost = job_of("gemm_saturated.jsonl");
  cost::PriceBook book;
  book.currency = "USD";
  book.overrides.value[cost::kGpuHour] = 2;
  const std::string text = render_recorded(r, "store.db", baseline::Config{}, book);
  EXPECT_NE(text.find("Cost: 1 GPU"), std::string::npos) << text;
  EXPECT_NE(text.find(" USD"), std::string::npos);
  const auto j = recorded_json(r, "store.db", baseline::Config{}, book);
  EXPECT_EQ(j["cost"]["currency"], "USD");
  EXPECT_GT(j["cost"]["money"].get<double>(), 0);
}

TEST(CostView, EachDiagnosisOfTheJsonGetsItsCost) {
  std::vector<diagnose::Diagnosed> items;
  for (const char* name : {"idle.jsonl", "gemm_saturated.jsonl"}) {
    auto t = telemetry::read_trace_file(std::string(GPUDOC_SOURCE_DIR) + "/tests/data/" + name);
    ASSERT_TRUE(t);
    auto d = diagnose::diagnose(*t, {});
    items.push_back({std::move(*t), std::move(d)});
  }
  nlohmann::json one = nlohmann::json::object();
  add_costs(one, std::span(items).first(1), cost::PriceBook{});
  EXPECT_GT(one["cost"]["gpu_time_us"].get<std::int64_t>(), 0);
  nlohmann::json two = {{"traces", nlohmann::json::array({nlohmann::json::object(), nlohmann::json::object()})}};
  add_costs(two, items, cost::PriceBook{});
  EXPECT_FALSE(two.contains("cost"));
  EXPECT_EQ(two["traces"][1]["cost"]["split"][0]["part"], "useful");
  EXPECT_TRUE(two["traces"][0]["cost"]["money"].is_null());
}

TEST(CostView, FiguresReadWithoutExponents) {
  EXPECT_EQ(format_duration(25.544), "25.5 s");
  EXPECT_EQ(format_duration(0.0412), "41.2 ms");
  EXPECT_EQ(format_duration(0.000754), "754 µs");
  EXPECT_EQ(format_duration(5400), "90.0 min");
  EXPECT_EQ(format_duration(36000), "10.0 h");
  EXPECT_EQ(format_energy(11733.5), "11.7 kJ");
  EXPECT_EQ(format_energy(0.5), "500 mJ");
  EXPECT_EQ(format_energy(999.7), "1.00 kJ");
  EXPECT_EQ(format_co2(1234), "1.23 kg");
  EXPECT_EQ(format_money(0.0000431, "USD"), "0.0000431 USD");
  EXPECT_EQ(format_money(1234.5, "EUR"), "1234.50 EUR");
}

}  // namespace
}  // namespace gpudoc::view
