// Where a guard's events are kept besides the screen: the --log file (every event, guard/event_log.hpp)
// and the store (the decisions and actions, store/guard_history.hpp), each event marked with the
// backend when the GPUs are a replay's or fake ones.
//
//   auto records = guard::EventRecords::open({.log = "guard.jsonl", .store = std::nullopt});
//   records->keep(event);                 // from the session's sink
//   records->describe(summary);           // "log", "store", "run_id" for --json
//
// A log that cannot be opened is an error (asked for by name); a store that cannot be opened, or
// stops taking events, is a warning (core::log_warn) once, and the log keeps what it misses.
// Thread-safety: one EventRecords is used from one thread.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "guard/event_log.hpp"
#include "store/guard_history.hpp"

namespace gpudoc::guard {

struct RecordsOptions {
  std::optional<std::string> log{};    // --log FILE
  std::optional<std::string> store{};  // --store (default: store::default_store_path)
  bool no_store = false;
  std::string backend{};  // non-empty for a replay or fake GPUs: added to each event as "backend"
};

class EventRecords {
 public:
  // Errors: the log's (kIo naming the file).
  [[nodiscard]] static core::Result<EventRecords> open(const RecordsOptions& options);

  void keep(const nlohmann::json& event);
  // Adds "log", "store" and "run_id" (null where there is none) to `summary`.
  void describe(nlohmann::json& summary) const;
  void set_backend(std::string backend) { backend_ = std::move(backend); }

 private:
  EventRecords() = default;
  std::optional<EventLog> log_;
  std::optional<std::string> log_path_;
  std::optional<store::GuardKeeper> keeper_;
  bool store_failed_ = false;
  std::string backend_;
};

}  // namespace gpudoc::guard
