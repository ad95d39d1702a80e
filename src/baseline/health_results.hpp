// gpudoc::baseline health results — `gpudoc health` keeps each node check in the store (its
// generic results, store.hpp) with the node's machine context, and `gpudoc report` reads them back.
// Whether a result is kept (not a replay's, not fake GPUs') is the caller's decision.
//
//   auto at = baseline::keep_health_result(store_flag, node, health::to_json(node));   // Result<StoredAt>
//   auto rows = baseline::health_results_since(store_flag, now_ns - week_ns);          // oldest first
//
// Not thread-safe: each call opens the store (one connection) for itself.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "baseline/store.hpp"
#include "core/result.hpp"
#include "health/node.hpp"

namespace gpudoc::baseline {

struct StoredAt {
  std::string path;  // the store
  std::int64_t id = 0;
};

// Stores `payload` (the check as --json prints it) as a "health" result of this host, now, with
// the node's GPUs, driver and CUDA version and its worst status. The store at `path_flag`
// (default_store_path) is created when missing. Errors: the store's.
[[nodiscard]] core::Result<StoredAt> keep_health_result(const std::optional<std::string>& path_flag,
                                                        const health::NodeReport& node, const nlohmann::json& payload);

// The "health" results at or after `since_unix_ns`, oldest first. Errors: the store's (kBadInput
// when it does not exist: nothing is created by reading).
[[nodiscard]] core::Result<std::vector<StoredResult>> health_results_since(const std::optional<std::string>& path_flag,
                                                                           std::int64_t since_unix_ns);

}  // namespace gpudoc::baseline
