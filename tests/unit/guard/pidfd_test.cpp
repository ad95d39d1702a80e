#include "guard/pidfd.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <thread>

#include "channel_client.hpp"

namespace gpudoc::guard {
namespace {

using testing::waiting_child;

// Waits (up to 5 s) until the pidfd says the process has exited.
bool wait_exited(const Pidfd& p) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!p.exited() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return p.exited();
}

TEST(Pidfd, SignalsALiveChild) {
  int gate[2];
  const pid_t child = waiting_child(gate);
  ASSERT_GT(child, 0);
  auto p = Pidfd::open(child);
  ASSERT_TRUE(p) << p.error().message();
  EXPECT_EQ(p->pid(), child);
  EXPECT_GE(p->fd(), 0);
  EXPECT_FALSE(p->exited());
  const auto sent = p->signal(SIGTERM);
  EXPECT_TRUE(sent) << sent.error().message();
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_TRUE(p->exited());
  ::close(gate[1]);
}

TEST(Pidfd, RefusesOnceTheProcessHasExitedReapedOrNot) {
  int gate[2];
  const pid_t child = waiting_child(gate);
  ASSERT_GT(child, 0);
  auto p = Pidfd::open(child);
  ASSERT_TRUE(p) << p.error().message();
  ::close(gate[1]);  // it exits 0
  ASSERT_TRUE(wait_exited(*p));
  // A zombie: nothing to signal.
  auto zombie = p->signal(SIGUSR1);
  ASSERT_FALSE(zombie);
  EXPECT_EQ(zombie.error().kind(), core::ErrorKind::kEnvironment);
  EXPECT_NE(zombie.error().message().find("has exited"), std::string::npos) << zombie.error().message();
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);  // SIGUSR1 would have killed it
  // Reaped: the pid is free for another process; the pidfd still refuses.
  auto reaped = p->signal(SIGTERM);
  ASSERT_FALSE(reaped);
  EXPECT_NE(reaped.error().message().find("has exited"), std::string::npos) << reaped.error().message();
}

TEST(Pidfd, OpenNamesAMissingProcess) {
  for (const int pid : {0, -1}) {
    auto p = Pidfd::open(pid);
    ASSERT_FALSE(p);
    EXPECT_EQ(p.error().kind(), core::ErrorKind::kBadInput);
  }
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  auto gone = Pidfd::open(child);  // reaped a moment ago (a reuse this soon is all but impossible)
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().kind(), core::ErrorKind::kBadInput);
  EXPECT_NE(gone.error().message().find(std::to_string(child)), std::string::npos) << gone.error().message();
}

}  // namespace
}  // namespace gpudoc::guard
