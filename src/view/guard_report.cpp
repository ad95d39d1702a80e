#include "view/guard_report.hpp"

#include <fmt/format.h>

#include <map>

#include "core/text.hpp"

namespace gpudoc::view {
namespace {

std::string text_of(const nlohmann::json& e, const char* key) {
  auto it = e.find(key);
  if (it == e.end() || it->is_null()) return {};
  return core::terminal_safe(it->is_string() ? it->get<std::string>()
                                             : it->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

double number_of(const nlohmann::json& e, const char* key) {
  auto it = e.find(key);
  return it != e.end() && it->is_number() ? it->get<double>() : 0.0;
}

}  // namespace

std::string guard_event_summary(const nlohmann::json& e) {
  const std::string type = text_of(e, "type");
  if (type == "decision") {
    std::string s =
        fmt::format("level {} -> {}: {}", text_of(e, "previous_level"), text_of(e, "level"), text_of(e, "reason"));
    if (e.value("rate_limited", false)) s += " (rate limited: nothing sent)";
    if (e.value("dry_run", false)) s += " (dry run)";
    if (e.contains("suggestion")) s += "; " + text_of(e, "suggestion");
    return s;
  }
  if (type == "advice")
    return fmt::format("advice {} to {}: {}{}", text_of(e, "id"), text_of(e, "job"), text_of(e, "action"),
                       e.contains("factor") ? " " + text_of(e, "factor") : "");
  if (type == "ack")
    return fmt::format("ack {} from {}: {}, {:.0f} ms from the sample", text_of(e, "id"), text_of(e, "job"),
                       text_of(e, "status"), number_of(e, "latency_ms"));
  if (type == "ack_timeout") return fmt::format("no ack for {} by its deadline", text_of(e, "id"));
  if (type == "signal")
    return fmt::format("{} to pid {} {} ({}){}", text_of(e, "signal"), text_of(e, "pid"), text_of(e, "name"),
                       text_of(e, "action"), e.value("ok", true) ? "" : ": failed " + text_of(e, "error"));
  if (type == "not_sent")
    return fmt::format("{} not sent to {}: {}", text_of(e, "action"), text_of(e, "job"), text_of(e, "why"));
  if (type == "job_joined")
    return fmt::format("job {} pid {} {}{}", text_of(e, "job"), text_of(e, "pid"), text_of(e, "name"),
                       e.value("connected", false) ? " connected" : "");
  if (type == "start")
    return fmt::format("guard started on GPU(s) {}{}{}", text_of(e, "gpus"),
                       e.value("dry_run", false) ? ", dry run" : "",
                       e.contains("backend") ? ", backend " + text_of(e, "backend") : "");
  if (type == "end")
    return fmt::format("guard ended ({}): {} decisions, {} advice, {} acks, {} signals, highest level {}",
                       text_of(e, "reason"), text_of(e, "decisions"), text_of(e, "advice"), text_of(e, "acks"),
                       text_of(e, "signals"), text_of(e, "max_level"));
  return type;
}

std::string render_guard_events_text(const std::vector<store::StoredResult>& rows) {
  if (rows.empty()) return "No guard decisions stored in that span (gpudoc guard keeps them).\n";
  std::vector<std::string> order;
  std::map<std::string, std::vector<const store::StoredResult*>> runs;
  for (const auto& r : rows) {
    if (runs.find(r.subject) == runs.end()) order.push_back(r.subject);
    runs[r.subject].push_back(&r);
  }
  std::string out;
  for (const std::string& run : order) {
    const auto& events = runs[run];
    out += fmt::format("Guard run {} on {}\n", core::terminal_safe(run),
                       core::terminal_safe(events.front()->machine.host));
    std::vector<std::vector<std::string>> table = {{"time (UTC)", "GPU", "event", "what"}};
    for (const auto* r : events)
      table.push_back({core::utc_seconds_text(r->time_unix_ns), text_of(r->payload, "gpu"),
                       core::terminal_safe(r->status), guard_event_summary(r->payload)});
    out += core::render_table(table) + "\n";
  }
  return out;
}

nlohmann::json guard_events_json(const std::vector<store::StoredResult>& rows) {
  nlohmann::json runs = nlohmann::json::array();
  std::map<std::string, std::size_t> index;
  for (const auto& r : rows) {
    auto it = index.find(r.subject);
    if (it == index.end()) {
      it = index.emplace(r.subject, runs.size()).first;
      runs.push_back({{"run", r.subject}, {"host", r.machine.host}, {"events", nlohmann::json::array()}});
    }
    nlohmann::json e = r.payload;
    e["stored_unix_ns"] = r.time_unix_ns;
    runs[it->second]["events"].push_back(std::move(e));
  }
  return {{"runs", runs}};
}

}  // namespace gpudoc::view
