// The guard's event log (`gpudoc guard --log FILE`): every event the session emits, one JSON line
// each, appended and written at once, so a crash loses nothing written before it.
//
//   auto log = guard::EventLog::open("guard.jsonl");   // Result<EventLog>
//   if (!log) return log.error();                      // kIo "--log guard.jsonl: Permission denied"
//   log->write({{"type", "start"}, {"gpus", {0}}});
//
// The file is opened O_APPEND (several guards may share one), created 0600, and never through a
// symbolic link. A write that fails is warned about once (core::log_warn); the session goes on, and
// later events are still tried (a full disk may get room again). Strings that are not valid UTF-8 are written with
// U+FFFD in their place. Thread-safety: one EventLog is written from one thread at a time.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/result.hpp"

namespace gpudoc::guard {

class EventLog {
 public:
  [[nodiscard]] static core::Result<EventLog> open(const std::string& path);
  EventLog(EventLog&& o) noexcept;
  EventLog& operator=(EventLog&&) = delete;
  EventLog(const EventLog&) = delete;
  ~EventLog();
  // Appends `event` as one line; retries a write interrupted by a signal.
  void write(const nlohmann::json& event);
  // Whether a write has failed.
  [[nodiscard]] bool failed() const { return failed_; }

 private:
  explicit EventLog(int fd) : fd_(fd) {}
  int fd_ = -1;
  bool failed_ = false;
};

}  // namespace gpudoc::guard
