// The closing split of one GPU's run: useful + each claim + unexplained == the run's GPU time
// exactly, and the same for its energy, whatever the claims and their overlaps.
#include "cost/account.hpp"

#include <gtest/gtest.h>

#include <numeric>
#include <random>

namespace gpudoc::cost {
namespace {

Micros s(double x) { return micros(x); }

Micros claimed(const GpuAccount& a) {
  Micros t = 0;
  for (const auto& c : a.claims) t += c.got.time;
  return t;
}
Millijoules claimed_energy(const GpuAccount& a) {
  Millijoules e = 0;
  for (const auto& c : a.claims) e += c.got.energy;
  return e;
}

void expect_closes(const GpuAccount& a) {
  EXPECT_EQ(a.useful.time + claimed(a) + a.unexplained.time, a.gpu_time);
  if (a.energy) {
    EXPECT_EQ(a.useful.energy + claimed_energy(a) + a.unexplained.energy, *a.energy);
  }
  EXPECT_GE(a.useful.time, 0);
  EXPECT_GE(a.unexplained.time, 0);
  for (const auto& c : a.claims) {
    EXPECT_GE(c.got.time, 0);
    EXPECT_GE(c.got.energy, 0);
  }
}

TEST(CostApportion, PartsAreWholeAndAddUpExactly) {
  const std::vector<double> w{1, 2, 3, 0, 4};
  const auto parts = apportion(1001, w);
  EXPECT_EQ(std::accumulate(parts.begin(), parts.end(), std::int64_t{0}), 1001);
  EXPECT_EQ(parts[3], 0);
  EXPECT_NEAR(static_cast<double>(parts[4]), 1001 * 0.4, 1.0);
  // All weights 0, or NaN: equal parts.
  const std::vector<double> zero{0, 0, std::nan("")};
  const auto eq = apportion(10, zero);
  EXPECT_EQ(eq[0] + eq[1] + eq[2], 10);
  EXPECT_LE(std::max({eq[0], eq[1], eq[2]}) - std::min({eq[0], eq[1], eq[2]}), 1);
  EXPECT_TRUE(apportion(5, {}).empty());
}

TEST(CostAccount, BusyHalfWithASawtoothClaimingTheIdleHalf) {
  GpuRun run{.gpu = 0, .start = 0, .end = s(60)};
  run.busy = {{0, s(60), 0.5}};
  run.claims.push_back({.source = 0, .cause = "sawtooth", .from = 0, .to = s(60), .lost = s(30)});
  const GpuAccount a = account(run);
  expect_closes(a);
  EXPECT_EQ(a.gpu_time, s(60));
  EXPECT_EQ(a.useful.time, s(30));
  EXPECT_EQ(a.claims[0].got.time, s(30));
  EXPECT_EQ(a.unexplained.time, 0);
}

TEST(CostAccount, ALossTakesIdleTimeFirstThenBusyTime) {
  // Busy in the first half, idle in the second; the claim says 40 of 60 s were lost: the 30 idle
  // seconds, then 10 of the busy ones (a GPU spinning in a collective reads busy).
  GpuRun run{.gpu = 1, .start = 0, .end = s(60)};
  run.busy = {{0, s(30), 1.0}, {s(30), s(60), 0.0}};
  run.claims.push_back({.cause = "pulse", .from = 0, .to = s(60), .lost = s(40)});
  const GpuAccount a = account(run);
  expect_closes(a);
  EXPECT_EQ(a.claims[0].got.time, s(40));
  EXPECT_EQ(a.useful.time, s(20));
  EXPECT_EQ(a.unexplained.time, 0);
}

TEST(CostAccount, AnOverlappedSecondGoesToTheClaimTakenFirst) {
  GpuRun run{.gpu = 0, .start = 0, .end = s(10)};
  run.busy = {{0, s(10), 0.0}};
  // Both claim all of [2, 8); the lower rank is taken first and gets it all.
  run.claims.push_back({.source = 0, .cause = "sawtooth", .rank = 0, .from = s(2), .to = s(8), .lost = s(6)});
  run.claims.push_back({.source = 1, .cause = "pulse", .rank = -2, .from = s(2), .to = s(8), .lost = s(6)});
  const GpuAccount a = account(run);
  expect_closes(a);
  EXPECT_EQ(a.claims[1].got.time, s(6));
  EXPECT_EQ(a.claims[0].got.time, 0);
  EXPECT_EQ(a.claims[0].stated, s(6));  // what it said stays visible
  EXPECT_EQ(a.unexplained.time, s(4));
  EXPECT_EQ(a.unknown, 0);
}

TEST(CostAccount, AtEqualRankTheLargerShareOfItsWindowGoesFirst) {
  GpuRun run{.gpu = 0, .start = 0, .end = s(10)};
  run.busy = {{0, s(10), 0.0}};
  run.claims.push_back({.source = 0, .cause = "a", .from = 0, .to = s(10), .lost = s(2)});
  run.claims.push_back({.source = 1, .cause = "b", .from = 0, .to = s(10), .lost = s(9)});
  const GpuAccount a = account(run);
  expect_closes(a);
  EXPECT_EQ(a.claims[1].got.time, s(9));
  EXPECT_EQ(a.claims[0].got.time, s(1));
}

TEST(CostAccount, NotBusyClaimsTakeExactlyTheIdleTimeOfTheirWindow) {
  GpuRun run{.gpu = 0, .start = 0, .end = s(10)};
  run.busy = {{0, s(4), 0.25}, {s(4), s(10), 1.0}};
  run.claims.push_back({.cause = "startup", .rank = 10, .from = 0, .to = s(4), .not_busy_only = true});
  const GpuAccount a = account(run);
  expect_closes(a);
  EXPECT_EQ(a.claims[0].got.time, s(3));
  EXPECT_EQ(a.useful.time, s(7));
  EXPECT_EQ(a.claims[0].stated, s(4));
}

TEST(CostAccount, TimeNotReadIsUnexplainedAndSaidSo) {
  GpuRun run{.gpu = 0, .start = 0, .end = s(10)};
  run.busy = {{s(2), s(8), 1.0}};  // nothing read before 2 s and after 8 s
  const GpuAccount a = account(run);
  expect_closes(a);
  EXPECT_EQ(a.useful.time, s(6));
  EXPECT_EQ(a.unexplained.time, s(4));
  EXPECT_EQ(a.unknown, s(4));
}

TEST(CostAccount, EnergyFollowsThePowerDrawnInEachPart) {
  GpuRun run{.gpu = 0, .start = 0, .end = s(10)};
  run.busy = {{0, s(5), 1.0}, {s(5), s(10), 0.0}};
  run.power = {{0, s(5), 600, 600}, {s(5), s(10), 100, 100}};
  run.energy = 3'500'000;  // mJ: 600 W x 5 s + 100 W x 5 s
  run.claims.push_back({.cause = "sawtooth", .from = 0, .to = s(10), .lost = s(5)});
  const GpuAccount a = account(run);
  expect_closes(a);
  EXPECT_EQ(a.useful.energy, 3'000'000);
  EXPECT_EQ(a.claims[0].got.energy, 500'000);
}

TEST(CostAccount, NoEnergyAfterTheGpuStoppedAnswering) {
  GpuRun run{.gpu = 0, .start = 0, .end = s(10)};
  run.busy = {{0, s(10), 0.0}};
  run.power = {{0, s(6), 200, 200}};
  run.energy = 1'200'000;
  run.energy_until = s(6);
  run.claims.push_back({.cause = "idle", .from = s(6), .to = s(10), .not_busy_only = true});
  const GpuAccount a = account(run);
  expect_closes(a);
  EXPECT_EQ(a.claims[0].got.time, s(4));  // paid for
  EXPECT_EQ(a.claims[0].got.energy, 0);   // not measured
  EXPECT_EQ(a.unexplained.energy, 1'200'000);
}

TEST(CostAccount, ClaimsOutsideTheRunGetNothingAndBadInputIsTakenAsItCanBe) {
  GpuRun run{.gpu = 0, .start = s(5), .end = s(3)};  // end before start: an empty run
  run.claims.push_back({.cause = "x", .from = 0, .to = s(100), .lost = s(100)});
  const GpuAccount a = account(run);
  expect_closes(a);
  EXPECT_EQ(a.gpu_time, 0);
  GpuRun r2{.gpu = 0, .start = 0, .end = s(5)};
  r2.busy = {{0, s(5), 7.0}};  // clamped to 1
  r2.claims.push_back({.cause = "y", .from = s(10), .to = s(20), .lost = s(5)});
  r2.energy = -5;
  const GpuAccount b = account(r2);
  expect_closes(b);
  EXPECT_EQ(b.useful.time, s(5));
  EXPECT_EQ(b.claims[0].got.time, 0);
  EXPECT_EQ(*b.energy, 0);
}

// Random runs: random busy readings with gaps, power, claims of every kind overlapping anyhow,
// energy that may be cut short. The split must close to the microsecond and millijoule.
TEST(CostAccountProperty, RandomClaimsAndOverlapsStillCloseExactly) {
  std::mt19937_64 generator(20261203);
  std::uniform_real_distribution<double> unit(0, 1);
  for (int trial = 0; trial < 400; ++trial) {
    const Micros start = static_cast<Micros>(unit(generator) * 1e7);
    const Micros end = start + static_cast<Micros>(unit(generator) * 3e9) + 1;
    GpuRun run{.gpu = trial, .start = start, .end = end};
    Micros t = start - static_cast<Micros>(unit(generator) * 1e6);
    while (t < end) {
      const Micros len = 1 + static_cast<Micros>(unit(generator) * 5e7);
      if (unit(generator) < 0.8) run.busy.push_back({t, t + len, unit(generator) * 1.2 - 0.1});
      if (unit(generator) < 0.7) run.power.push_back({t, t + len, unit(generator) * 700, unit(generator) * 700});
      t += len + (unit(generator) < 0.2 ? static_cast<Micros>(unit(generator) * 1e7) : 0);
    }
    const int claims = static_cast<int>(unit(generator) * 12);
    for (int k = 0; k < claims; ++k) {
      const Micros a =
          start + static_cast<Micros>(unit(generator) * static_cast<double>(end - start) * 1.2) - (end - start) / 10;
      const Micros b = a + static_cast<Micros>(unit(generator) * static_cast<double>(end - start));
      run.claims.push_back({.source = static_cast<std::size_t>(k),
                            .cause = "c" + std::to_string(k % 4),
                            .rank = static_cast<int>(unit(generator) * 3) - 2,
                            .from = a,
                            .to = b,
                            .lost = static_cast<Micros>(unit(generator) * 1.3 * static_cast<double>(b - a)),
                            .not_busy_only = unit(generator) < 0.2});
    }
    if (unit(generator) < 0.9) run.energy = static_cast<Millijoules>(unit(generator) * 1e12);
    if (unit(generator) < 0.3)
      run.energy_until = start + static_cast<Micros>(unit(generator) * static_cast<double>(end - start));
    const GpuAccount acc = account(run);
    SCOPED_TRACE("trial " + std::to_string(trial));
    expect_closes(acc);
    ASSERT_EQ(acc.claims.size(), run.claims.size());
    for (std::size_t k = 0; k < acc.claims.size(); ++k) EXPECT_LE(acc.claims[k].got.time, acc.claims[k].stated);
    EXPECT_LE(acc.unknown, acc.unexplained.time);
  }
}

TEST(CostIntegrate, LinearPiecesAndTheTimeTheyCover) {
  const std::vector<PowerPiece> p{{0, s(2), 100, 300}, {s(3), s(4), 50, 50}};
  const PowerIntegral all = integrate(p, 0, s(5));
  EXPECT_DOUBLE_EQ(all.joules, 400 + 50);
  EXPECT_EQ(all.known, s(3));
  const PowerIntegral half = integrate(p, s(1), s(2));
  EXPECT_DOUBLE_EQ(half.joules, 250);
  EXPECT_EQ(integrate(p, s(2), s(3)).known, 0);
}

}  // namespace
}  // namespace gpudoc::cost
