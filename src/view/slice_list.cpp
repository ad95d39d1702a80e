#include "view/slice_list.hpp"

#include <fmt/format.h>

#include "core/text.hpp"

namespace gpudoc::view {
namespace {

nlohmann::json listed_json(const slice::Listed& s) {
  nlohmann::json procs = nlohmann::json::array();
  for (const auto& p : s.state.processes)
    procs.push_back({{"pid", p.pid},
                     {"used_bytes", p.used_bytes},
                     {"peak_bytes", p.peak_bytes},
                     {"refused_allocations", p.refused}});
  return {{"name", s.state.name},
          {"command", s.state.command},
          {"gpudoc_pid", s.state.owner_pid},
          {"running", s.owner_running},
          {"mechanism", s.state.mechanism == 1 ? "mps" : "interception"},
          {"memory_limit_bytes", s.state.limits.memory_bytes},
          {"memory_used_bytes", s.state.used_bytes},
          {"sm_percent", s.state.limits.sm_percent},
          {"sm_window_start_percent", s.state.mechanism == 0 && s.state.limits.sm_percent > 0
                                          ? nlohmann::json(s.state.limits.sm_window_offset_permyriad / 100.0)
                                          : nlohmann::json()},
          {"pcie_bytes_per_second", s.state.limits.pcie_bytes_per_second},
          {"copied_bytes", s.state.copy_bytes},
          {"copy_waited_seconds", static_cast<double>(s.state.copy_waited_ns) / 1e9},
          {"reaped_bytes", s.state.reaped_bytes},
          {"recovered_locks", s.state.recovered_locks},
          {"created_unix_seconds", s.state.created_unix_seconds},
          {"processes", procs}};
}

std::string bytes(std::uint64_t n) { return core::human_bytes(static_cast<double>(n)); }

std::vector<std::string> row_of(const slice::Listed& s) {
  const auto& st = s.state;
  std::string procs;
  for (const auto& p : st.processes)
    procs += fmt::format("{}{}:{}", procs.empty() ? "" : " ", p.pid, bytes(p.used_bytes));
  return {core::terminal_safe(st.name),
          fmt::format("{}{}", st.owner_pid, s.owner_running ? "" : " (gone)"),
          st.mechanism == 1 ? "mps" : "interception",
          bytes(st.used_bytes) + " / " +
              (st.limits.memory_bytes > 0 ? bytes(st.limits.memory_bytes) : std::string("no cap")),
          st.limits.sm_percent == 0 ? std::string("-")
          : st.mechanism == 1       ? fmt::format("{} %", st.limits.sm_percent)
                                    : fmt::format("{} % (window from {:g} %)", st.limits.sm_percent,
                                                  st.limits.sm_window_offset_permyriad / 100.0),
          procs.empty() ? "-" : procs,
          core::terminal_safe(st.command)};
}

}  // namespace

std::string render_slice_list(const std::vector<slice::Listed>& slices) {
  if (slices.empty()) return "no slices run now (gpudoc slice --mem SIZE -- CMD starts one)\n";
  std::vector<std::vector<std::string>> rows{
      {"NAME", "GPUDOC PID", "MECHANISM", "MEMORY", "SM", "PROCESSES", "COMMAND"}};
  for (const auto& s : slices) rows.push_back(row_of(s));
  return core::render_table(rows);
}

nlohmann::json slice_list_json(const std::vector<slice::Listed>& slices) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : slices) out.push_back(listed_json(s));
  return nlohmann::json{{"slices", out}};
}

std::string render_slice_start(const std::string& name, const slice::Limits& limits,
                               const slice::Placement& placement) {
  return fmt::format("gpudoc slice: {}: memory {}, SM {}; {}\n", core::terminal_safe(name),
                     limits.memory_bytes > 0 ? core::human_bytes(static_cast<double>(limits.memory_bytes)) : "no cap",
                     limits.sm_percent > 0 ? fmt::format("{} %", limits.sm_percent) : "no cap", placement.note) +
         slice::enforcement_notes(limits, placement);
}

}  // namespace gpudoc::view
