// gpudoc::bench host_cpu — where a host-bound figure's time went, per sample: the thread's own CPU
// time, and the steal time the kernel counts for the CPU it ran on (/proc/stat: time the
// hypervisor gave this vCPU's turn to someone else). A launch costs host work; when its samples
// spread, these tell a vCPU that was taken away (steal) from one that ran the whole time but
// slower (frequency, a busy sibling thread), neither of which gpudoc or the GPU can change.
//
//   const int cpu = sched_getcpu();
//   const HostMark a = mark_host(cpu);   ... launches ...   const HostMark b = mark_host(cpu);
//   b.thread_cpu_seconds - a.thread_cpu_seconds;   // CPU the thread used
//   steal_seconds(a, b);                           // CPU taken from that vCPU meanwhile
//
// C++17 (included by cuda/launch.cu). Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpudoc::bench {

// The "cpuN" line of /proc/stat, in USER_HZ ticks: steal (the 8th field) and the sum of all.
struct CpuTicks {
  std::uint64_t steal = 0;
  std::uint64_t total = 0;
};

// Parses /proc/stat's text for CPU `cpu` (>= 0); nullopt when the line is missing or malformed.
// Kernels before 2.6.11 print no steal field: steal reads 0 then.
[[nodiscard]] std::optional<CpuTicks> parse_proc_stat_cpu(std::string_view proc_stat, int cpu);

struct HostMark {
  double wall_seconds = 0;        // steady clock
  double thread_cpu_seconds = 0;  // CLOCK_THREAD_CPUTIME_ID
  std::optional<CpuTicks> ticks;  // of the CPU given; nullopt where /proc/stat cannot be read
};

// Reads the clocks and, for cpu >= 0, that CPU's line of /proc/stat (~50 us: call it outside
// timed regions).
[[nodiscard]] HostMark mark_host(int cpu);

// Steal seconds between two marks of the same CPU; nullopt when either lacks ticks.
[[nodiscard]] std::optional<double> steal_seconds(const HostMark& before, const HostMark& after);

// One sentence on a host-bound figure whose samples spread (CV above `cv_limit`), from each
// sample's figure (e.g. us per launch), the thread's CPU time per unit in the same unit, and the
// steal share of the sample's wall time (empty when unknown):
//   "steal": the slow samples lost >= 5 % of their time to steal more than the fast ones did;
//   "slower CPU": the thread's CPU time per unit tracks the figure (correlation >= 0.8) and
//                 steal does not explain it;
// nullopt when the CV is within the limit or neither holds.
[[nodiscard]] std::optional<std::string> host_spread_note(const std::vector<double>& figure,
                                                          const std::vector<double>& cpu_per_unit,
                                                          const std::vector<double>& steal_share, double cv_limit);

}  // namespace gpudoc::bench
