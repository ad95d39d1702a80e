// gpudoc::store health history — `gpudoc health` keeps each node check in the store (its generic
// results, kind "health", store/results.hpp) with the node's machine context, and `gpudoc report`
// and `gpudoc serve` read them back. health::keep_health_result (health/history.hpp) turns a node
// check into the machine and status kept here; whether a result is kept at all (not a replay's,
// not fake GPUs') is the caller's decision.
//
//   auto at = store::keep_health_result(store_flag, machine, "warn", payload);   // Result<StoredAt>
//   auto rows = store::health_results_since(store_flag, now_ns - week_ns);       // oldest first
//
// Not thread-safe: each call opens the store (one connection) for itself.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "store/records.hpp"
#include "store/results.hpp"

namespace gpudoc::store {

inline constexpr const char* kHealthKind = "health";

struct StoredAt {
  std::string path;  // the store
  std::int64_t id = 0;
};

// Stores `payload` (the check as --json prints it) as a "health" result of `machine`'s host, now,
// with its worst `status`. The store at `path_flag` (default_store_path) is created when missing.
// Errors: the store's.
[[nodiscard]] core::Result<StoredAt> keep_health_result(const std::optional<std::string>& path_flag,
                                                        const MachineContext& machine, const std::string& status,
                                                        const nlohmann::json& payload);

// The "health" results at or after `since_unix_ns`, oldest first. Errors: the store's (kBadInput
// when it does not exist: nothing is created by reading).
[[nodiscard]] core::Result<std::vector<StoredResult>> health_results_since(const std::optional<std::string>& path_flag,
                                                                           std::int64_t since_unix_ns);

}  // namespace gpudoc::store
