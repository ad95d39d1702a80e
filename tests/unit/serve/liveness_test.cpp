// serve::Liveness on a fake clock: alive while the loop ticks, not after `missed` periods without
// a tick (counted from the start until the first tick), not once stopped; each "not" with its reason.
#include "serve/liveness.hpp"

#include <gtest/gtest.h>

#include <chrono>

#include "core/clock.hpp"

namespace gpudoc::serve {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(Liveness, NotRunningBeforeStartAndAfterStop) {
  core::ManualClock clock;
  Liveness alive(seconds(1), 10);
  Alive a = alive.check(clock.now());
  EXPECT_FALSE(a.ok);
  EXPECT_EQ(a.reason, "the sampler is not running");
  alive.start(clock.now());
  EXPECT_TRUE(alive.check(clock.now()).ok);
  alive.stop();
  a = alive.check(clock.now());
  EXPECT_FALSE(a.ok);
  EXPECT_EQ(a.reason, "the sampler is not running");
}

TEST(Liveness, AliveWhileTicking) {
  core::ManualClock clock;
  Liveness alive(seconds(1), 10);
  alive.start(clock.now());
  for (int i = 0; i < 100; ++i) {
    clock.advance(seconds(1));
    alive.tick(clock.now());
    clock.advance(milliseconds(900));
    const Alive a = alive.check(clock.now());
    ASSERT_TRUE(a.ok) << i << ": " << a.reason;
    EXPECT_EQ(a.reason, "");
  }
}

TEST(Liveness, StuckAfterMissedPeriods) {
  core::ManualClock clock;
  Liveness alive(seconds(1), 10);
  EXPECT_EQ(alive.limit(), seconds(10));
  alive.start(clock.now());
  clock.advance(milliseconds(100));
  alive.tick(clock.now());
  clock.advance(seconds(10));  // exactly the limit: still alive
  EXPECT_TRUE(alive.check(clock.now()).ok);
  clock.advance(milliseconds(2500));
  const Alive a = alive.check(clock.now());
  EXPECT_FALSE(a.ok);
  EXPECT_EQ(a.reason, "the sampler's last tick was 12.5 s ago (more than 10 periods of 1.0 s): its loop is stuck");
  // The loop comes back: alive again at its next tick.
  alive.tick(clock.now());
  EXPECT_TRUE(alive.check(clock.now()).ok);
}

TEST(Liveness, NeverTickedCountsFromTheStart) {
  core::ManualClock clock;
  clock.advance(seconds(1000));
  Liveness alive(milliseconds(500), 4);
  alive.start(clock.now());
  clock.advance(seconds(2));
  EXPECT_TRUE(alive.check(clock.now()).ok);
  clock.advance(milliseconds(1));
  const Alive a = alive.check(clock.now());
  EXPECT_FALSE(a.ok);
  EXPECT_EQ(a.reason,
            "the sampler has not ticked since it started 2.0 s ago (more than 4 periods of 0.5 s): its loop is stuck");
  // A restart counts anew.
  alive.stop();
  alive.start(clock.now());
  EXPECT_TRUE(alive.check(clock.now()).ok);
}

TEST(Liveness, AtLeastTwoPeriods) {
  Liveness alive(seconds(1), 0);
  EXPECT_EQ(alive.limit(), seconds(2));
}

}  // namespace
}  // namespace gpudoc::serve
