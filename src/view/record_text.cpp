#include "view/record_text.hpp"

#include <fmt/format.h>

#include "core/text.hpp"

namespace gpudoc::view {

std::string record_start_line(int gpus, const std::string& output, const std::vector<std::string>& command,
                              double duration_s, bool replay) {
  const std::string until = !command.empty() ? fmt::format(" while `{}` runs", fmt::join(command, " "))
                            : duration_s > 0 ? fmt::format(" for {} s", duration_s)
                            : replay         ? " until it ends or Ctrl-C"
                                             : " until Ctrl-C";
  return fmt::format("gpudoc: recording {} GPU{} to {}{}\n", gpus, gpus == 1 ? "" : "s", output, until);
}

std::string record_progress_line(const std::string& output, double elapsed_s, std::uint64_t lines) {
  return fmt::format("\rgpudoc: recording {}: {:.0f} s, {} sample lines  (Ctrl-C stops)", core::terminal_safe(output),
                     elapsed_s, lines);
}

std::string record_summary_line(const telemetry::RecordResult& r, const std::string& output) {
  std::string lost;
  for (std::size_t i = 0; i < r.gpus.size(); ++i)
    if (r.gpus[i].lost) lost += fmt::format(" GPU {} was lost.", i);
  return fmt::format("gpudoc: wrote {}: {:.1f} s, {} GPU{}, {} sample lines, {} dropped ({}).{}\n", output,
                     r.duration_s, r.gpu_count, r.gpu_count == 1 ? "" : "s", r.sample_lines, r.dropped_records,
                     r.end_reason, lost);
}

nlohmann::json record_json(const telemetry::RecordResult& r, const std::string& output,
                           const telemetry::BackendSpec& backend) {
  nlohmann::json j = {{"trace", output},
                      {"duration_s", r.duration_s},
                      {"gpus", r.gpu_count},
                      {"sample_lines", r.sample_lines},
                      {"dropped_records", r.dropped_records},
                      {"end_reason", r.end_reason},
                      {"backend", telemetry::describe(backend)}};
  if (r.command_exit_code) j["command_exit_code"] = *r.command_exit_code;
  return j;
}

}  // namespace gpudoc::view
