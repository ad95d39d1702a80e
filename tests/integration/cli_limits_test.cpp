// Hostile inputs end at once, in little memory, with exit 2 and a message that names the input:
// a valid 2 KB trace whose two samples lie 10^8 s apart, /dev/zero (one line that never ends),
// an nvidia-smi CSV of four rows spread over three years, one whose header is followed by blank
// lines without end (`yes ''`), and a window far below the grid's
// step. Before, each of them allocated without bound (a 0.1 s grid over the whole span, or the
// whole endless line); here each runs as a child under RLIMIT_AS, and its exit code and peak RSS
// (wait4's ru_maxrss) are checked, with its wall time as a guard against one that reads without end.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "support/temp_dir.hpp"

namespace {

using gpudoc::testing::gpudoc_binary;

// hang guard: each normally ends in ~0.05 s; 10 s is 10x+ even on a loaded machine, and far below
// reading /dev/zero or a blank-line writer up to the 1 TiB input limit.
constexpr double kHangGuardSeconds = 10.0;
constexpr long kMaxRssKb = 100 * 1024;
constexpr rlim_t kAddressSpace = 1ULL << 30;  // a runaway is stopped, not the machine

struct Measured {
  int exit_code = -1;
  double wall_s = 0;
  long max_rss_kb = 0;
  std::string err;  // stderr
};

Measured run_limited(const std::vector<std::string>& args) {
  // The child's stderr, in a private folder (mkdtemp): never a guessable name in $TMPDIR.
  const gpudoc::testing::TempDir tmp("gpudoc-limits");
  const std::string err_path = tmp.file("stderr");
  const int err_fd = ::open(err_path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (err_fd < 0) return {};
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    const rlimit as{kAddressSpace, kAddressSpace};
    ::setrlimit(RLIMIT_AS, &as);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, STDOUT_FILENO);
    ::dup2(err_fd, STDERR_FILENO);
    std::vector<char*> argv;
    std::string bin = gpudoc_binary();
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
  Measured m;
  int status = 0;
  rusage usage{};
  ::wait4(pid, &status, 0, &usage);
  m.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  m.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  m.max_rss_kb = usage.ru_maxrss;
  char buf[4096];
  ::lseek(err_fd, 0, SEEK_SET);
  ssize_t n = 0;
  while ((n = ::read(err_fd, buf, sizeof buf)) > 0) m.err.append(buf, static_cast<std::size_t>(n));
  ::close(err_fd);
  return m;
}

std::string corpus(const std::string& name) {
  return std::string(GPUDOC_SOURCE_DIR) + "/tests/fuzz/corpus/diagnose/" + name;
}

void expect_bounded_rejection(const std::vector<std::string>& args, const std::string& message) {
  const Measured m = run_limited(args);
  std::string cmd;
  for (const auto& a : args) cmd += " " + a;
  EXPECT_EQ(m.exit_code, 2) << cmd << "\n" << m.err;
  EXPECT_LT(m.wall_s, kHangGuardSeconds) << cmd;  // hang guard (above)
  EXPECT_LT(m.max_rss_kb, kMaxRssKb) << cmd;
  EXPECT_NE(m.err.find(message), std::string::npos) << cmd << "\n" << m.err;
}

TEST(CliLimits, ASpanBombIsRefusedAtOnce) {
  const std::string bomb = corpus("span_bomb.jsonl");
  const std::string message =
      bomb +
      ": no sample from t = 0.1 s to t = 100000000.0 s (1157.4 days): one trace is not silent for more than 7 days";
  expect_bounded_rejection({"diagnose", bomb}, message);
  // --json: the JSON error goes to stdout, and stderr carries the same message.
  expect_bounded_rejection({"diagnose", bomb, "--json"}, message);
  // The trace itself is valid: trace info summarises it, as quickly and as small.
  const Measured info = run_limited({"trace", "info", bomb});
  EXPECT_EQ(info.exit_code, 0) << info.err;
  EXPECT_LT(info.wall_s, kHangGuardSeconds);  // hang guard (above)
  EXPECT_LT(info.max_rss_kb, kMaxRssKb);
}

TEST(CliLimits, DevZeroIsALineThatNeverEnds) {
  const std::string msg = "/dev/zero line 1: the line is longer than the limit of 1048576 bytes";
  expect_bounded_rejection({"trace", "info", "/dev/zero"}, msg);
  expect_bounded_rejection({"diagnose", "/dev/zero"}, msg);
  expect_bounded_rejection({"watch", "/dev/zero", "--once"}, msg);
}

TEST(CliLimits, ACsvOfFourRowsOverThreeYearsIsRefusedAtOnce) {
  const std::string csv = corpus("three_years.csv");
  expect_bounded_rejection({"diagnose", csv}, csv + ": no sample from t = 0.0 s to t = 31536000.0 s (365.0 days)");
  const Measured info = run_limited({"trace", "info", csv});
  EXPECT_EQ(info.exit_code, 0) << info.err;
  EXPECT_LT(info.wall_s, kHangGuardSeconds);  // hang guard (above)
  EXPECT_LT(info.max_rss_kb, kMaxRssKb);
}

// `(header; yes '') | gpudoc ...`: a writer that never stops, through a FIFO, refused after 1 MiB
// of blank lines instead of being read up to the 1 TiB input limit.
TEST(CliLimits, ACsvOfEndlessBlankLinesIsRefusedAtOnce) {
  const gpudoc::testing::TempDir tmp("gpudoc-limits-blank");
  const std::string fifo = tmp.file("blank.csv");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::vector<std::vector<std::string>> commands = {
      {"trace", "info", fifo}, {"diagnose", fifo}, {"watch", fifo, "--once"}};
  for (const auto& command : commands) {
    const pid_t writer = ::fork();
    if (writer == 0) {
      std::signal(SIGPIPE, SIG_DFL);  // the reader's exit ends the writer
      const int fd = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0) ::_exit(1);
      const std::string head = "timestamp, power.draw [W]\n2026/01/02 03:04:05.000, 1 W\n";
      const std::string blank(65536, '\n');
      if (::write(fd, head.data(), head.size()) < 0) ::_exit(1);
      while (::write(fd, blank.data(), blank.size()) > 0) {
      }
      ::_exit(0);
    }
    ASSERT_GT(writer, 0);
    expect_bounded_rejection(command,
                             fifo + " line 1048579: over 1 MiB of blank lines in a row: not an nvidia-smi log");
    ::kill(writer, SIGKILL);
    ::waitpid(writer, nullptr, 0);
  }
}

TEST(CliLimits, AWindowBelowTheGridIsAUsageError) {
  const std::string trace = std::string(GPUDOC_SOURCE_DIR) + "/tests/data/idle.jsonl";
  expect_bounded_rejection({"diagnose", trace, "--window", "1e-7"}, "--window 1e-07: a window must be at least 2 s");
  expect_bounded_rejection({"diagnose", trace, "--window", "1e-9"}, "--window 1e-09: a window must be at least 2 s");
}

}  // namespace
