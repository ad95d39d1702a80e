// gpudoc::core logging — one line per message on stderr, never on stdout (stdout is for results
// and --json). A message is written through core::terminal_safe (newlines kept): what it quotes
// from a trace, a process or a file cannot drive the terminal. Thread-safe.
//
//   core::log_warn("GPU {} answered NOT_SUPPORTED for GPM; not polling it again", gpu);
//
// Level from GPUDOC_LOG=debug|info|warn|error (default warn) or set_log_level().
#pragma once

#include <fmt/format.h>

#include <string_view>

namespace gpudoc::core {

enum class LogLevel { kDebug, kInfo, kWarn, kError, kOff };

void set_log_level(LogLevel level);
[[nodiscard]] LogLevel log_level();
void log_line(LogLevel level, std::string_view message);

template <class... Args>
void log_debug(fmt::format_string<Args...> f, Args&&... args) {
  if (log_level() <= LogLevel::kDebug) log_line(LogLevel::kDebug, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void log_info(fmt::format_string<Args...> f, Args&&... args) {
  if (log_level() <= LogLevel::kInfo) log_line(LogLevel::kInfo, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void log_warn(fmt::format_string<Args...> f, Args&&... args) {
  if (log_level() <= LogLevel::kWarn) log_line(LogLevel::kWarn, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void log_error(fmt::format_string<Args...> f, Args&&... args) {
  if (log_level() <= LogLevel::kError) log_line(LogLevel::kError, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace gpudoc::core
