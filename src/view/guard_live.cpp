#include "view/guard_live.hpp"

#include <fmt/format.h>

#include "core/text.hpp"

namespace gpudoc::view {

std::optional<std::string> guard_event_line(const nlohmann::json& e) {
  const std::string type = e.value("type", std::string());
  auto s = [&](const char* k) { return core::terminal_safe(e.value(k, std::string())); };
  if (type == "start")
    return fmt::format("guarding GPU(s) {} (horizon {:g} s){}; job channel {}", e["gpus"].dump(),
                       e.value("horizon_s", 5.0), e.value("dry_run", false) ? ", dry run: only logging" : "",
                       s("socket"));
  if (type == "decision")
    return fmt::format("GPU {}: level {} -> {}{}: {}", e.value("gpu", -1), e.value("previous_level", 0),
                       e.value("level", 0), e.value("rate_limited", false) ? " (rate limited: nothing sent)" : "",
                       s("reason"));
  if (type == "advice")
    return fmt::format("  advice {} to {}: {}{}", s("id"), s("job"), s("action"),
                       e.contains("factor") ? fmt::format(" {:g}", e.value("factor", 0.0)) : "");
  if (type == "ack")
    return fmt::format("  ack {} from {}: {} ({:.0f} ms from the sample)", s("id"), s("job"), s("status"),
                       e.value("latency_ms", 0.0));
  if (type == "ack_timeout") return fmt::format("  no ack for {} from {} by its deadline", s("id"), s("job"));
  if (type == "signal")
    return fmt::format("  {} to pid {}{} ({})", s("signal"), e.value("pid", 0),
                       e.contains("name") ? " " + s("name") : "", s("action"));
  if (type == "not_sent") return fmt::format("  {} not sent to {}: {}", s("action"), s("job"), s("why"));
  if (type == "job_joined")
    return fmt::format("job {} (pid {}, {}){}", s("job"), e.value("pid", 0), s("name"),
                       e.value("connected", false) ? " connected" : " started");
  if (type == "job_left") return fmt::format("job {} left ({})", s("job"), s("how"));
  if (type == "note" || type == "protocol_error") return s(type == "note" ? "message" : "error");
  if (type == "gpu_event") return fmt::format("GPU {}: {}", e.value("gpu", -1), s("event"));
  return std::nullopt;
}

}  // namespace gpudoc::view
