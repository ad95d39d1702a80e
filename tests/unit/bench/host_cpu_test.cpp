// bench/host_cpu: /proc/stat parsing, the marks on this machine, and the sentence that explains a
// host-bound figure's spread.
#include "bench/host_cpu.hpp"

#include <gtest/gtest.h>
#include <sched.h>

#include <chrono>
#include <thread>

namespace gpudoc::bench {
namespace {

// A /proc/stat of a 2-vCPU guest (Linux 6.1), cpu1 with steal.
constexpr const char* kProcStat =
    "cpu  4705 356 584 3699176 23 0 14 1290 0 0\n"
    "cpu0 2401 200 300 1849588 11 0 7 0 0 0\n"
    "cpu1 2304 156 284 1849588 12 0 7 1290 0 0\n"
    "cpu10 1 1 1 1 1 1 1 99 0 0\n"
    "intr 114930548 20 9 0 0 0 0 0 0 0 0 0\n"
    "ctxt 231237424\n";

TEST(HostCpu, ParsesTheCpuLineStealAndTotal) {
  const auto c1 = parse_proc_stat_cpu(kProcStat, 1);
  ASSERT_TRUE(c1.has_value());
  EXPECT_EQ(c1->steal, 1290u);
  EXPECT_EQ(c1->total, 2304u + 156 + 284 + 1849588 + 12 + 0 + 7 + 1290);  // guest fields left out
  const auto c0 = parse_proc_stat_cpu(kProcStat, 0);
  ASSERT_TRUE(c0.has_value());
  EXPECT_EQ(c0->steal, 0u);
  // "cpu1" is not "cpu10", nor the aggregate "cpu " line.
  EXPECT_EQ(parse_proc_stat_cpu(kProcStat, 10)->steal, 99u);
}

TEST(HostCpu, MissingOrMalformedLinesGiveNothing) {
  EXPECT_FALSE(parse_proc_stat_cpu(kProcStat, 2).has_value());
  EXPECT_FALSE(parse_proc_stat_cpu(kProcStat, -1).has_value());
  EXPECT_FALSE(parse_proc_stat_cpu("", 0).has_value());
  EXPECT_FALSE(parse_proc_stat_cpu("cpu0 1 2 x 4 5 6 7 8\n", 0).has_value());
  EXPECT_FALSE(parse_proc_stat_cpu("cpu0 1 2\n", 0).has_value());
  // An old kernel's line without steal: read, steal 0.
  const auto old = parse_proc_stat_cpu("cpu0 10 20 30 40\n", 0);
  ASSERT_TRUE(old.has_value());
  EXPECT_EQ(old->steal, 0u);
  EXPECT_EQ(old->total, 100u);
}

TEST(HostCpu, MarksOnThisMachineMoveForward) {
  const int cpu = sched_getcpu();
  const HostMark a = mark_host(cpu);
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(30);
  volatile unsigned spin = 0;
  while (std::chrono::steady_clock::now() < until) spin = spin + 1;  // CPU time for this thread
  const HostMark b = mark_host(cpu);
  EXPECT_GE(b.wall_seconds - a.wall_seconds, 0.03);
  EXPECT_GT(b.thread_cpu_seconds - a.thread_cpu_seconds, 0.0);
  EXPECT_LE(b.thread_cpu_seconds - a.thread_cpu_seconds, b.wall_seconds - a.wall_seconds + 0.005);
  ASSERT_TRUE(a.ticks.has_value()) << "/proc/stat has no line for cpu " << cpu;
  const auto steal = steal_seconds(a, b);
  ASSERT_TRUE(steal.has_value());
  EXPECT_GE(*steal, 0.0);
  EXPECT_FALSE(steal_seconds(a, mark_host(-1)).has_value());  // no ticks: unknown, not zero
}

TEST(HostCpu, SpreadFromStealIsSaidSo) {
  // The blocks of the H200 host (2026-11-30): 3.3-3.5 us, then 4.1-4.5 us per launch.
  const std::vector<double> us{3.3, 3.4, 3.35, 3.3, 4.2, 4.3, 4.4, 4.1};
  const std::vector<double> cpu{3.2, 3.3, 3.2, 3.2, 3.3, 3.2, 3.3, 3.2};  // the thread's own time flat
  const std::vector<double> steal{0.0, 0.0, 0.01, 0.0, 0.2, 0.22, 0.25, 0.18};
  const auto note = host_spread_note(us, cpu, steal, 0.02);
  ASSERT_TRUE(note.has_value());
  EXPECT_EQ(note->rfind("steal: the slower half of the samples lost 21 %", 0), 0u) << *note;
}

TEST(HostCpu, SpreadFromASlowerCpuIsSaidSo) {
  const std::vector<double> us{3.3, 3.4, 3.35, 3.3, 4.2, 4.3, 4.4, 4.1};
  const std::vector<double> cpu{3.25, 3.35, 3.3, 3.2, 4.15, 4.2, 4.35, 4.05};  // tracks the figure
  const std::vector<double> no_steal(8, 0.0);
  const auto note = host_spread_note(us, cpu, no_steal, 0.02);
  ASSERT_TRUE(note.has_value());
  EXPECT_EQ(note->rfind("slower CPU: the thread ran the whole time", 0), 0u) << *note;
  // Without steal figures (no /proc/stat) the CPU time alone still tells it.
  EXPECT_TRUE(host_spread_note(us, cpu, {}, 0.02).has_value());
}

TEST(HostCpu, NoNoteWithinTheLimitOrWithoutAnExplanation) {
  const std::vector<double> tight{3.30, 3.31, 3.29, 3.30, 3.32, 3.31};
  EXPECT_FALSE(host_spread_note(tight, tight, std::vector<double>(6, 0.0), 0.02).has_value());
  // Spread, but the CPU time is flat and nothing was stolen: not explained, so nothing said.
  const std::vector<double> us{3.3, 3.4, 3.35, 3.3, 4.2, 4.3, 4.4, 4.1};
  const std::vector<double> flat(8, 3.2);
  EXPECT_FALSE(host_spread_note(us, flat, std::vector<double>(8, 0.0), 0.02).has_value());
  EXPECT_FALSE(host_spread_note({1.0, 2.0}, {1.0, 2.0}, {}, 0.02).has_value());  // too few samples
}

}  // namespace
}  // namespace gpudoc::bench
