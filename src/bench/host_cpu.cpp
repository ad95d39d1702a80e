// Host CPU accounting for host-bound benchmarks, behind host_cpu.hpp.
#include "bench/host_cpu.hpp"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <sstream>

#include <fmt/format.h>

#include "bench/stats.hpp"
#include "core/file.hpp"
#include "core/numeric.hpp"

namespace gpudoc::bench {

std::optional<CpuTicks> parse_proc_stat_cpu(std::string_view text, int cpu) {
  if (cpu < 0) return std::nullopt;
  const std::string want = "cpu" + std::to_string(cpu);
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.size() <= want.size() || line.substr(0, want.size()) != want || line[want.size()] != ' ') continue;
    std::istringstream in{std::string(line.substr(want.size()))};
    std::vector<std::uint64_t> fields;
    std::string word;
    while (in >> word) {
      if (word.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
      fields.push_back(std::stoull(word));
    }
    if (fields.size() < 4) return std::nullopt;  // user nice system idle at the least
    CpuTicks t;
    // user nice system idle iowait irq softirq steal guest guest_nice: guest time is already in
    // user and nice, so the total stops at steal.
    for (std::size_t i = 0; i < fields.size() && i < 8; ++i) t.total += fields[i];
    if (fields.size() >= 8) t.steal = fields[7];
    return t;
  }
  return std::nullopt;
}

HostMark mark_host(int cpu) {
  HostMark m;
  m.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
    m.thread_cpu_seconds = static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
  if (cpu >= 0)
    if (auto text = core::read_file("/proc/stat")) m.ticks = parse_proc_stat_cpu(*text, cpu);
  return m;
}

std::optional<double> steal_seconds(const HostMark& before, const HostMark& after) {
  if (!before.ticks || !after.ticks || after.ticks->steal < before.ticks->steal) return std::nullopt;
  const long hz = sysconf(_SC_CLK_TCK);
  if (hz <= 0) return std::nullopt;
  return static_cast<double>(after.ticks->steal - before.ticks->steal) / static_cast<double>(hz);
}

namespace {

double mean_of(const std::vector<double>& v, const std::vector<std::size_t>& idx) {
  double s = 0;
  for (std::size_t i : idx) s += v[i];
  return idx.empty() ? 0 : s / static_cast<double>(idx.size());
}

}  // namespace

std::optional<std::string> host_spread_note(const std::vector<double>& figure, const std::vector<double>& cpu_per_unit,
                                            const std::vector<double>& steal_share, double cv_limit) {
  if (figure.size() < 4 || summarize(figure).cv <= cv_limit) return std::nullopt;
  // The slower half (the larger times) and the faster half, by the figure.
  std::vector<std::size_t> order(figure.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return figure[a] < figure[b]; });
  const std::size_t half = figure.size() / 2;
  const std::vector<std::size_t> fast(order.begin(), order.begin() + static_cast<long>(half));
  const std::vector<std::size_t> slow(order.end() - static_cast<long>(half), order.end());
  if (steal_share.size() == figure.size()) {
    const double s_slow = mean_of(steal_share, slow);
    const double s_fast = mean_of(steal_share, fast);
    if (s_slow - s_fast >= 0.05)
      return fmt::format(
          "steal: the slower half of the samples lost {:.0f} % of their time to steal on this vCPU, the faster half "
          "{:.0f} %: the hypervisor gave the CPU to something else; the spread is the host's, not the GPU's",
          100 * s_slow, 100 * s_fast);
  }
  if (cpu_per_unit.size() == figure.size()) {
    const double r = core::correlation(figure, cpu_per_unit, 3).value_or(0);
    if (r >= 0.8)
      return fmt::format(
          "slower CPU: the thread ran the whole time, and its CPU time per unit moved with the figure (correlation "
          "{:.2f}; slower half {:.3g}, faster half {:.3g}) without steal to explain it: the vCPU's speed changed "
          "(frequency, a busy sibling thread); the spread is the host's, not the GPU's",
          r, mean_of(cpu_per_unit, slow), mean_of(cpu_per_unit, fast));
  }
  return std::nullopt;
}

}  // namespace gpudoc::bench
