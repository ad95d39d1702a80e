#include "core/log.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "core/text.hpp"

namespace gpudoc::core {
namespace {

LogLevel level_from_env() {
  const char* v = std::getenv("GPUDOC_LOG");
  if (v == nullptr) return LogLevel::kWarn;
  if (std::strcmp(v, "debug") == 0) return LogLevel::kDebug;
  if (std::strcmp(v, "info") == 0) return LogLevel::kInfo;
  if (std::strcmp(v, "error") == 0) return LogLevel::kError;
  if (std::strcmp(v, "off") == 0) return LogLevel::kOff;
  return LogLevel::kWarn;
}

std::atomic<LogLevel>& level_ref() {
  static std::atomic<LogLevel> level{level_from_env()};
  return level;
}

std::mutex& log_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace

void set_log_level(LogLevel level) { level_ref().store(level); }
LogLevel log_level() { return level_ref().load(std::memory_order_relaxed); }

void log_line(LogLevel level, std::string_view message) {
  const char* tag = level == LogLevel::kDebug  ? "debug"
                    : level == LogLevel::kInfo ? "info"
                    : level == LogLevel::kWarn ? "warning"
                                               : "error";
  // A message may quote a trace, a process or a file: shown through terminal_safe like all such text.
  std::string line = fmt::format("gpudoc: {}: {}\n", tag, terminal_safe(message, Newlines::kKeep));
  std::lock_guard<std::mutex> lock(log_mutex());
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace gpudoc::core
