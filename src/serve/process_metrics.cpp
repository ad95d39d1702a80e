#include "serve/process_metrics.hpp"

#include <dirent.h>
#include <unistd.h>

#include <charconv>
#include <string>
#include <vector>

#include "core/file.hpp"

namespace gpudoc::serve {
namespace {

std::optional<double> number(std::string_view s) {
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::vector<std::string_view> words(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n')) ++i;
    const std::size_t start = i;
    while (i < s.size() && s[i] != ' ' && s[i] != '\t' && s[i] != '\n') ++i;
    if (i > start) out.push_back(s.substr(start, i - start));
  }
  return out;
}

std::string read_proc(const char* path) {
  auto text = core::read_file(path, {.max_bytes = 1 << 16, .what = "a /proc file"});
  return text ? std::move(*text) : std::string();
}

// The entries of /proc/self/fd but the one listing them; nullopt when it cannot be listed.
std::optional<double> count_open_fds() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return std::nullopt;
  double n = 0;
  while (const dirent* e = ::readdir(dir))
    if (e->d_name[0] != '.') ++n;
  ::closedir(dir);
  return n - 1;
}

}  // namespace

std::optional<SelfStat> parse_self_stat(std::string_view text, long ticks_per_second, long page_size) {
  const auto close = text.rfind(')');
  if (close == std::string_view::npos || ticks_per_second <= 0 || page_size <= 0) return std::nullopt;
  // Fields after the command name, from the 3rd (state): utime is the 14th, stime the 15th,
  // starttime the 22nd, vsize the 23rd, rss the 24th (proc(5)).
  const auto f = words(text.substr(close + 1));
  if (f.size() < 22) return std::nullopt;
  const auto utime = number(f[11]), stime = number(f[12]), start = number(f[19]);
  const auto vsize = number(f[20]), rss = number(f[21]);
  if (!utime || !stime || !start || !vsize || !rss) return std::nullopt;
  const auto ticks = static_cast<double>(ticks_per_second);
  return SelfStat{.cpu_seconds = (*utime + *stime) / ticks,
                  .resident_memory_bytes = *rss * static_cast<double>(page_size),
                  .virtual_memory_bytes = *vsize,
                  .start_ticks_after_boot = *start};
}

std::optional<double> parse_boot_time(std::string_view proc_stat) {
  std::size_t at = 0;
  while (at < proc_stat.size()) {
    const auto end = std::min(proc_stat.find('\n', at), proc_stat.size());
    const auto w = words(proc_stat.substr(at, end - at));
    if (w.size() == 2 && w[0] == "btime") return number(w[1]);
    at = end + 1;
  }
  return std::nullopt;
}

std::optional<double> parse_max_open_files(std::string_view limits) {
  constexpr std::string_view kRow = "Max open files";
  std::size_t at = 0;
  while (at < limits.size()) {
    const auto end = std::min(limits.find('\n', at), limits.size());
    const std::string_view line = limits.substr(at, end - at);
    if (line.starts_with(kRow)) {
      const auto w = words(line.substr(kRow.size()));
      return w.empty() ? std::nullopt : number(w[0]);  // "unlimited" is no number
    }
    at = end + 1;
  }
  return std::nullopt;
}

ProcessSelf process_self_from(std::string_view self_stat, std::string_view proc_stat, std::string_view limits,
                              std::optional<double> open_fds, long ticks_per_second, long page_size) {
  ProcessSelf p;
  if (const auto s = parse_self_stat(self_stat, ticks_per_second, page_size)) {
    p.cpu_seconds = s->cpu_seconds;
    p.resident_memory_bytes = s->resident_memory_bytes;
    p.virtual_memory_bytes = s->virtual_memory_bytes;
    if (const auto boot = parse_boot_time(proc_stat))
      p.start_time_seconds = *boot + s->start_ticks_after_boot / static_cast<double>(ticks_per_second);
  }
  p.open_fds = open_fds;
  p.max_fds = parse_max_open_files(limits);
  return p;
}

ProcessSelf read_process_self() {
  return process_self_from(read_proc("/proc/self/stat"), read_proc("/proc/stat"), read_proc("/proc/self/limits"),
                           count_open_fds(), ::sysconf(_SC_CLK_TCK), ::sysconf(_SC_PAGESIZE));
}

}  // namespace gpudoc::serve
