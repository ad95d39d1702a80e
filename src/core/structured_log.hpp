// gpudoc::core structured log — what a long-running command (gpudoc serve) says on stderr: when it
// starts, where it listens, what went wrong, when it stops; one line per record in one of three
// formats, chosen by --log-format:
//
//   text    the sentence a person reads, as gpudoc has always written it
//           gpudoc: warning: 0.0.0.0:9401 is reachable from other machines ...
//   logfmt  time=2026-01-02T03:04:05.678Z level=info msg="listening" address=127.0.0.1:9401 tls=false
//   json    {"time":"2026-01-02T03:04:05.678Z","level":"info","msg":"listening","address":"127.0.0.1:9401","tls":false}
//
//   core::LogSink log(core::LogFormat::kLogfmt);
//   log.write({.level = core::LogLevel::kInfo, .msg = "listening",
//              .fields = {{"address", where}, {"gpus", 8}}, .text = "serving 8 GPUs on ..."});
//
// Time is RFC 3339 in UTC to the millisecond; level is debug, info, warn or error. Every value is
// escaped for its format: in logfmt a value with a space, '=', '"', a control character or nothing
// at all is quoted with \" \\ \n \r \t and \u00XX escapes; in JSON every string is a JSON string
// with the same escapes; in both, C1 controls and U+2028/U+2029 are \u escapes too and a byte that
// is not valid UTF-8 becomes U+FFFD. The text format goes through core::terminal_safe. Keys are
// gpudoc's own ([a-z_]+). format_log_record is pure; LogSink writes whole lines under a lock.
#pragma once

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "core/log.hpp"
#include "core/result.hpp"

namespace gpudoc::core {

enum class LogFormat { kText, kLogfmt, kJson };

// "text", "logfmt" or "json". Errors: kUsage naming --log-format and the three choices.
[[nodiscard]] Result<LogFormat> parse_log_format(std::string_view text);
[[nodiscard]] std::string_view log_format_name(LogFormat format) noexcept;

struct LogField {
  std::string key;
  std::string value;
  bool bare = false;  // a number or true/false: written unquoted in JSON

  LogField(std::string k, std::string_view v) : key(std::move(k)), value(v) {}
  LogField(std::string k, const char* v) : key(std::move(k)), value(v) {}
  LogField(std::string k, const std::string& v) : key(std::move(k)), value(v) {}
  template <class T>
  requires std::is_arithmetic_v<T> LogField(std::string k, T v) : key(std::move(k)), bare(true) {
    if constexpr (std::is_same_v<T, bool>)
      value = v ? "true" : "false";
    else
      value = fmt::format("{}", v);
  }
};

struct LogRecord {
  LogLevel level = LogLevel::kInfo;
  std::int64_t unix_ns = 0;  // 0: LogSink::write stamps the wall clock
  std::string msg{};         // what happened, the same words every time ("listening", "stopped")
  std::vector<LogField> fields{};
  // The text format's sentence (without "gpudoc: " and the level); empty: msg, then the fields as
  // key=value.
  std::string text{};
};

// "2026-01-02T03:04:05.678Z".
[[nodiscard]] std::string rfc3339_utc(std::int64_t unix_ns);
// A value as logfmt writes it: bare when it can be, else quoted and escaped.
[[nodiscard]] std::string logfmt_value(std::string_view value);
// A JSON string literal, quotes included.
[[nodiscard]] std::string json_string(std::string_view value);
// One record as one line in `format`, '\n' included.
[[nodiscard]] std::string format_log_record(LogFormat format, const LogRecord& record);

// Writes records to a stream (stderr unless told), one whole line at a time, flushed. Thread-safe.
// Debug records only while core::log_level() is kDebug.
class LogSink {
 public:
  explicit LogSink(LogFormat format = LogFormat::kText, std::FILE* out = stderr) : format_(format), out_(out) {}
  void write(LogRecord record);
  [[nodiscard]] LogFormat format() const noexcept { return format_; }

 private:
  LogFormat format_;
  std::FILE* out_;
  std::mutex mu_;
};

}  // namespace gpudoc::core
