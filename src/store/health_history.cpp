#include "store/health_history.hpp"

#include "core/clock.hpp"
#include "store/database.hpp"

namespace gpudoc::store {

core::Result<StoredAt> keep_health_result(const std::optional<std::string>& path_flag, const MachineContext& machine,
                                          const std::string& status, const nlohmann::json& payload) {
  auto path = default_store_path(path_flag);
  if (!path) return path.error();
  auto db = Database::open(*path);
  if (!db) return db.error();
  const std::int64_t now_ns = core::SystemClock().unix_now_ns();
  auto id = db->add_result(kHealthKind, machine.host, now_ns, machine, status, payload);
  if (!id) return id.error();
  return StoredAt{*path, *id};
}

core::Result<std::vector<StoredResult>> health_results_since(const std::optional<std::string>& path_flag,
                                                             std::int64_t since_unix_ns) {
  auto path = default_store_path(path_flag);
  if (!path) return path.error();
  auto db = Database::open(*path, {.create = false});
  if (!db) return db.error();
  return db->results_since(kHealthKind, since_unix_ns);
}

}  // namespace gpudoc::store
