#include "findings/finding.hpp"

#include <stdexcept>
#include <string>

namespace gpudoc::findings {

const char* to_string(Severity s) noexcept {
  switch (s) {
    case Severity::kInfo: return "info";
    case Severity::kWarning: return "warning";
    case Severity::kCritical: return "critical";
  }
  return "info";
}

std::optional<Severity> parse_severity(std::string_view s) noexcept {
  if (s == "info") return Severity::kInfo;
  if (s == "warning") return Severity::kWarning;
  if (s == "critical") return Severity::kCritical;
  return std::nullopt;
}

const CatalogEntry* find_entry(std::string_view id) {
  for (const CatalogEntry& e : catalog())
    if (e.id == id) return &e;
  return nullptr;
}

Finding make_finding(std::string_view id, Severity severity) {
  const CatalogEntry* e = find_entry(id);
  if (e == nullptr) throw std::logic_error("finding id not in the catalog: " + std::string(id));
  Finding f;
  f.id = std::string(e->id);
  f.severity = severity;
  for (std::string_view s : e->next_steps) f.next_steps.emplace_back(s);
  return f;
}

std::string next_step(std::string_view id, std::size_t index,
                      std::initializer_list<std::pair<std::string_view, std::string>> values) {
  const CatalogEntry* e = find_entry(id);
  if (e == nullptr || index >= e->next_steps.size())
    throw std::logic_error("no next step " + std::to_string(index) + " for catalog id " + std::string(id));
  std::string step(e->next_steps[index]);
  for (const auto& [key, value] : values) {
    const std::string token = "{" + std::string(key) + "}";
    for (std::size_t p = step.find(token); p != std::string::npos; p = step.find(token, p + value.size()))
      step.replace(p, token.size(), value);
  }
  return step;
}

nlohmann::json to_json(const Finding& f) {
  nlohmann::json j;
  j["id"] = f.id;
  j["severity"] = to_string(f.severity);
  if (const CatalogEntry* e = find_entry(f.id)) j["title"] = std::string(e->title);
  j["gpus"] = f.gpus;
  j["window"] = {{"start_s", f.window.start_s}, {"end_s", f.window.end_s}};
  j["confidence"] = f.confidence;
  j["message"] = f.message;
  nlohmann::json ev = nlohmann::json::array();
  for (const Evidence& e : f.evidence)
    ev.push_back({{"name", e.name}, {"value", e.value}, {"unit", e.unit}, {"how", e.how}});
  j["evidence"] = std::move(ev);
  j["next_steps"] = f.next_steps;
  j["caveats"] = f.caveats;
  j["details"] = f.details;
  return j;
}

nlohmann::json to_json(const CatalogEntry& e) {
  nlohmann::json steps = nlohmann::json::array();
  for (std::string_view s : e.next_steps) steps.push_back(std::string(s));
  return {{"id", std::string(e.id)},
          {"area", std::string(e.area)},
          {"title", std::string(e.title)},
          {"meaning", std::string(e.meaning)},
          {"next_steps", std::move(steps)}};
}

}  // namespace gpudoc::findings
