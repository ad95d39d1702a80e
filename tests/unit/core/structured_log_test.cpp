// The structured log's three formats: exact lines for a fixed time, and every value escaped.
#include "core/structured_log.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>

namespace gpudoc::core {
namespace {

// 2026-01-02T03:04:05.678Z
constexpr std::int64_t kTime = 1767323045678000000;

LogRecord listening() {
  return LogRecord{.level = LogLevel::kInfo,
                   .unix_ns = kTime,
                   .msg = "listening",
                   .fields = {{"address", "127.0.0.1:9401"}, {"gpus", 8}, {"tls", false}},
                   .text = "serving 8 GPUs on http://127.0.0.1:9401/"};
}

TEST(StructuredLog, TimeIsRfc3339InUtcToTheMillisecond) {
  EXPECT_EQ(rfc3339_utc(kTime), "2026-01-02T03:04:05.678Z");
  EXPECT_EQ(rfc3339_utc(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(rfc3339_utc(-1), "1969-12-31T23:59:59.999Z");
}

TEST(StructuredLog, TheThreeFormatsOfOneRecord) {
  EXPECT_EQ(format_log_record(LogFormat::kText, listening()), "gpudoc: serving 8 GPUs on http://127.0.0.1:9401/\n");
  EXPECT_EQ(format_log_record(LogFormat::kLogfmt, listening()),
            "time=2026-01-02T03:04:05.678Z level=info msg=\"listening\" address=127.0.0.1:9401 gpus=8 tls=false\n");
  EXPECT_EQ(format_log_record(LogFormat::kJson, listening()),
            "{\"time\":\"2026-01-02T03:04:05.678Z\",\"level\":\"info\",\"msg\":\"listening\","
            "\"address\":\"127.0.0.1:9401\",\"gpus\":8,\"tls\":false}\n");
}

TEST(StructuredLog, TextWithoutASentenceIsTheMessageAndItsFields) {
  LogRecord r{.level = LogLevel::kWarn, .unix_ns = kTime, .msg = "web config", .fields = {{"file", "/etc/a b"}}};
  EXPECT_EQ(format_log_record(LogFormat::kText, r), "gpudoc: warning: web config file=\"/etc/a b\"\n");
  r.level = LogLevel::kError;
  r.text = "cannot \x1b]0;x\x07 read";
  EXPECT_EQ(format_log_record(LogFormat::kText, r), "gpudoc: error: cannot \\x1b]0;x\\x07 read\n");
}

TEST(StructuredLog, LogfmtQuotesAndEscapesWhatNeedsIt) {
  EXPECT_EQ(logfmt_value("plain"), "plain");
  EXPECT_EQ(logfmt_value(""), "\"\"");
  EXPECT_EQ(logfmt_value("a b"), "\"a b\"");
  EXPECT_EQ(logfmt_value("k=v"), "\"k=v\"");
  EXPECT_EQ(logfmt_value("say \"hi\""), "\"say \\\"hi\\\"\"");
  EXPECT_EQ(logfmt_value("back\\slash"), "\"back\\\\slash\"");
  EXPECT_EQ(logfmt_value("two\nlines\r\tx"), "\"two\\nlines\\r\\tx\"");
  EXPECT_EQ(logfmt_value("esc\x1b[2J"), "\"esc\\u001b[2J\"");
  EXPECT_EQ(logfmt_value("del\x7f"), "\"del\\u007f\"");
  EXPECT_EQ(logfmt_value("csi\xc2\x9b"), "\"csi\\u009b\"");
  EXPECT_EQ(logfmt_value("bad\xff"), "\"bad\xef\xbf\xbd\"");   // U+FFFD
  EXPECT_EQ(logfmt_value("ls\xe2\x80\xa8"), "\"ls\\u2028\"");  // a line separator
  EXPECT_EQ(logfmt_value("caf\xc3\xa9"), "\"caf\xc3\xa9\"");   // other UTF-8 kept (quoted)
  // a forged record cannot follow: the newline and the quotes are escapes
  LogRecord r{.unix_ns = kTime, .msg = "x\" level=error msg=\"forged", .fields = {{"client", "a\nlevel=error"}}};
  const std::string line = format_log_record(LogFormat::kLogfmt, r);
  EXPECT_EQ(line,
            "time=2026-01-02T03:04:05.678Z level=info msg=\"x\\\" level=error msg=\\\"forged\" "
            "client=\"a\\nlevel=error\"\n");
}

TEST(StructuredLog, JsonIsOneValidObjectPerLineWhateverTheValues) {
  const std::string nasty = std::string("q\"b\\n\nc\x01") + "\xff" + "\xe2\x80\xa9" + "\xc2\x85";
  LogRecord r{.level = LogLevel::kError, .unix_ns = kTime, .msg = nasty, .fields = {{"file", nasty}, {"n", 1.5}}};
  const std::string line = format_log_record(LogFormat::kJson, r);
  ASSERT_TRUE(line.ends_with("}\n"));
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  EXPECT_EQ(json_string(nasty), "\"q\\\"b\\\\n\\nc\\u0001\xef\xbf\xbd\\u2029\\u0085\"");
  const auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["level"], "error");
  EXPECT_EQ(j["msg"], "q\"b\\n\nc\x01\xef\xbf\xbd\xe2\x80\xa9\xc2\x85");
  EXPECT_EQ(j["file"], j["msg"]);
  EXPECT_EQ(j["n"], 1.5);
  EXPECT_EQ(j["time"], "2026-01-02T03:04:05.678Z");
}

TEST(StructuredLog, FormatNames) {
  EXPECT_EQ(*parse_log_format("logfmt"), LogFormat::kLogfmt);
  EXPECT_EQ(*parse_log_format("json"), LogFormat::kJson);
  EXPECT_EQ(*parse_log_format("text"), LogFormat::kText);
  const auto bad = parse_log_format("yaml");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind(), ErrorKind::kUsage);
  EXPECT_EQ(bad.error().message(), "--log-format yaml: expected text, logfmt or json");
  EXPECT_EQ(log_format_name(LogFormat::kJson), "json");
}

TEST(StructuredLog, TheSinkWritesWholeStampedLines) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  const LogLevel before = log_level();
  set_log_level(LogLevel::kWarn);
  LogSink sink(LogFormat::kJson, f);
  sink.write({.msg = "stopped", .fields = {{"scrapes", 3}}});
  sink.write({.level = LogLevel::kDebug, .msg = "shown only at GPUDOC_LOG=debug"});
  set_log_level(before);
  std::rewind(f);
  char buf[512] = {};
  const std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  const std::string out(buf, n);
  ASSERT_EQ(out.find('\n'), out.size() - 1) << out;  // one line: the debug record is not written
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["msg"], "stopped");
  EXPECT_EQ(j["scrapes"], 3);
  EXPECT_EQ(j["time"].get<std::string>().size(), std::string("2026-01-02T03:04:05.678Z").size());
  EXPECT_TRUE(j["time"].get<std::string>().ends_with("Z"));
}

}  // namespace
}  // namespace gpudoc::core
