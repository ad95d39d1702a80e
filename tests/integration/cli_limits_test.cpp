// Hostile inputs end at once, in little memory, with exit 2 and a message that names the input:
// a valid 2 KB trace whose two samples lie 10^8 s apart, /dev/zero (one line that never ends),
// an nvidia-smi CSV of four rows spread over three years, one whose header is followed by blank
// lines without end (`yes ''`), and a window far below the grid's
// step. Before, each of them allocated without bound (a 0.1 s grid over the whole span, or the
// whole endless line); here each runs as a child under RLIMIT_AS, and its exit code and peak RSS
// (wait4's ru_maxrss) are checked, with its wall time as a guard against one that reads without end.
// The same holds for every other file a command reads (a policy, a config, a saved bench run, CUPTI
// records: /dev/zero or an endless FIFO is refused at its kind's size limit) and for every number
// flag: a duration, count or limit outside its documented range (inf, NaN, 1e10 s, 0, "", -1) is
// refused before anything runs, naming the flag, the value and the range.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <functional>
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
// A child that does not end (a duration that never elapses) is killed by SIGALRM after this, so a
// failing case fails instead of hanging the test.
constexpr unsigned kKillAfterSeconds = 30;

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
    ::alarm(kKillAfterSeconds);  // kept across exec: the default action ends the child
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
  // Its counters would take 10^7 scrapes: refused before any is made.
  expect_bounded_rejection({"trace", "counters", bomb}, bomb + ": the trace spans 100000000.0 s: every 10 s");
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
  const std::string range =
      ": out of range; expected seconds, from 2 to 1000000 (a window holds at least 20 samples of the 0.1 s "
      "analysis grid before anything is concluded)";
  expect_bounded_rejection({"diagnose", trace, "--window", "1e-7"}, "--window 1e-7" + range);
  expect_bounded_rejection({"diagnose", trace, "--window", "1e-9"}, "--window 1e-9" + range);
}

// --- number flags -------------------------------------------------------------------------------

struct FlagCase {
  std::vector<std::string> args;
  std::string named;  // "--timeout inf": the flag and the value as given, at the start of the message
};

// Every duration, count and limit flag goes through one checked reading: a value that is not a
// finite number in the flag's documented range is a usage error (exit 2) before anything runs, its
// message "FLAG VALUE: why; expected RANGE". Before, --timeout inf stopped the workload at once,
// --duration 1e10 overflowed the clock into half a second, --duration nan never ended, and 0, "" and
// -1 were taken silently.
TEST(CliLimits, EveryNumberFlagOutsideItsRangeIsAUsageErrorNamingFlagValueAndRange) {
  const gpudoc::testing::TempDir tmp("gpudoc-limits-flags");
  const std::string store = tmp.file("store.db");
  const std::string trace = std::string(GPUDOC_SOURCE_DIR) + "/tests/data/idle.jsonl";
  const std::string records = std::string(GPUDOC_SOURCE_DIR) + "/tests/data/profile/tiny_h200.records.txt";
  const std::string fake = "--backend=fake:1";
  const std::vector<FlagCase> cases = {
      {{fake, "baseline", "record", "b", "--store", store, "--timeout", "inf", "--", "true"}, "--timeout inf"},
      {{fake, "baseline", "record", "b", "--store", store, "--timeout", "1e300", "--", "true"}, "--timeout 1e300"},
      {{fake, "baseline", "record", "b", "--store", store, "--timeout", "0", "--", "true"}, "--timeout 0"},
      {{fake, "baseline", "record", "b", "--store", store, "--timeout", "nan", "--", "true"}, "--timeout nan"},
      {{fake, "baseline", "record", "b", "--store", store, "--repeat", "0", "--", "true"}, "--repeat 0"},
      {{fake, "baseline", "record", "b", "--store", store, "--repeat", "2.5", "--", "true"}, "--repeat 2.5"},
      {{fake, "baseline", "check", "b", "--store", store, "--timeout=-1"}, "--timeout -1"},
      {{"baseline", "history", "b", "--store", store, "--limit=-1"}, "--limit -1"},
      {{fake, "diagnose", "--live", "--duration", "1e10"}, "--duration 1e10"},
      {{fake, "diagnose", "--live", "--duration", "nan"}, "--duration nan"},
      {{fake, "diagnose", "--live", "--duration", "0"}, "--duration 0"},
      {{fake, "diagnose", "--live", "--duration", ""}, "--duration ''"},
      {{fake, "record", "-o", tmp.file("r.jsonl"), "--duration", "inf"}, "--duration inf"},
      {{fake, "doctor", "--duration", "0"}, "--duration 0"},
      {{fake, "watch", "--once", "--duration", "1e10"}, "--duration 1e10"},
      {{"watch", trace, "--once", "--speed", "inf"}, "--speed inf"},
      {{fake, "watch", "--once", "--interval", "99"}, "--interval 99"},
      {{fake, "health", "--no-store", "--load-seconds", "nan"}, "--load-seconds nan"},
      {{fake, "guard", "--no-store", "--dry-run", "--ack-deadline", "inf", "--", "true"}, "--ack-deadline inf"},
      {{"profile", "--input", records, "--steps", "0"}, "--steps 0"},
      {{"profile", "--duration", "inf", "--", "true"}, "--duration inf"},
      {{fake, "serve", "--no-store", "--duration", "1", "--history", "0"}, "--history 0"},
      {{"report", "--store", store, "--since", "0d"}, "--since 0d"},
      {{"diagnose", trace, "--window", "1e-7"}, "--window 1e-7"},
      {{"trace", "counters", trace, "--every", "0"}, "--every 0"},
      {{"trace", "counters", trace, "--window", "2.5"}, "--window 2.5"},
  };
  for (const auto& c : cases) {
    const Measured m = run_limited(c.args);
    std::string cmd;
    for (const auto& a : c.args) cmd += " " + a;
    EXPECT_EQ(m.exit_code, 2) << cmd << "\n" << m.err;
    EXPECT_LT(m.wall_s, kHangGuardSeconds) << cmd;  // hang guard (above)
    EXPECT_NE(m.err.find(c.named + ": "), std::string::npos) << cmd << "\n" << m.err;
    EXPECT_NE(m.err.find("; expected "), std::string::npos) << cmd << "\n" << m.err;
  }
  // The message says what is accepted.
  expect_bounded_rejection({fake, "baseline", "record", "b", "--store", store, "--timeout", "inf", "--", "true"},
                           "--timeout inf: not a finite number; expected seconds, more than 0 and at most 1000000000");
  expect_bounded_rejection({fake, "baseline", "record", "b", "--store", store, "--repeat", "0", "--", "true"},
                           "--repeat 0: out of range; expected a whole number from 1 to 1000");
  expect_bounded_rejection({"baseline", "history", "b", "--store", store, "--limit=-1"},
                           "--limit -1: out of range; expected a whole number from 0 to 1000000");
  // Nothing ran and nothing was stored.
  EXPECT_FALSE(std::filesystem::exists(store));
}

// --- files read whole, and CUPTI records -----------------------------------------------------

// Runs `fn` while a child writes `head` and then `chunk` over and over into the FIFO `fifo` (a
// writer that never stops); the reader's exit ends the writer.
void with_endless_writer(const std::string& fifo, const std::string& head, const std::string& chunk,
                         const std::function<void()>& fn) {
  const pid_t writer = ::fork();
  if (writer == 0) {
    std::signal(SIGPIPE, SIG_DFL);
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) ::_exit(1);
    if (::write(fd, head.data(), head.size()) < 0) ::_exit(1);
    while (::write(fd, chunk.data(), chunk.size()) > 0) {
    }
    ::_exit(0);
  }
  ASSERT_GT(writer, 0);
  fn();
  ::kill(writer, SIGKILL);
  ::waitpid(writer, nullptr, 0);
}

// /dev/zero as a policy, a config, a saved bench run or CUPTI records: refused at the size limit of
// its kind (docs/limits.md), in little memory, naming the file and the limit. Before, each was read
// whole into memory: 2-4 GB within 30 s and no output.
TEST(CliLimits, DevZeroAsAnyFileInputIsRefusedAtItsKindsLimit) {
  const gpudoc::testing::TempDir tmp("gpudoc-limits-files");
  const std::string store = tmp.file("store.db");
  const std::string whole = "/dev/zero: larger than the limit of ";
  expect_bounded_rejection(
      {"--backend=fake:1", "guard", "--policy", "/dev/zero", "--no-store", "--dry-run", "--", "true"},
      whole + "4 MiB for a guard policy");
  expect_bounded_rejection({"--backend=fake:1", "serve", "--config", "/dev/zero", "--no-store", "--duration", "1"},
                           whole + "4 MiB for a serve config");
  expect_bounded_rejection(
      {"--backend=fake:1", "baseline", "record", "b", "--store", store, "--config", "/dev/zero", "--", "true"},
      whole + "4 MiB for a baseline config");
  expect_bounded_rejection({"bench", "--from", "/dev/zero", "--html", tmp.file("b.html")},
                           whole + "32 MiB for a saved bench run");
  expect_bounded_rejection({"profile", "--input", "/dev/zero"},
                           "/dev/zero line 1: the line is longer than the limit of 65536 bytes");
  EXPECT_FALSE(std::filesystem::exists(store));
}

// The same through a FIFO whose writer never stops: a policy of endless blank lines, and CUPTI
// records followed by endless blank lines (each under the line limit; the line count ends it, where
// each kept record would cost memory).
TEST(CliLimits, AnEndlessFifoAsAFileInputIsRefusedAtItsKindsLimit) {
  const gpudoc::testing::TempDir tmp("gpudoc-limits-fifo");
  const std::string fifo = tmp.file("input");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  with_endless_writer(fifo, "", std::string(65536, '\n'), [&] {
    expect_bounded_rejection({"--backend=fake:1", "guard", "--policy", fifo, "--no-store", "--dry-run", "--", "true"},
                             fifo + ": larger than the limit of 4 MiB for a guard policy");
  });
  with_endless_writer(fifo, "H\tgpudoc-profile\t2\t7\t1\n", std::string(65536, '\n'), [&] {
    expect_bounded_rejection({"profile", "--input", fifo},
                             fifo + " line 5000001: more than 5000000 lines, the limit for CUPTI records");
  });
}

// A kernel that ends before it starts, or lasts longer than a day, is not a record CUPTI writes: the
// file is refused naming the line, not analysed as a kernel "still running" or 57 years long.
TEST(CliLimits, RecordsWithImpossibleTimesAreRefusedNamingTheLine) {
  const std::string header = "H\tgpudoc-profile\t2\t7\t1\n";
  const std::string good = "K\t1000\t2000\t0\t7\t1\t1\t1\t1\t1\t1\t1\t0\t_Z1kv\n";
  const gpudoc::testing::TempFile backwards("backwards.txt",
                                            header + good + "K\t5000\t4000\t0\t7\t2\t1\t1\t1\t1\t1\t1\t0\t_Z1kv\n");
  expect_bounded_rejection({"profile", "--input", backwards.path()},
                           backwards.path() + " line 3: a kernel that ends (4000) before it starts (5000)");
  const gpudoc::testing::TempFile endless(
      "endless.txt", header + good + "K\t1000\t1800000000000001000\t0\t7\t2\t1\t1\t1\t1\t1\t1\t0\t_Z1kv\n");
  expect_bounded_rejection({"profile", "--input", endless.path()},
                           endless.path() + " line 3: a kernel 1800000000000000000 ns long (over a day)");
}

}  // namespace
