// A command's stdout read line by line while every byte is passed on (core/line_tap.hpp).
#include "core/line_tap.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "core/process.hpp"

namespace gpudoc::core {
namespace {

struct Seen {
  std::vector<std::pair<std::size_t, std::string>> lines;
  std::vector<std::tuple<std::size_t, std::string, std::size_t>> oversized;
};

LineHandlers recording(Seen& seen, std::size_t max_line_bytes = 1 << 20) {
  return {.line = [&seen](std::string_view l, std::size_t n) { seen.lines.emplace_back(n, std::string(l)); },
          .oversized = [&seen](std::string_view head, std::size_t n,
                               std::size_t bytes) { seen.oversized.emplace_back(n, std::string(head), bytes); },
          .max_line_bytes = max_line_bytes,
          .head_bytes = 4};
}

void write_all(int fd, const std::string& s) {
  ASSERT_EQ(::write(fd, s.data(), s.size()), static_cast<ssize_t>(s.size()));
}

// `sh -c script` run with its stdout into the tap, waited for; then the tap finished.
void run_through(LineTap& tap, const std::string& script) {
  SpawnOptions spawn;
  spawn.stdout_fd = tap.write_end();
  auto child = ChildProcess::spawn({"sh", "-c", script}, spawn);
  tap.close_write_end();
  ASSERT_TRUE(child) << child.error().message();
  child->wait();
  tap.finish();
}

std::string read_back(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  return out;
}

// A pseudo-terminal standing for gpudoc's own: `terminal` is gpudoc's side, `master` the screen's.
void open_terminal(int& master, int& terminal) {
  master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  ASSERT_GE(master, 0);
  ASSERT_EQ(::grantpt(master), 0);
  ASSERT_EQ(::unlockpt(master), 0);
  terminal = ::open(::ptsname(master), O_RDWR | O_NOCTTY | O_CLOEXEC);
  ASSERT_GE(terminal, 0);
}

TEST(CoreLineTap, HandsOnEachLineAndEchoesEveryByte) {
  std::FILE* echo = std::tmpfile();
  ASSERT_NE(echo, nullptr);
  Seen seen;
  {
    LineTap tap(fileno(echo), recording(seen, 16));
    ASSERT_TRUE(tap.open());
    write_all(tap.write_end(), "one\r\ntwo\n");
    write_all(tap.write_end(), "a line far longer than sixteen bytes\nthr");
    write_all(tap.write_end(), "ee");  // a line split over writes, ended by the pipe's end
    tap.close_write_end();
    tap.finish();
  }
  const std::string all = "one\r\ntwo\na line far longer than sixteen bytes\nthree";
  EXPECT_EQ(read_back(echo), all);
  std::fclose(echo);
  const std::vector<std::pair<std::size_t, std::string>> lines = {{1, "one"}, {2, "two"}, {4, "three"}};
  EXPECT_EQ(seen.lines, lines);
  ASSERT_EQ(seen.oversized.size(), 1u);
  EXPECT_EQ(std::get<0>(seen.oversized[0]), 3u);
  EXPECT_EQ(std::get<1>(seen.oversized[0]), "a li");
  EXPECT_EQ(std::get<2>(seen.oversized[0]), 36u);
}

TEST(CoreLineTap, AFailedEchoStopsTheEchoNotTheReading) {
  Seen seen;
  const int read_only = ::open("/dev/null", O_RDONLY | O_CLOEXEC);  // every write fails
  ASSERT_GE(read_only, 0);
  LineTap tap(read_only, recording(seen));
  ASSERT_TRUE(tap.open());
  write_all(tap.write_end(), "kept\nalso kept\n");
  tap.close_write_end();
  tap.finish();
  ::close(read_only);
  ASSERT_EQ(seen.lines.size(), 2u);
  EXPECT_EQ(seen.lines[1].second, "also kept");
}

TEST(CoreLineTap, APipeHeldOpenElsewhereEndsAfterTheBoundedWait) {
  Seen seen;
  LineTap tap(-1, recording(seen));
  ASSERT_TRUE(tap.open());
  const int held = ::dup(tap.write_end());  // a background grandchild that keeps the pipe
  write_all(held, "before\n");
  tap.close_write_end();
  const auto t0 = std::chrono::steady_clock::now();
  tap.finish(std::chrono::milliseconds(100));
  // A hang guard only: the wait is 0.1 s.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  ::close(held);
  ASSERT_EQ(seen.lines.size(), 1u);
  EXPECT_EQ(seen.lines[0].second, "before");
}

TEST(CoreLineTap, ReadsACommandsOutputUntilItExits) {
  Seen seen;
  LineTap tap(-1, recording(seen));
  ASSERT_TRUE(tap.open());
  run_through(tap, "for i in 1 2 3; do echo line $i; done");
  ASSERT_EQ(seen.lines.size(), 3u);
  EXPECT_EQ(seen.lines[2].second, "line 3");
}

// gpudoc on a terminal: the command's stdout is a terminal too (it prints line by line, as without
// gpudoc), and its bytes still reach gpudoc's terminal and the handler.
TEST(CoreLineTap, OnATerminalTheCommandWritesIntoATerminal) {
  int master = -1;
  int gpudoc_terminal = -1;
  ASSERT_NO_FATAL_FAILURE(open_terminal(master, gpudoc_terminal));
  Seen seen;
  LineTap tap(gpudoc_terminal, recording(seen));
  ASSERT_TRUE(tap.open());
  EXPECT_TRUE(tap.terminal());
  run_through(tap, "if [ -t 1 ]; then echo terminal; else echo pipe; fi; printf 'a\\nb'");
  const std::vector<std::pair<std::size_t, std::string>> lines = {{1, "terminal"}, {2, "a"}, {3, "b"}};
  EXPECT_EQ(seen.lines, lines);
  std::string echoed;  // echoed before finish() returned: waiting in the terminal, read without blocking
  ASSERT_EQ(::fcntl(master, F_SETFL, O_NONBLOCK), 0);
  char buf[256];
  for (ssize_t n; (n = ::read(master, buf, sizeof buf)) > 0;) echoed.append(buf, static_cast<std::size_t>(n));
  EXPECT_NE(echoed.find("terminal"), std::string::npos) << echoed;
  ::close(gpudoc_terminal);
  ::close(master);
}

// gpudoc's terminal resized while the command runs: the command's terminal takes the new size and
// its process group hears of it (SIGWINCH), as a command in the foreground would.
TEST(CoreLineTap, AResizeOfGpudocsTerminalReachesTheCommand) {
  int master = -1;
  int gpudoc_terminal = -1;
  ASSERT_NO_FATAL_FAILURE(open_terminal(master, gpudoc_terminal));
  winsize before{.ws_row = 24, .ws_col = 80, .ws_xpixel = 0, .ws_ypixel = 0};
  ASSERT_EQ(::ioctl(gpudoc_terminal, TIOCSWINSZ, &before), 0);
  std::vector<std::string> lines;
  std::atomic<bool> ready{false};
  LineTap tap(gpudoc_terminal, {.line =
                                    [&](std::string_view l, std::size_t) {
                                      lines.emplace_back(l);
                                      if (l == "ready") ready = true;
                                    },
                                .oversized = {}});
  ASSERT_TRUE(tap.open());
  SpawnOptions spawn;
  spawn.stdout_fd = tap.write_end();
  spawn.new_process_group = true;
  // Prints its terminal's size when told of a resize; gives up after 20 s (a hang guard).
  auto child = ChildProcess::spawn({"sh", "-c",
                                    "trap 'stty size <&1; exit 0' WINCH; stty size <&1; echo ready; "
                                    "i=0; while [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; exit 1"},
                                   spawn);
  tap.close_write_end();
  ASSERT_TRUE(child) << child.error().message();
  tap.signal_resizes_to(child->pid());
  for (int i = 0; i < 2000 && !ready.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  winsize after{.ws_row = 50, .ws_col = 132, .ws_xpixel = 0, .ws_ypixel = 0};
  ASSERT_EQ(::ioctl(gpudoc_terminal, TIOCSWINSZ, &after), 0);
  child->wait();
  tap.finish();
  const std::vector<std::string> expected = {"24 80", "ready", "50 132"};
  EXPECT_EQ(lines, expected);
  EXPECT_EQ(child->exit_code_for_shell(), 0);
  ::close(gpudoc_terminal);
  ::close(master);
}

TEST(CoreLineTap, OffATerminalTheCommandWritesIntoAPipe) {
  Seen seen;
  LineTap tap(-1, recording(seen));
  ASSERT_TRUE(tap.open());
  EXPECT_FALSE(tap.terminal());
  run_through(tap, "if [ -t 1 ]; then echo terminal; else echo pipe; fi");
  ASSERT_EQ(seen.lines.size(), 1u);
  EXPECT_EQ(seen.lines[0].second, "pipe");
}

}  // namespace
}  // namespace gpudoc::core
