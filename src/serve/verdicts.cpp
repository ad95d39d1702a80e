#include "serve/verdicts.hpp"

#include <filesystem>

#include "core/clock.hpp"

namespace gpudoc::serve {
namespace {

// How far back the last health run is looked for: an older one says nothing about the node now.
constexpr std::int64_t kHealthLookbackNs = 30LL * 86400 * 1'000'000'000;

std::string string_field(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

HealthSnapshot health_of(const store::StoredResult& result) {
  HealthSnapshot h;
  h.time_unix_ns = result.time_unix_ns;
  h.status = result.status;
  const auto checks = result.payload.find("checks");
  if (checks == result.payload.end() || !checks->is_array()) return h;
  for (const auto& c : *checks) {
    if (!c.is_object()) continue;
    HealthCheckSeries s{.check = string_field(c, "check"), .status = string_field(c, "status"), .gpu = std::nullopt};
    if (s.check.empty()) continue;
    if (const auto g = c.find("gpu"); g != c.end() && g->is_number_integer()) s.gpu = g->get<int>();
    h.checks.push_back(std::move(s));
  }
  return h;
}

std::vector<BaselineSeries> baselines_of(store::Database& store) {
  std::vector<BaselineSeries> out;
  auto list = store.list_baselines();
  if (!list) return out;
  for (const auto& b : *list) {
    auto runs = store.runs_of(b.name, 1);
    if (!runs || runs->empty()) continue;
    const auto& last = runs->back();
    // A golden record has no verdict of its own: "recorded" until a check runs.
    std::string verdict = last.verdict.empty() ? (last.role == "record" ? "recorded" : "unknown") : last.verdict;
    out.push_back({.name = b.name, .verdict = std::move(verdict), .time_unix_ns = last.time_unix_ns});
  }
  return out;
}

core::Result<Verdicts> read_verdicts(const std::string& path) {
  Verdicts v;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return v;  // nothing kept yet
  auto store = store::Database::open(path, {.create = false, .read_only = true});
  if (!store) return store.error();
  core::SystemClock clock;
  auto health = store->results_since("health", clock.unix_now_ns() - kHealthLookbackNs);
  if (!health) return health.error();
  if (!health->empty()) {
    v.health = health_of(health->back());
    if (const auto c = health->back().payload.find("checks"); c != health->back().payload.end() && c->is_array())
      for (const auto& check : *c)
        if (check.is_object()) v.health_checks.push_back(check);
  }
  v.baselines = baselines_of(*store);
  return v;
}

nlohmann::json to_json(const Verdicts& verdicts) {
  nlohmann::json j;
  if (verdicts.health) {
    nlohmann::json checks = nlohmann::json::array();
    for (const auto& c : verdicts.health_checks)
      checks.push_back({{"check", string_field(c, "check")},
                        {"status", string_field(c, "status")},
                        {"gpu", c.contains("gpu") && c["gpu"].is_number_integer() ? c["gpu"] : nlohmann::json(nullptr)},
                        {"detail", string_field(c, "evidence")},
                        {"next_step", string_field(c, "next_step")}});
    j["health"] = {
        {"time_unix_ns", verdicts.health->time_unix_ns}, {"status", verdicts.health->status}, {"checks", checks}};
  } else {
    j["health"] = nullptr;
  }
  j["baselines"] = nlohmann::json::array();
  for (const auto& b : verdicts.baselines)
    j["baselines"].push_back({{"name", b.name}, {"verdict", b.verdict}, {"time_unix_ns", b.time_unix_ns}});
  return j;
}

}  // namespace gpudoc::serve
