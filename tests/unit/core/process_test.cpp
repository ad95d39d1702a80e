// core::ChildProcess: exit codes as a shell reports them, and stdout sent to stderr on request;
// core::GroupStopper: the stop policy for a workload's process group.
#include "core/process.hpp"

#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "core/process_tree.hpp"
#include "core/temp_dir.hpp"
#include "support/temp_dir.hpp"

namespace gpudoc::core {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Runs `argv` with gpudoc's fds 1 and 2 pointed at two files; returns {stdout, stderr}.
std::pair<std::string, std::string> run_captured(const std::vector<std::string>& argv, bool stdout_to_stderr,
                                                 int* code) {
  // A private folder: a name in /tmp by pid alone could be planted by another user.
  testing::TempDir dir("gpudoc-proc");
  std::string out_path = dir.file("out.txt");
  std::string err_path = dir.file("err.txt");
  std::fflush(stdout);
  std::fflush(stderr);
  int saved_out = dup(STDOUT_FILENO), saved_err = dup(STDERR_FILENO);
  FILE* fo = std::fopen(out_path.c_str(), "w");
  FILE* fe = std::fopen(err_path.c_str(), "w");
  dup2(fileno(fo), STDOUT_FILENO);
  dup2(fileno(fe), STDERR_FILENO);
  auto c = ChildProcess::spawn(argv, {}, stdout_to_stderr);
  if (c) c->wait();
  dup2(saved_out, STDOUT_FILENO);
  dup2(saved_err, STDERR_FILENO);
  close(saved_out);
  close(saved_err);
  std::fclose(fo);
  std::fclose(fe);
  *code = c ? c->exit_code_for_shell() : -1;
  return {slurp(out_path), slurp(err_path)};
}

TEST(ChildProcess, OutputUntouchedByDefault) {
  int code = 0;
  auto [out, err] = run_captured({"sh", "-c", "echo to-out; echo to-err >&2; exit 7"}, false, &code);
  EXPECT_EQ(code, 7);
  EXPECT_EQ(out, "to-out\n");
  EXPECT_EQ(err, "to-err\n");
}

TEST(ChildProcess, StdoutToStderrKeepsGpudocsStdoutClean) {
  int code = 0;
  auto [out, err] = run_captured({"sh", "-c", "echo to-out; echo to-err >&2"}, true, &code);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(out, "");
  EXPECT_NE(err.find("to-out"), std::string::npos);
  EXPECT_NE(err.find("to-err"), std::string::npos);
}

TEST(ChildProcess, MissingCommandIsBadInputNamingIt) {
  auto c = ChildProcess::spawn({"gpudoc-no-such-command-xyz"});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().kind(), ErrorKind::kBadInput);
  EXPECT_NE(c.error().message().find("gpudoc-no-such-command-xyz"), std::string::npos);
}

// A workload in its own process group: the terminal's Ctrl-C (sent to gpudoc's group) misses it,
// and signal_group() stops it with everything it started.
TEST(ChildProcess, ANewProcessGroupIsStoppedAsAWhole) {
  SpawnOptions o;
  o.new_process_group = true;
  auto c = ChildProcess::spawn({"sh", "-c", "sleep 30 & sleep 30"}, o);
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(::getpgid(c->pid()), c->pid());
  EXPECT_NE(::getpgid(c->pid()), ::getpgrp());
  for (int i = 0; i < 200 && live_group_members(c->pid()).size() < 2; ++i) ::usleep(10000);
  EXPECT_GE(live_group_members(c->pid()).size(), 2u);  // sh and its sleeps
  EXPECT_TRUE(c->signal_group(SIGTERM));
  c->wait();
  EXPECT_EQ(c->term_signal(), SIGTERM);
  for (int i = 0; i < 200 && !live_group_members(c->pid()).empty(); ++i) ::usleep(10000);
  EXPECT_TRUE(live_group_members(c->pid()).empty());
}

TEST(ChildProcess, ExtraEnvironmentReplacesAVariableOfTheSameName) {
  ::setenv("GPUDOC_TEST_VAR", "outer", 1);
  int code = 0;
  SpawnOptions o;
  o.extra_env = {"GPUDOC_TEST_VAR=inner"};
  testing::TempDir dir("gpudoc-proc-env");
  auto c = ChildProcess::spawn(
      {"sh", "-c", "env | grep -c '^GPUDOC_TEST_VAR=' > " + dir.file("n") + "; test \"$GPUDOC_TEST_VAR\" = inner"}, o);
  ASSERT_TRUE(c);
  c->wait();
  code = c->exit_code_for_shell();
  ::unsetenv("GPUDOC_TEST_VAR");
  EXPECT_EQ(code, 0);
  EXPECT_EQ(slurp(dir.file("n")), "1\n");
}

TEST(ChildProcess, StdoutToADescriptor) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  SpawnOptions o;
  o.stdout_fd = fds[1];
  auto c = ChildProcess::spawn({"sh", "-c", "echo piped"}, o);
  ::close(fds[1]);
  ASSERT_TRUE(c);
  char buf[64] = {};
  const ssize_t n = ::read(fds[0], buf, sizeof buf - 1);
  ::close(fds[0]);
  c->wait();
  EXPECT_EQ(std::string(buf, n > 0 ? static_cast<std::size_t>(n) : 0), "piped\n");
}

TEST(ChildProcess, StderrToADescriptor) {
  testing::TempDir dir("gpudoc-proc-err");
  auto fd = create_new_file(dir.file("err"));
  ASSERT_TRUE(fd);
  SpawnOptions o;
  o.stderr_fd = fd->get();
  auto c = ChildProcess::spawn({"sh", "-c", "echo to-err >&2"}, o);
  ASSERT_TRUE(c);
  c->wait();
  EXPECT_EQ(slurp(dir.file("err")), "to-err\n");
}

// The child may run only on the CPUs asked for, as `taskset -c` sets it, and gpudoc's own thread
// gets its mask back.
TEST(ChildProcess, CpuAffinityBindsTheChildOnly) {
  cpu_set_t before;
  ASSERT_EQ(::sched_getaffinity(0, sizeof before, &before), 0);
  int first = -1;
  for (int c = 0; c < CPU_SETSIZE && first < 0; ++c)
    if (CPU_ISSET(c, &before)) first = c;
  ASSERT_GE(first, 0);
  testing::TempDir dir("gpudoc-proc-cpus");
  SpawnOptions o;
  o.cpu_affinity = {first};
  auto c = ChildProcess::spawn({"sh", "-c", "grep Cpus_allowed_list /proc/self/status > " + dir.file("cpus")}, o);
  ASSERT_TRUE(c);
  c->wait();
  EXPECT_EQ(slurp(dir.file("cpus")), "Cpus_allowed_list:\t" + std::to_string(first) + "\n");
  cpu_set_t after;
  ASSERT_EQ(::sched_getaffinity(0, sizeof after, &after), 0);
  EXPECT_TRUE(CPU_EQUAL(&before, &after));
}

TEST(ChildProcess, CpuAffinityOutsideTheAllowedCpusIsAnEnvironmentError) {
  SpawnOptions o;
  o.cpu_affinity = {CPU_SETSIZE - 1};  // no machine here has 1024 CPUs
  auto c = ChildProcess::spawn({"true"}, o);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().kind(), ErrorKind::kEnvironment);
  EXPECT_NE(c.error().message().find("cannot bind the command to CPUs 1023"), std::string::npos);
}

TEST(ChildProcess, StdinFromNullReadsNothing) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  SpawnOptions o;
  o.stdout_fd = fds[1];
  o.stdin_from_null = true;
  auto c = ChildProcess::spawn({"sh", "-c", "if read x; then echo \"read [$x]\"; else echo eof; fi"}, o);
  ::close(fds[1]);
  ASSERT_TRUE(c);
  char buf[64] = {};
  const ssize_t n = ::read(fds[0], buf, sizeof buf - 1);
  ::close(fds[0]);
  c->wait();
  EXPECT_EQ(std::string(buf, n > 0 ? static_cast<std::size_t>(n) : 0), "eof\n");
}

// The stop policy (GroupStopper): SIGTERM to the workload's whole group; SIGKILL after the grace
// period for a group deaf to SIGTERM, or at once on a second request; finish() returns once the
// child is reaped and nothing of its group is left.
class GroupStopperTest : public ::testing::Test {
 protected:
  // A shell's sleeps in a group of their own, started (the shell may exec its last command).
  ChildProcess start(const std::string& script) {
    auto c = ChildProcess::spawn({"sh", "-c", script}, workload_spawn_options());
    EXPECT_TRUE(c) << c.error().message();
    for (int i = 0; i < 500 && live_group_members(c->pid()).size() < 2; ++i) ::usleep(10000);
    EXPECT_EQ(::getpgid(c->pid()), c->pid());
    EXPECT_GE(live_group_members(c->pid()).size(), 2u);  // both sleeps (and sh, unless it exec'd the last)
    // Hang guard: the policy ends these in at most the grace period (0.2 s here); after 60 s
    // SIGUSR1 ends whatever is left, and the signal the shell died of says that it came to that.
    guard_ = std::thread([pgid = c->pid(), this] {
      for (int i = 0; i < 6000 && !done_.load(); ++i) ::usleep(10000);
      if (!done_.load()) ::kill(-pgid, SIGUSR1);
    });
    return std::move(*c);
  }
  void TearDown() override {
    done_ = true;
    if (guard_.joinable()) guard_.join();
  }
  std::atomic<bool> done_{false};
  std::thread guard_;
};

TEST_F(GroupStopperTest, SigtermStopsTheWholeGroup) {
  ChildProcess c = start("sleep 1000 & sleep 1000");
  GroupStopper stopper(std::chrono::milliseconds(200));
  stopper.finish(c, [] { return false; });
  EXPECT_EQ(c.term_signal(), SIGTERM);
  EXPECT_TRUE(live_group_members(c.pid()).empty());
}

TEST_F(GroupStopperTest, AGroupDeafToSigtermIsKilledAfterTheGracePeriod) {
  ChildProcess c = start("trap '' TERM; sleep 1000 & sleep 1000");
  GroupStopper stopper(std::chrono::milliseconds(200));
  stopper.finish(c, [] { return false; });
  EXPECT_EQ(c.term_signal(), SIGKILL);
  EXPECT_TRUE(live_group_members(c.pid()).empty());
}

TEST_F(GroupStopperTest, ASecondRequestSkipsTheGracePeriod) {
  ChildProcess c = start("trap '' TERM; sleep 1000 & sleep 1000");
  GroupStopper stopper(std::chrono::hours(1));  // without the second request: the hang guard's SIGUSR1
  stopper.step(c, false);
  EXPECT_TRUE(stopper.started());
  stopper.finish(c, [] { return true; });
  EXPECT_EQ(c.term_signal(), SIGKILL);
  EXPECT_TRUE(live_group_members(c.pid()).empty());
}

TEST(StopPolicy, ExitCodeIs128PlusTheSignal) {
  EXPECT_EQ(exit_code_for_signal(SIGHUP), 129);
  EXPECT_EQ(exit_code_for_signal(SIGINT), 130);
  EXPECT_EQ(exit_code_for_signal(SIGTERM), 143);
  EXPECT_EQ(kStopGrace, std::chrono::seconds(5));
}

TEST(SignalName, KnownAndOther) {
  EXPECT_EQ(signal_name(SIGINT), "SIGINT");
  EXPECT_EQ(signal_name(SIGHUP), "SIGHUP");
  EXPECT_EQ(signal_name(SIGTERM), "SIGTERM");
  EXPECT_EQ(signal_name(SIGWINCH), "signal " + std::to_string(SIGWINCH));
}

}  // namespace
}  // namespace gpudoc::core
