// gpudoc::serve process metrics — the process_* series that every Prometheus client library
// exposes about its own process (client_golang's process collector: the same names, help texts
// and sources), read from /proc for gpudoc serve's /metrics:
//
//   process_cpu_seconds_total      utime + stime of /proc/self/stat, in seconds
//   process_resident_memory_bytes  rss (pages) of /proc/self/stat times the page size
//   process_virtual_memory_bytes   vsize of /proc/self/stat
//   process_start_time_seconds     btime of /proc/stat + starttime of /proc/self/stat (ticks since boot)
//   process_open_fds               the entries of /proc/self/fd, less the one reading them
//   process_max_fds                the soft "Max open files" of /proc/self/limits (absent: unlimited)
//
//   serve::ProcessSelf p = serve::read_process_self();        // a scrape, any thread
//   auto stat = serve::parse_self_stat(text, 100, 4096);       // pure, on fixture text
//
// The parsers are pure (text in, values out); a field that cannot be read is absent, never 0.
#pragma once

#include <optional>
#include <string_view>

#include "serve/exposition.hpp"

namespace gpudoc::serve {

struct SelfStat {
  double cpu_seconds = 0;
  double resident_memory_bytes = 0;
  double virtual_memory_bytes = 0;
  double start_ticks_after_boot = 0;  // starttime, in clock ticks
};

// /proc/[pid]/stat: its fields after the command name (which may hold spaces and parentheses: the
// last ')' ends it). nullopt when the text is not such a line or a ticks or page size is not above 0.
[[nodiscard]] std::optional<SelfStat> parse_self_stat(std::string_view text, long ticks_per_second, long page_size);
// The "btime" line of /proc/stat: the boot time in seconds since the epoch.
[[nodiscard]] std::optional<double> parse_boot_time(std::string_view proc_stat);
// The soft limit of the "Max open files" row of /proc/[pid]/limits; nullopt when absent or unlimited.
[[nodiscard]] std::optional<double> parse_max_open_files(std::string_view limits);

// The series from the three texts and the count of open descriptors (each may be empty/absent).
[[nodiscard]] ProcessSelf process_self_from(std::string_view self_stat, std::string_view proc_stat,
                                            std::string_view limits, std::optional<double> open_fds,
                                            long ticks_per_second, long page_size);
// This process's, from /proc (every field absent where /proc is not mounted).
[[nodiscard]] ProcessSelf read_process_self();

}  // namespace gpudoc::serve
