// core/stop_signals: survive_broken_pipe turns a write to a pipe whose reader is gone into EPIPE
// instead of a death by SIGPIPE, and leaves a program gpudoc runs with SIGPIPE's default (a handler
// is reset by exec, an ignored signal would not be).
#include "core/stop_signals.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

namespace gpudoc::core {
namespace {

TEST(SurviveBrokenPipe, AWriteToAClosedPipeFailsWithEpipe) {
  survive_broken_pipe();
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[0]);
  errno = 0;
  EXPECT_EQ(::write(fds[1], "x", 1), -1);
  EXPECT_EQ(errno, EPIPE);
  ::close(fds[1]);
}

TEST(SurviveBrokenPipe, IsAHandlerNotIgnored) {
  survive_broken_pipe();
  struct sigaction now {};
  ASSERT_EQ(sigaction(SIGPIPE, nullptr, &now), 0);
  EXPECT_NE(now.sa_handler, SIG_IGN);
  EXPECT_NE(now.sa_handler, SIG_DFL);
}

TEST(SurviveBrokenPipe, AProgramRunAfterItDiesOfSigpipeAsUsual) {
  survive_broken_pipe();
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", "kill -s PIPE $$; exit 0", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGPIPE);
}

}  // namespace
}  // namespace gpudoc::core
