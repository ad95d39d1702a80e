#include "core/structured_log.hpp"

#include <time.h>

#include <chrono>
#include <iterator>

#include "core/text.hpp"
#include "core/utf8.hpp"

namespace gpudoc::core {
namespace {

std::string_view level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    default: return "error";
  }
}

// The escapes logfmt's quoted values and JSON strings share: \" \\ \n \r \t, \u00XX for every
// other C0 control, DEL and the C1 controls, \u2028 and \u2029 (line breaks to JavaScript), and
// U+FFFD for each byte that is not valid UTF-8. `out` gets the text without quotes.
void append_escaped(std::string& out, std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t n = utf8_sequence_length(s, i);
    if (n == 0) {
      out += "\uFFFD";
      ++i;
      continue;
    }
    unsigned code = c;
    if (n == 2) code = ((c & 0x1Fu) << 6) | (static_cast<unsigned char>(s[i + 1]) & 0x3Fu);
    const bool line_separator = n == 3 && c == 0xE2 && s[i + 1] == '\x80' && (s[i + 2] == '\xA8' || s[i + 2] == '\xA9');
    if (line_separator) {
      out += s[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (code < 0x20 || code == 0x7F || (n == 2 && code >= 0x80 && code <= 0x9F)) {
      fmt::format_to(std::back_inserter(out), "\\u{:04x}", code);
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
}

void append_text_fields(std::string& out, const std::vector<LogField>& fields) {
  for (const auto& f : fields) {
    out += ' ';
    out += f.key;
    out += '=';
    out += logfmt_value(f.value);
  }
}

std::string text_line(const LogRecord& r) {
  std::string body = r.text;
  if (body.empty()) {
    body = r.msg;
    append_text_fields(body, r.fields);
  }
  const std::string_view tag = r.level == LogLevel::kWarn    ? "warning: "
                               : r.level == LogLevel::kError ? "error: "
                               : r.level == LogLevel::kDebug ? "debug: "
                                                             : "";
  // A sentence may quote a file name, a host or a client: shown through terminal_safe like all such text.
  return fmt::format("gpudoc: {}{}\n", tag, terminal_safe(body, Newlines::kKeep));
}

std::string logfmt_line(const LogRecord& r) {
  std::string out = "time=" + rfc3339_utc(r.unix_ns);
  out += " level=";
  out += level_name(r.level);
  out += " msg=";
  // msg always quoted, as Go's logfmt loggers do for text
  out += '"';
  append_escaped(out, r.msg);
  out += '"';
  append_text_fields(out, r.fields);
  out += '\n';
  return out;
}

std::string json_line(const LogRecord& r) {
  std::string out = "{\"time\":\"" + rfc3339_utc(r.unix_ns) + "\",\"level\":\"";
  out += level_name(r.level);
  out += "\",\"msg\":";
  out += json_string(r.msg);
  for (const auto& f : r.fields) {
    out += ',';
    out += json_string(f.key);
    out += ':';
    out += f.bare ? f.value : json_string(f.value);
  }
  out += "}\n";
  return out;
}

}  // namespace

Result<LogFormat> parse_log_format(std::string_view text) {
  if (text == "text") return LogFormat::kText;
  if (text == "logfmt") return LogFormat::kLogfmt;
  if (text == "json") return LogFormat::kJson;
  return Error(ErrorKind::kUsage, fmt::format("--log-format {}: expected text, logfmt or json", terminal_safe(text)));
}

std::string_view log_format_name(LogFormat format) noexcept {
  switch (format) {
    case LogFormat::kLogfmt: return "logfmt";
    case LogFormat::kJson: return "json";
    default: return "text";
  }
}

std::string rfc3339_utc(std::int64_t unix_ns) {
  std::int64_t seconds = unix_ns / 1'000'000'000;
  std::int64_t ns = unix_ns % 1'000'000'000;
  if (ns < 0) {
    ns += 1'000'000'000;
    --seconds;
  }
  const auto t = static_cast<time_t>(seconds);
  tm utc{};
  ::gmtime_r(&t, &utc);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday,
                     utc.tm_hour, utc.tm_min, utc.tm_sec, ns / 1'000'000);
}

std::string logfmt_value(std::string_view value) {
  bool bare = !value.empty();
  for (char ch : value) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= ' ' || c == '=' || c == '"' || c == '\\' || c >= 0x7F) bare = false;
  }
  if (bare) return std::string(value);
  std::string out = "\"";
  append_escaped(out, value);
  out += '"';
  return out;
}

std::string json_string(std::string_view value) {
  std::string out = "\"";
  append_escaped(out, value);
  out += '"';
  return out;
}

std::string format_log_record(LogFormat format, const LogRecord& record) {
  switch (format) {
    case LogFormat::kLogfmt: return logfmt_line(record);
    case LogFormat::kJson: return json_line(record);
    default: return text_line(record);
  }
}

void LogSink::write(LogRecord record) {
  if (record.level == LogLevel::kDebug && log_level() > LogLevel::kDebug) return;
  if (record.unix_ns == 0)
    record.unix_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
  const std::string line = format_log_record(format_, record);
  std::lock_guard lock(mu_);
  std::fwrite(line.data(), 1, line.size(), out_);
  std::fflush(out_);
}

}  // namespace gpudoc::core
