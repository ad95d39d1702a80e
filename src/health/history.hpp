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

}  // namespace gpudoc::health
