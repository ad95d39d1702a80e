#include "view/health_text.hpp"

#include <fmt/format.h>

#include "core/text.hpp"
#include "core/version.hpp"

namespace gpudoc::view {
namespace {

std::string status_cell(health::Status s, bool color) {
  const char* name = health::to_string(s);
  if (!color) return fmt::format("{:<4}", name);
  const char* code = s == health::Status::kFail   ? "\033[31m"
                     : s == health::Status::kWarn ? "\033[33m"
                     : s == health::Status::kPass ? "\033[32m"
                                                  : "\033[2m";
  return fmt::format("{}{:<4}\033[0m", code, name);
}

}  // namespace

std::string render_health_table(const std::vector<health::CheckResult>& results, double wall_s,
                                const std::string& header, bool color) {
  // The evidence quotes the GPUs, the driver and the host (a replayed trace's, too): every text is
  // shown through core::terminal_safe; the status colour is added to the escaped text.
  std::string out = core::terminal_safe(header, core::Newlines::kKeep);
  out += fmt::format("{:<17} {:<3} {:<4}  {}\n", "CHECK", "GPU", "STAT", "EVIDENCE / NEXT STEP");
  for (const auto& r : results) {
    out += fmt::format("{:<17} {:<3} {}  {}\n", core::terminal_safe(r.check), r.gpu ? std::to_string(*r.gpu) : "-",
                       status_cell(r.status, color), core::terminal_safe(r.evidence));
    if (!r.next_step.empty() && r.status != health::Status::kPass && r.status != health::Status::kSkip)
      out += fmt::format("{:<27}-> {}\n", "", core::terminal_safe(r.next_step));
  }
  int n[5] = {0, 0, 0, 0, 0};
  for (const auto& r : results) ++n[static_cast<int>(r.status)];
  out +=
      fmt::format("\n{} fail, {} warn, {} info, {} pass, {} skip — {:.1f} s\n", n[4], n[3], n[2], n[1], n[0], wall_s);
  return out;
}

std::string health_header(const health::NodeReport& node, const std::string& banner) {
  const auto& sys = node.system;
  std::string header = banner.empty() ? "" : banner + "\n";
  header += fmt::format("gpudoc health — driver {}, CUDA {}; {} GPU(s)",
                        sys.driver_version.empty() ? "?" : sys.driver_version,
                        sys.cuda_driver_version.empty() ? "?" : sys.cuda_driver_version, node.gpus.size());
  if (!node.gpus.empty() && node.gpus[0].load.ran)
    header += fmt::format("; load: HBM copy for {:.1f} s", node.load_seconds);
  else if (!node.gpus.empty())
    header += fmt::format("; no load ({})", node.gpus[0].load.why_not);
  return header + "\n\n";
}

nlohmann::json no_gpu_health_json(const std::vector<health::CheckResult>& host_results, const core::Error& no_gpu) {
  nlohmann::json j = {{"status", "no_gpu"},
                      {"error",
                       {{"kind", core::to_string(no_gpu.kind())},
                        {"message", no_gpu.message()},
                        {"exit_code", core::exit_code(no_gpu.kind())}}},
                      {"gpudoc_version", core::kVersion}};
  j["checks"] = nlohmann::json::array();
  for (const auto& r : host_results) j["checks"].push_back(health::to_json(r));
  return j;
}

std::string health_gate_line(const std::vector<health::CheckResult>& results) {
  const std::string reason = health::gate_reason(results);
  if (!reason.empty()) return reason + "\n";
  int warned = 0;
  for (const auto& r : results) warned += r.status == health::Status::kWarn ? 1 : 0;
  return fmt::format("ok: {} checks, none failed ({} warnings; `gpudoc health` shows them)\n", results.size(), warned);
}

}  // namespace gpudoc::view
