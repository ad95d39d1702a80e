// The slice's shared accounting: the cap, per-process slots, and what a process that dies leaves
// behind (its bytes, or the lock itself).
#include "slice/inject/shared_state.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <functional>
#include <unistd.h>

#include "support/temp_dir.hpp"

namespace gpudoc::slice {
namespace {

constexpr std::uint64_t kMiB = 1ULL << 20;

SharedState make(const testing::TempDir& dir, std::uint64_t cap) {
  std::string error;
  Limits limits;
  limits.memory_bytes = cap;
  auto state = SharedState::create(dir.file("state"), limits, "test", "cmd", &error);
  EXPECT_TRUE(state.has_value()) << error;
  return std::move(*state);
}

// Runs `body` in a forked child that then ends by `how`: 0 exits normally, else that signal.
pid_t in_child(const std::function<void()>& body, int how) {
  const pid_t pid = fork();
  if (pid == 0) {
    body();
    if (how != 0) raise(how);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return pid;
}

TEST(SliceSharedState, RefusesWhatGoesOverTheCapAndCountsIt) {
  testing::TempDir dir("gpudoc-slicetest");
  SharedState state = make(dir, 100 * kMiB);
  const int slot = state.register_process(getpid());
  ASSERT_GE(slot, 0);
  EXPECT_TRUE(state.try_charge(slot, 60 * kMiB));
  EXPECT_FALSE(state.try_charge(slot, 41 * kMiB));
  EXPECT_TRUE(state.try_charge(slot, 40 * kMiB));
  EXPECT_EQ(state.used_bytes(), 100 * kMiB);
  state.uncharge(slot, 60 * kMiB);
  EXPECT_EQ(state.used_bytes(), 40 * kMiB);
  const Snapshot s = state.snapshot();
  ASSERT_EQ(s.processes.size(), 1U);
  EXPECT_EQ(s.processes[0].refused, 1U);
  EXPECT_EQ(s.processes[0].peak_bytes, 100 * kMiB);
  EXPECT_EQ(s.name, "test");
}

TEST(SliceSharedState, AttachSeesTheSameAccountingAndRejectsOtherFiles) {
  testing::TempDir dir("gpudoc-slicetest");
  SharedState state = make(dir, 10 * kMiB);
  std::string error;
  auto other = SharedState::attach(dir.file("state"), &error);
  ASSERT_TRUE(other.has_value()) << error;
  ASSERT_TRUE(other->try_charge(other->register_process(getpid()), 4 * kMiB));
  EXPECT_EQ(state.used_bytes(), 4 * kMiB);

  auto missing = SharedState::attach(dir.file("nothing"), &error);
  EXPECT_FALSE(missing.has_value());
  EXPECT_NE(error.find("opening the slice state"), std::string::npos) << error;
  const std::string again = dir.file("state");
  EXPECT_FALSE(SharedState::create(again, Limits{}, "", "", &error).has_value());  // O_EXCL
  EXPECT_NE(error.find("File exists"), std::string::npos) << error;
}

TEST(SliceSharedState, ADeadProcesssBytesAreGivenBackWhenTheCapIsReached) {
  testing::TempDir dir("gpudoc-slicetest");
  SharedState state = make(dir, 100 * kMiB);
  in_child([&] { (void)state.try_charge(state.register_process(getpid()), 80 * kMiB); }, SIGKILL);
  EXPECT_EQ(state.used_bytes(), 80 * kMiB);  // not yet reaped: nobody needed the room
  const int slot = state.register_process(getpid());
  EXPECT_TRUE(state.try_charge(slot, 90 * kMiB));
  EXPECT_EQ(state.used_bytes(), 90 * kMiB);
  EXPECT_EQ(state.snapshot().reaped_bytes, 80 * kMiB);
}

TEST(SliceSharedState, ALockWhoseOwnerDiedIsRecoveredAndTheOwnersBytesReaped) {
  testing::TempDir dir("gpudoc-slicetest");
  SharedState state = make(dir, 100 * kMiB);
  in_child(
      [&] {
        (void)state.try_charge(state.register_process(getpid()), 30 * kMiB);
        state.lock();  // killed holding it
      },
      SIGKILL);
  const int slot = state.register_process(getpid());  // would block for ever on a non-robust mutex
  EXPECT_TRUE(state.try_charge(slot, 10 * kMiB));
  const Snapshot s = state.snapshot();
  EXPECT_EQ(s.recovered_locks, 1U);
  EXPECT_EQ(s.used_bytes, 10 * kMiB);
  EXPECT_EQ(s.reaped_bytes, 30 * kMiB);
}

TEST(SliceSharedState, AForkedChildHasItsOwnSlotAndAReusedPidIsNotMistakenForIt) {
  testing::TempDir dir("gpudoc-slicetest");
  SharedState state = make(dir, 0);  // no cap: only accounting
  const int mine = state.register_process(getpid());
  pid_t child_pid = in_child([&] { (void)state.try_charge(state.register_process(getpid()), 5 * kMiB); }, 0);
  EXPECT_NE(child_pid, getpid());
  EXPECT_EQ(state.used_bytes(), 5 * kMiB);
  EXPECT_EQ(state.reap_dead(), 1);
  EXPECT_EQ(state.used_bytes(), 0U);
  EXPECT_EQ(state.register_process(getpid()), mine);
  EXPECT_GT(process_start_ticks(getpid()), 0U);
  EXPECT_EQ(process_start_ticks(child_pid), 0U);
}

TEST(CopyGate, CopiesStartAtOnceWithinTheBurstThenAtTheRate) {
  // 100 MB/s, copies of 5 MB (50 ms each at the rate), all asked for at t = 0: the first two start at
  // once (the second ends 100 ms ahead, but starts only 50 ms ahead: within the burst), then each
  // waits 50 ms more than the one before.
  std::int64_t next = 0;
  const std::uint64_t rate = 100'000'000;
  EXPECT_EQ(copy_wait_ns(next, 0, 5'000'000, rate), 0);
  EXPECT_EQ(copy_wait_ns(next, 0, 5'000'000, rate), 0);
  EXPECT_EQ(copy_wait_ns(next, 0, 5'000'000, rate), 50'000'000);
  EXPECT_EQ(copy_wait_ns(next, 0, 5'000'000, rate), 100'000'000);
  EXPECT_EQ(next, 200'000'000);
  // A caller that waits as told keeps the rate: the 20th copy starts at 19 x 50 ms less one burst.
  std::int64_t now = 0, gate = 0;
  for (int i = 0; i < 20; ++i) now += copy_wait_ns(gate, now, 5'000'000, rate);
  EXPECT_EQ(now, 19 * 50'000'000 - 50'000'000);
}

TEST(CopyGate, IdleTimeIsNotSavedUpAndNoCapMeansNoWait) {
  std::int64_t next = 0;
  const std::uint64_t rate = 100'000'000;
  (void)copy_wait_ns(next, 0, 50'000'000, rate);                      // 500 ms of copies at t = 0
  EXPECT_EQ(copy_wait_ns(next, 10'000'000'000, 5'000'000, rate), 0);  // 10 s later: at once
  EXPECT_EQ(next, 10'050'000'000);                                    // counted from now, not from the past
  std::int64_t untouched = 7;
  EXPECT_EQ(copy_wait_ns(untouched, 0, 1ULL << 40, 0), 0);  // rate 0: no cap
  EXPECT_EQ(untouched, 7);
  std::int64_t big = 0;  // an absurd copy does not overflow: charged at most 1e15 ns
  (void)copy_wait_ns(big, 0, ~0ULL, 1);
  EXPECT_EQ(big, 1'000'000'000'000'000LL);
}

TEST(CopyGate, SharedStateCountsCopiesAndWaits) {
  gpudoc::testing::TempDir dir("gpudoc-copygate");
  std::string error;
  Limits limits;
  limits.pcie_bytes_per_second = 100'000'000;
  auto state = SharedState::create(dir.file("state"), limits, "t", "cmd", &error);
  ASSERT_TRUE(state.has_value()) << error;
  EXPECT_EQ(state->admit_copy(5'000'000, 1'000), 0);
  EXPECT_EQ(state->admit_copy(5'000'000, 1'000), 0);
  EXPECT_EQ(state->admit_copy(5'000'000, 1'000), 50'000'000);
  const Snapshot s = state->snapshot();
  EXPECT_EQ(s.copy_bytes, 15'000'000U);
  EXPECT_EQ(s.copy_waited_ns, 50'000'000U);
  Limits none;
  auto uncapped = SharedState::create(dir.file("state2"), none, "t", "cmd", &error);
  ASSERT_TRUE(uncapped.has_value()) << error;
  EXPECT_EQ(uncapped->admit_copy(1ULL << 40, 0), 0);
  EXPECT_EQ(uncapped->snapshot().copy_bytes, 0U);
}

}  // namespace
}  // namespace gpudoc::slice
