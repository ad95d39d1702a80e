#include "baseline/health_results.hpp"

#include "core/clock.hpp"
#include "core/host.hpp"

namespace gpudoc::baseline {

core::Result<StoredAt> keep_health_result(const std::optional<std::string>& path_flag, const health::NodeReport& node,
                                          const nlohmann::json& payload) {
  auto path = default_store_path(path_flag);
  if (!path) return path.error();
  auto store = Store::open(*path);
  if (!store) return store.error();
  MachineContext m;
  m.host = core::host_name();
  for (const auto& in : node.gpus) m.gpus.push_back(in.info.name);
  m.driver_version = node.system.driver_version;
  m.cuda_version = node.system.cuda_driver_version;
  const std::int64_t now_ns = core::SystemClock().unix_now_ns();
  auto id = store->add_result("health", m.host, now_ns, m, health::to_string(health::worst(node.results)), payload);
  if (!id) return id.error();
  return StoredAt{*path, *id};
}

core::Result<std::vector<StoredResult>> health_results_since(const std::optional<std::string>& path_flag,
                                                             std::int64_t since_unix_ns) {
  auto path = default_store_path(path_flag);
  if (!path) return path.error();
  auto store = Store::open(*path, {.create = false});
  if (!store) return store.error();
  return store->results_since("health", since_unix_ns);
}

}  // namespace gpudoc::baseline
