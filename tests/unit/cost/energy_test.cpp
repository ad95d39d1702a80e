// The run's energy from the NVML counter and the power readings (cost/energy.hpp).
#include "cost/energy.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace gpudoc::cost {
namespace {

Micros s(double x) { return micros(x); }

std::vector<PowerPiece> flat(double from, double to, double w) { return {{s(from), s(to), w, w}}; }

TEST(CostEnergy, TheCounterAloneWhenItsReadingsBracketTheRun) {
  EnergyInput in{.start = 0, .end = s(20)};
  in.counter = {{0, 1'000'000}, {s(10), 2'000'000}, {s(20), 5'000'123}};
  in.power = flat(-1, 21, 250);
  const EnergyTotal e = run_energy(in);
  ASSERT_TRUE(e.total);
  EXPECT_EQ(*e.total, 4'000'123);  // to the millijoule: the counter's own resolution
  EXPECT_EQ(e.method, "counter");
  EXPECT_EQ(e.by_counter, s(20));
  EXPECT_EQ(e.counter_part, 4'000'123);
}

TEST(CostEnergy, APairOverTheRunsEdgeCountsInProportionToThePowerInside) {
  EnergyInput in{.start = s(5), .end = s(15)};
  in.counter = {{0, 0}, {s(10), 10'000'000}, {s(20), 20'000'000}};
  in.power = {{0, s(5), 1000, 1000}, {s(5), s(20), 1000, 1000}};
  const EnergyTotal e = run_energy(in);
  EXPECT_EQ(*e.total, 10'000'000);  // half of each pair, at constant power
  // Where the power is not known over the pair, by time.
  in.power.clear();
  EXPECT_EQ(*run_energy(in).total, 10'000'000);
  // A pair whose power is higher inside the run gives the run more of its energy.
  in.power = {{0, s(5), 100, 100}, {s(5), s(20), 900, 900}};
  EXPECT_EQ(*run_energy(in).total, 9'000'000 + 5'000'000);  // 4.5 of 5 kJ in the first pair, half the second
}

TEST(CostEnergy, TheEndsTheCounterMissesComeFromThePowerReadings) {
  EnergyInput in{.start = 0, .end = s(25)};
  in.counter = {{s(1), 0}, {s(21), 4'000'000}};
  in.power = flat(0, 25, 200);
  const EnergyTotal e = run_energy(in);
  EXPECT_EQ(*e.total, 4'000'000 + 5 * 200 * 1000);
  EXPECT_EQ(e.method, "counter+power");
  EXPECT_EQ(e.by_power, s(5));
}

TEST(CostEnergy, ACounterThatGoesBackBreaksItsPairAndIsSaid) {
  EnergyInput in{.start = 0, .end = s(30)};
  in.counter = {{0, 9'000'000}, {s(10), 11'000'000}, {s(20), 500}, {s(30), 2'000'500}};
  in.power = flat(0, 30, 100);
  const EnergyTotal e = run_energy(in);
  EXPECT_EQ(*e.total, 2'000'000 + 10 * 100 * 1000 + 2'000'000);
  ASSERT_FALSE(e.notes.empty());
  EXPECT_NE(e.notes.front().find("went back"), std::string::npos);
}

TEST(CostEnergy, WithoutACounterThePowerIntegralAndWithNeitherNothing) {
  EnergyInput in{.start = 0, .end = s(10)};
  in.power = flat(0, 10, 300);
  const EnergyTotal e = run_energy(in);
  EXPECT_EQ(*e.total, 3'000'000);
  EXPECT_EQ(e.method, "power");
  EXPECT_FALSE(e.notes.empty());
  EnergyInput none{.start = 0, .end = s(10)};
  const EnergyTotal n = run_energy(none);
  EXPECT_FALSE(n.total);
  EXPECT_EQ(n.method, "none");
}

TEST(CostEnergy, GapsAreEstimatedAtTheMeanPowerAndSaid) {
  EnergyInput in{.start = 0, .end = s(10)};
  in.power = flat(0, 5, 400);
  const EnergyTotal e = run_energy(in);
  EXPECT_EQ(*e.total, 4'000'000);
  EXPECT_EQ(e.estimated, s(5));
  EXPECT_EQ(e.method, "power+estimate");
}

TEST(CostEnergy, AGpuThatStoppedAnsweringHasNoEnergyAfterIt) {
  EnergyInput in{.start = 0, .end = s(10), .lost_at = s(4)};
  in.counter = {{0, 0}, {s(3), 900'000}};
  in.power = flat(0, 4, 300);
  const EnergyTotal e = run_energy(in);
  EXPECT_EQ(e.until, s(4));
  EXPECT_EQ(*e.total, 900'000 + 300'000);
  EXPECT_NE(e.notes.front().find("stopped answering"), std::string::npos);
}

// A profile's analysed steps: only the stretches count, the counter interpolated at their ends.
TEST(CostEnergy, OverStretchesOnlyTheirTimeCountsAndTouchingOnesMerge) {
  EnergyInput in{.start = 0, .end = s(1)};
  in.counter = {{0, 0}, {s(1), 1'000'000}};
  const std::vector<Span> apart{{0, s(0.4)}, {s(0.6), s(1)}};
  const EnergyTotal e = energy_over(in, apart);
  ASSERT_TRUE(e.total);
  EXPECT_EQ(*e.total, 800'000);
  EXPECT_EQ(e.by_counter, s(0.8));
  EXPECT_EQ(e.method, "counter");
  const std::vector<Span> overlapping{{0, s(0.5)}, {s(0.3), s(0.6)}, {s(0.6), s(0.7)}, {s(2), s(3)}};
  EXPECT_EQ(*energy_over(in, overlapping).total, 700'000);  // merged; outside the run: clipped
  // One stretch is run_energy of it.
  const std::vector<Span> whole{{0, s(1)}};
  EXPECT_EQ(*energy_over(in, whole).total, *run_energy(in).total);
  EXPECT_FALSE(energy_over({.start = 0, .end = s(1)}, whole).total);  // no reading: not known
}

TEST(CostEnergy, OverStretchesInAnyOrderAndACounterThatWentBackSaidOnce) {
  EnergyInput in{.start = 0, .end = s(1)};
  in.counter = {{0, 0}, {s(1), 1'000'000}};
  const std::vector<Span> backwards{{s(0.6), s(1)}, {s(0.3), s(0.5)}, {0, s(0.4)}};
  EXPECT_EQ(*energy_over(in, backwards).total, 900'000);  // [0, 0.5) and [0.6, 1)
  // A reset inside a pair that two stretches share: one note, its energy from the power readings.
  EnergyInput reset{.start = 0, .end = s(3)};
  reset.counter = {{0, 5'000'000}, {s(3), 1'000}};
  reset.power = flat(0, 3, 100);
  const std::vector<Span> two{{0, s(1)}, {s(2), s(3)}};
  const EnergyTotal e = energy_over(reset, two);
  EXPECT_EQ(*e.total, 200'000);
  EXPECT_EQ(std::count_if(e.notes.begin(), e.notes.end(),
                          [](const std::string& n) { return n.find("went back") != std::string::npos; }),
            1);
  // A reset outside the stretches is not theirs to say.
  EnergyInput later{.start = 0, .end = s(3)};
  later.counter = {{0, 0}, {s(1), 100'000}, {s(2), 50}, {s(3), 100'050}};
  later.power = flat(0, 3, 100);
  const std::vector<Span> first{{0, s(1)}};
  const EnergyTotal f = energy_over(later, first);
  EXPECT_EQ(*f.total, 100'000);
  for (const auto& n : f.notes) EXPECT_EQ(n.find("went back"), std::string::npos) << n;
}

TEST(CostPowerCurve, ReadingsMovedBackAndJoinedWhereTheyAreClose) {
  const std::vector<double> t{1.0, 1.1, 1.2, 5.0};
  const std::vector<double> w{100, 200, 300, 50};
  const auto c = power_curve(t, w, {.shift_s = 0.5, .max_gap_s = 0.6, .edge_hold_s = 0.1});
  // [0.4, 0.5] held, two lines to 0.7, held to 0.8; then 4.5 alone, held on both sides.
  ASSERT_EQ(c.size(), 6u);
  EXPECT_EQ(c[0].from, s(0.4));
  EXPECT_EQ(c[1].from, s(0.5));
  EXPECT_DOUBLE_EQ(c[1].w1, 200);
  EXPECT_EQ(c[3].to, s(0.8));
  EXPECT_EQ(c[4].from, s(4.4));
  EXPECT_EQ(c[5].to, s(4.6));
}

TEST(CostBusySteps, EachSampleCoversThePeriodBeforeIt) {
  const std::vector<double> t{1.0, 1.2, 1.4, 9.0};
  const std::vector<double> v{100, 50, 0, 80};
  const auto b = busy_steps(t, v, 0.6);
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[0].from, s(0.8));  // the median spacing before the first
  EXPECT_EQ(b[1].from, s(1.0));
  EXPECT_DOUBLE_EQ(b[1].share, 0.5);
  EXPECT_EQ(b[3].from, s(8.4));  // after a gap, at most max_gap
}

}  // namespace
}  // namespace gpudoc::cost
