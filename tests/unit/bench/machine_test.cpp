// The machine context of a bench run: NVML facts found by UUID (through the fake backend) and the
// conditions (clocks, power, temperature, throttle reasons) summarized per benchmark window.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "bench/engine.hpp"
#include "bench/machine.hpp"
#include "core/clock.hpp"
#include "gpu/fake/fake_backend.hpp"

namespace gpudoc::bench {
namespace {

using gpu::Metric;

TEST(BenchMachine, ProbeFindsTheGpuByUuid) {
  core::ManualClock clock;
  gpu::FakeBackend fake(clock, 3);
  auto m = probe_machine(fake, "GPU-fake-0002");
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(m->nvml_index, 2);
  EXPECT_EQ(m->backend, "fake");
  EXPECT_EQ(m->driver_version, "999.99.99");
  EXPECT_EQ(m->cuda_driver_version, "13.0");
  EXPECT_EQ(m->sm_clock_max_mhz, 1980.0);
  EXPECT_EQ(m->power_limit_default_watts, 700.0);
  // One reading of the current values (fast and slow groups).
  EXPECT_EQ(m->sm_clock_mhz, 1980.0);
  EXPECT_EQ(m->memory_clock_mhz, 3201.0);
  EXPECT_EQ(m->power_limit_watts, 700.0);
  EXPECT_TRUE(m->temperature_celsius.has_value());
  EXPECT_EQ(m->pcie_link_generation, 5.0);
  EXPECT_TRUE(m->clock_event_reasons_mask.has_value());
  const auto j = to_json(*m);
  EXPECT_EQ(j["nvml_index"], 2);
  EXPECT_EQ(j["sm_clock_max_mhz"], 1980.0);
  // The link is a count: an integer in the JSON (the same number as the 5.0 it was), as health has it.
  EXPECT_EQ(m->pcie_link_width, 16);
  EXPECT_TRUE(j["pcie_link_generation"].is_number_integer());
  EXPECT_EQ(j["pcie_link_generation"], 5);
  EXPECT_EQ(j["pcie_link_width"], 16);
  EXPECT_EQ(j["pcie_link_generation_max"], 5);
}

TEST(BenchMachine, UnknownUuidIsNotSupported) {
  core::ManualClock clock;
  gpu::FakeBackend fake(clock, 1);
  auto m = probe_machine(fake, "GPU-elsewhere");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().kind(), core::ErrorKind::kNotSupported);
  EXPECT_THAT(m.error().message(), ::testing::HasSubstr("no GPU with UUID GPU-elsewhere"));
}

TEST(BenchMachine, UnsupportedReadingsStayAbsent) {
  core::ManualClock clock;
  gpu::FakeBackend fake(clock, 1);
  gpu::MetricSet only_clock;
  only_clock.set(gpu::index(Metric::kSmClockMhz));
  fake.set_supported(0, only_clock);
  auto m = probe_machine(fake, "GPU-fake-0000");
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(m->sm_clock_mhz, 1980.0);
  EXPECT_FALSE(m->power_watts.has_value());
  EXPECT_FALSE(m->clock_event_reasons_mask.has_value());
  EXPECT_FALSE(m->power_limit_watts.has_value());  // the slow group answered NOT_SUPPORTED
  EXPECT_TRUE(to_json(*m)["power_watts"].is_null());
}

TEST(BenchMachine, ConditionsSummarizeOnlyTheWindow) {
  const std::vector<gpu::MetricSample> s = {
      {Metric::kSmClockMhz, 1980, 100},     {Metric::kClockEventReasonsMask, 0x1, 100},  // idle, before
      {Metric::kSmClockMhz, 1530, 200},     {Metric::kPowerWatts, 690, 200},
      {Metric::kSmClockMhz, 1515, 300},     {Metric::kClockEventReasonsMask, 0x4, 300},  // sw_power_cap
      {Metric::kSmClockMhz, 1520, 400},     {Metric::kGpuTemperatureCelsius, 62, 400},
      {Metric::kMemoryUsedBytes, 1e9, 400},  // not a condition
      {Metric::kSmClockMhz, 1980, 500},
  };
  const Conditions c = summarize_conditions(s, 200, 400);
  EXPECT_EQ(c.readings, 6u);
  ASSERT_TRUE(c.sm_clock_mhz.has_value());
  EXPECT_EQ(c.sm_clock_mhz->min, 1515);
  EXPECT_EQ(c.sm_clock_mhz->median, 1520);
  EXPECT_EQ(c.sm_clock_mhz->max, 1530);
  EXPECT_EQ(c.power_watts->max, 690);
  EXPECT_EQ(c.temperature_celsius->max, 62);
  EXPECT_EQ(c.clock_event_reasons_mask, 0x4u);
  EXPECT_EQ(slowdown_reasons(c), "sw_power_cap");
  EXPECT_EQ(describe(c), "SM 1515–1530 MHz, ≤ 690 W, ≤ 62 °C, slowdown: sw_power_cap");
  const auto j = to_json(c);
  EXPECT_EQ(j["clock_event_reasons"], "sw_power_cap");
  EXPECT_EQ(j["slowdown"], true);
}

TEST(BenchMachine, IdleIsNotASlowdownAndNoReadingsSayNothing) {
  const std::vector<gpu::MetricSample> s = {{Metric::kClockEventReasonsMask, 0x1, 10}};
  const Conditions idle = summarize_conditions(s, 0, 20);
  EXPECT_EQ(slowdown_reasons(idle), "none");
  EXPECT_EQ(to_json(idle)["clock_event_reasons"], "gpu_idle");
  const Conditions none = summarize_conditions(s, 30, 40);
  EXPECT_EQ(none.readings, 0u);
  EXPECT_EQ(slowdown_reasons(none), "");
  EXPECT_EQ(describe(none), "");
  EXPECT_TRUE(to_json(none)["sm_clock_mhz"].is_null());
}

TEST(BenchMachine, AttachConditionsPerOutcomeAndForTheRun) {
  Report rep;
  Outcome a;
  a.key = "gemm.bf16";
  a.started_unix_ns = 100;
  a.ended_unix_ns = 200;
  Outcome b;
  b.key = "pcie.h2d.pinned";
  b.started_unix_ns = 200;
  b.ended_unix_ns = 300;
  rep.outcomes = {a, b};
  const std::vector<gpu::MetricSample> s = {
      {Metric::kSmClockMhz, 1500, 150}, {Metric::kSmClockMhz, 1980, 250}, {Metric::kSmClockMhz, 900, 400}};
  attach_conditions(rep, s);
  ASSERT_TRUE(rep.outcomes[0].conditions.has_value());
  EXPECT_EQ(rep.outcomes[0].conditions->sm_clock_mhz->median, 1500);
  EXPECT_EQ(rep.outcomes[1].conditions->sm_clock_mhz->median, 1980);
  ASSERT_TRUE(rep.conditions.has_value());
  EXPECT_EQ(rep.conditions->sm_clock_mhz->min, 1500);  // 900 was after the run
  EXPECT_EQ(rep.conditions->sm_clock_mhz->max, 1980);
  const auto j = to_json(rep);
  EXPECT_EQ(j["results"][0]["conditions"]["sm_clock_mhz"]["median"], 1500);
  EXPECT_EQ(j["conditions"]["sm_clock_mhz"]["max"], 1980);
}

}  // namespace
}  // namespace gpudoc::bench
