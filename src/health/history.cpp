#include "health/history.hpp"

#include "core/host.hpp"
#include "core/log.hpp"

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

void keep_check(const std::optional<std::string>& path_flag, bool no_store, const std::string& not_this_node,
                const NodeReport& node, nlohmann::json& payload) {
  if (no_store) return;
  if (!not_this_node.empty())
    return core::log_warn("not stored: the results of the {} backend are not this node's", not_this_node);
  if (auto at = keep_health_result(path_flag, node, payload))
    payload["stored"] = {{"path", at->path}, {"id", at->id}};
  else
    core::log_warn("not stored: {}", at.error().message());
}

}  // namespace gpudoc::health
