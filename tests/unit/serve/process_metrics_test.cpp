// The process_* series: the /proc parsers on fixture text (a command name with spaces and
// parentheses, unlimited limits, missing lines), the exposition's names as client libraries write
// them, and this test's own process read live (values checked against what is known of it).
#include "serve/process_metrics.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "serve/exposition.hpp"

namespace gpudoc::serve {
namespace {

// proc(5): pid (comm) state ppid ... utime(14)=250 stime(15)=50 ... starttime(22)=51848
// vsize(23)=2998272 rss(24)=416; the command name holds a space, a ')' and a '(' of its own.
constexpr std::string_view kSelfStat =
    "15443 (gpu doc) (x) R 15438 15438 2030 0 -1 4194304 105 0 0 0 250 50 0 0 20 0 1 0 51848 2998272 416 "
    "18446744073709551615 94496327999488 94496328023593 140729762995760 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
constexpr std::string_view kProcStat =
    "cpu  2255 34 2290 22625563 6290 127 456 0 0 0\n"
    "cpu0 1132 34 1441 11311718 3675 127 438 0 0 0\n"
    "intr 114930548 113199788 3 0 5 263 0 4 [... 2000 more]\n"
    "ctxt 1990473\n"
    "btime 1796322244\n"
    "processes 2915\n";
constexpr std::string_view kLimits =
    "Limit                     Soft Limit           Hard Limit           Units     \n"
    "Max cpu time              unlimited            unlimited            seconds   \n"
    "Max processes             96369                96369                processes \n"
    "Max open files            20000                1048576              files     \n"
    "Max locked memory         8388608              8388608              bytes     \n";

TEST(ProcessMetrics, SelfStatFieldsAfterTheCommandName) {
  const auto s = parse_self_stat(kSelfStat, 100, 4096);
  ASSERT_TRUE(s);
  EXPECT_DOUBLE_EQ(s->cpu_seconds, 3.0);  // (250 + 50) ticks at 100 a second
  EXPECT_DOUBLE_EQ(s->resident_memory_bytes, 416.0 * 4096);
  EXPECT_DOUBLE_EQ(s->virtual_memory_bytes, 2998272);
  EXPECT_DOUBLE_EQ(s->start_ticks_after_boot, 51848);
}

TEST(ProcessMetrics, MalformedStatIsNothing) {
  EXPECT_FALSE(parse_self_stat("", 100, 4096));
  EXPECT_FALSE(parse_self_stat("15443 (cut short) R 1 2 3", 100, 4096));
  EXPECT_FALSE(
      parse_self_stat("15443 no parenthesis R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22", 100, 4096));
  std::string bad(kSelfStat);
  bad.replace(bad.find(" 250 "), 5, " x50 ");
  EXPECT_FALSE(parse_self_stat(bad, 100, 4096));
  EXPECT_FALSE(parse_self_stat(kSelfStat, 0, 4096));
}

TEST(ProcessMetrics, BootTimeAndOpenFileLimit) {
  EXPECT_EQ(parse_boot_time(kProcStat), 1796322244.0);
  EXPECT_FALSE(parse_boot_time("cpu 1 2 3\nctxt 5\n"));
  EXPECT_EQ(parse_max_open_files(kLimits), 20000.0);  // the soft limit, not the hard one
  EXPECT_FALSE(parse_max_open_files("Limit Soft Hard Units\nMax open files            unlimited  unlimited  files\n"));
  EXPECT_FALSE(parse_max_open_files("Max processes 5 5 processes\n"));
}

TEST(ProcessMetrics, TheSeriesFromTheTexts) {
  const ProcessSelf p = process_self_from(kSelfStat, kProcStat, kLimits, 7.0, 100, 4096);
  EXPECT_EQ(p.cpu_seconds, 3.0);
  EXPECT_EQ(p.start_time_seconds, 1796322244.0 + 518.48);
  EXPECT_EQ(p.open_fds, 7.0);
  EXPECT_EQ(p.max_fds, 20000.0);
  const ProcessSelf none = process_self_from("", "", "", std::nullopt, 100, 4096);
  EXPECT_FALSE(none.cpu_seconds || none.resident_memory_bytes || none.start_time_seconds || none.open_fds ||
               none.max_fds);
}

TEST(ProcessMetrics, RenderedUnderTheClientLibrariesNames) {
  Snapshot s;
  s.process = process_self_from(kSelfStat, kProcStat, kLimits, 7.0, 100, 4096);
  const std::string text = render(s, {});
  EXPECT_NE(text.find("# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
                      "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 3\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\nprocess_resident_memory_bytes 1703936\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nprocess_virtual_memory_bytes 2998272\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nprocess_start_time_seconds 1796322762.48\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\n# TYPE process_open_fds gauge\nprocess_open_fds 7\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nprocess_max_fds 20000\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("gpudoc_process_cpu"), std::string::npos) << text;
  const std::string om = render(s, {.format = Format::kOpenMetrics});
  EXPECT_NE(om.find("# TYPE process_cpu_seconds counter\n# UNIT process_cpu_seconds seconds\n"
                    "process_cpu_seconds_total 3\n"),
            std::string::npos)
      << om;
  EXPECT_EQ(render(Snapshot{}, {}).find("process_"), std::string::npos);  // absent: not exposed
}

TEST(ProcessMetrics, ThisProcessReadLive) {
  const ProcessSelf p = read_process_self();
  ASSERT_TRUE(p.cpu_seconds && p.resident_memory_bytes && p.virtual_memory_bytes && p.start_time_seconds &&
              p.open_fds && p.max_fds);
  EXPECT_GE(*p.cpu_seconds, 0);
  EXPECT_GT(*p.resident_memory_bytes, 0);
  EXPECT_GE(*p.virtual_memory_bytes, *p.resident_memory_bytes);
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_LE(*p.start_time_seconds, now + 1);
  EXPECT_GT(*p.start_time_seconds, now - 3600);  // this test started within the hour
  rlimit rl{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &rl), 0);
  if (rl.rlim_cur != RLIM_INFINITY) {
    EXPECT_EQ(*p.max_fds, static_cast<double>(rl.rlim_cur));
  }
  // one more descriptor open: one more counted
  const int fd = ::dup(0);
  ASSERT_GE(fd, 0);
  const ProcessSelf q = read_process_self();
  ::close(fd);
  EXPECT_EQ(*q.open_fds, *p.open_fds + 1);
}

}  // namespace
}  // namespace gpudoc::serve
