#include "health/history.hpp"

#include "core/host.hpp"

namespace gpudoc::health {

core::Result<store::StoredAt> keep_health_result(const std::optional<std::string>& path_flag, const NodeReport& node,
                                                 const nlohmann::json& payload) {
  store::MachineContext m;
  m.host = core::host_name();
  for (const auto& in : node.gpus) m.gpus.push_back(in.info.name);
  m.driver_version = node.system.driver_version;
  m.cuda_version = node.system.cuda_driver_version;
  return store::keep_health_result(path_flag, m, to_string(worst(node.results)), payload);
}

}  // namespace gpudoc::health
