// gpudoc::store results — the record of the results table: one generic result (a health check, a
// guard decision...) with its kind, subject, time, machine, status and JSON payload.
// Database::add_result and results_since (store/database.hpp) write and read them; the health and
// guard history (store/health_history.hpp, store/guard_history.hpp) are built on them.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "store/records.hpp"

namespace gpudoc::store {

struct StoredResult {
  std::int64_t id = 0;
  std::string kind;
  std::string subject;
  std::int64_t time_unix_ns = 0;
  MachineContext machine;
  std::string status;
  nlohmann::json payload;
};

}  // namespace gpudoc::store
