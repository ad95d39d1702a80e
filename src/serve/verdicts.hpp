// gpudoc::serve verdicts — what `gpudoc serve` shows of the store: the last `gpudoc health` run and
// each baseline's last verdict, read (never written) from the same SQLite store the other commands
// keep, and turned into the snapshot's series and the dashboard's JSON.
//
//   auto v = serve::read_verdicts("/var/lib/gpudoc/gpudoc.db");   // Result<Verdicts>
//   snapshot.health = v->health; snapshot.baselines = v->baselines;
//   nlohmann::json j = serve::to_json(*v->health);
//
// A store that does not exist yet is no error (nothing was kept: no verdicts); a damaged or locked one
// is, with the store's message. Not thread-safe: each call opens the store (read-only) for itself.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "serve/exposition.hpp"
#include "store/database.hpp"

namespace gpudoc::serve {

struct Verdicts {
  std::optional<HealthSnapshot> health;
  std::vector<BaselineSeries> baselines;
  std::vector<nlohmann::json> health_checks;  // the last health run's checks as stored (for the dashboard)
};

// The health series of one stored "health" result (its payload is health::to_json's).
[[nodiscard]] HealthSnapshot health_of(const store::StoredResult& result);
// Each baseline's newest run (check, confirm or its golden record) as a verdict series.
[[nodiscard]] std::vector<BaselineSeries> baselines_of(store::Database& store);
// Both, from the store at `path`. Errors: the store's (kBadInput damaged, kEnvironment locked).
[[nodiscard]] core::Result<Verdicts> read_verdicts(const std::string& path);

[[nodiscard]] nlohmann::json to_json(const Verdicts& verdicts);

}  // namespace gpudoc::serve
