// gpudoc::store guard history — `gpudoc guard` keeps every decision and action it took (a level
// change, an advice, an acknowledgement, a signal, a missed deadline) in the store's generic
// results (kind "guard", store/results.hpp), and `gpudoc report` reads them back.
//
//   auto keeper = store::GuardKeeper::open(store_flag);     // Result<GuardKeeper>: one connection
//   keeper->keep(event);                                    // only the kinds kept_guard_event() names
//   auto rows = store::guard_results_since(store_flag, now_ns - week_ns);   // oldest first
//
// Not thread-safe: one GuardKeeper is used from one thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "store/database.hpp"

namespace gpudoc::store {

// The guard's event types kept in the store: decision, advice, ack, ack_timeout, signal, not_sent,
// job_joined, start, end. Reports (the job's figures) and notes stay in the log file.
[[nodiscard]] bool kept_guard_event(const std::string& type);

class GuardKeeper {
 public:
  // Opens (creating) the store at `path_flag` (default_store_path). Errors: the store's.
  [[nodiscard]] static core::Result<GuardKeeper> open(const std::optional<std::string>& path_flag);
  // Stores `event` when kept_guard_event(event["type"]); the subject is the guard's run id
  // ("guard-<host>-<pid>-<start>") so `report` groups one run's rows. Errors: the store's.
  [[nodiscard]] core::Status keep(const nlohmann::json& event);
  [[nodiscard]] const std::string& path() const { return store_.path(); }
  [[nodiscard]] const std::string& run_id() const { return run_id_; }

 private:
  GuardKeeper(Database store, std::string run_id, MachineContext machine)
      : store_(std::move(store)), run_id_(std::move(run_id)), machine_(std::move(machine)) {}
  Database store_;
  std::string run_id_;
  MachineContext machine_;
};

// The "guard" results at or after `since_unix_ns`, oldest first. Errors: the store's (kBadInput
// when it does not exist: nothing is created by reading).
[[nodiscard]] core::Result<std::vector<StoredResult>> guard_results_since(const std::optional<std::string>& path_flag,
                                                                          std::int64_t since_unix_ns);

}  // namespace gpudoc::store
