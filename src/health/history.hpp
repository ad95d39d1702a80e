// gpudoc::health history — a node check kept in the store's health history
// (store/health_history.hpp) with the node's machine context: this host, its GPUs, driver and
// CUDA version, and the check's worst status. Whether a check is kept (not a replay's, not fake
// GPUs') is the caller's decision.
//
//   auto at = health::keep_health_result(store_flag, node, health::to_json(node));   // Result<StoredAt>
//
// Not thread-safe: each call opens the store (one connection) for itself.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "health/node.hpp"
#include "store/health_history.hpp"

namespace gpudoc::health {

// Stores `payload` (the check as --json prints it) as a "health" result of this host, now. The
// store at `path_flag` (store::default_store_path) is created when missing. Errors: the store's.
[[nodiscard]] core::Result<store::StoredAt> keep_health_result(const std::optional<std::string>& path_flag,
                                                               const NodeReport& node, const nlohmann::json& payload);

// What `gpudoc health` does with a check: keeps it (keep_health_result) unless `no_store`, or unless
// `not_this_node` names the backend of GPUs that are not this node's (a replay, fake GPUs), and
// adds "stored": {"path", "id"} to `payload` when it did. What is not kept is warned about
// (core::log_warn): the check's result stands either way.
void keep_check(const std::optional<std::string>& path_flag, bool no_store, const std::string& not_this_node,
                const NodeReport& node, nlohmann::json& payload);

}  // namespace gpudoc::health
