#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "telemetry/trace.hpp"
#include "telemetry/trace_line.hpp"
#include "trace_test_util.hpp"

namespace gpudoc::telemetry {
namespace {

using gpu::Metric;
using testing::header_line;

const std::string kHeader = header_line(2);

core::Result<Trace> parse(const std::string& content) { return parse_trace(content, "run.jsonl"); }

// The exact message of a rejected trace (and that it is kBadInput).
std::string rejection(const std::string& content) {
  auto t = parse(content);
  if (t.ok()) return "<accepted>";
  EXPECT_EQ(t.error().kind(), core::ErrorKind::kBadInput) << t.error().message();
  return t.error().message();
}

TEST(TraceReader, ReadsAMinimalTrace) {
  auto t = parse(kHeader + R"({"type":"sample","t":0.5,"gpu":1,"power_watts":300})"
                           "\n");
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->gpus.size(), 2u);
  EXPECT_EQ(t->gpus[1].metric(Metric::kPowerWatts).v, std::vector<double>{300});
  EXPECT_FALSE(t->end);  // no end line: valid, not closed cleanly
  EXPECT_DOUBLE_EQ(t->duration_s, 0.5);
}

TEST(TraceReader, RejectsAnEmptyFile) { EXPECT_EQ(rejection(""), "run.jsonl: empty file (not a gpudoc trace)"); }

TEST(TraceReader, RejectsAFirstLineThatIsNotAHeader) {
  EXPECT_EQ(rejection(R"({"type":"sample","t":0,"gpu":0})"
                      "\n"),
            R"(run.jsonl line 1: not a gpudoc trace: the first line must be the header ({"type":"header",...}))");
  EXPECT_EQ(rejection("[1,2]\n"),
            R"(run.jsonl line 1: not a gpudoc trace: the first line must be the header ({"type":"header",...}))");
  EXPECT_EQ(
      rejection("time,power\n1,2\n").rfind("run.jsonl line 1: not a gpudoc trace: the first line is not JSON (", 0),
      0u);
}

TEST(TraceReader, RejectsAnUnknownFormat) {
  EXPECT_EQ(rejection(R"({"type":"header","format":"chrome-trace","version":1})"
                      "\n"),
            R"(run.jsonl line 1: not a gpudoc trace: "format" is "chrome-trace", expected "gpudoc-trace")");
  EXPECT_EQ(rejection(R"({"type":"header","version":1})"
                      "\n"),
            R"(run.jsonl line 1: not a gpudoc trace: "format" is missing, expected "gpudoc-trace")");
}

TEST(TraceReader, RejectsOtherVersions) {
  EXPECT_EQ(rejection(R"({"type":"header","format":"gpudoc-trace","version":2,"start_unix_ns":0})"
                      "\n"),
            "run.jsonl line 1: trace format version 2 was written by a newer gpudoc; this one reads version 1");
  EXPECT_EQ(rejection(R"({"type":"header","format":"gpudoc-trace","version":0,"start_unix_ns":0})"
                      "\n"),
            "run.jsonl line 1: trace format version 0 is not supported; this gpudoc reads version 1");
  EXPECT_EQ(rejection(R"({"type":"header","format":"gpudoc-trace","version":"1"})"
                      "\n"),
            R"(run.jsonl line 1: "version" must be an integer)");
}

TEST(TraceReader, RejectsBadHeaderFields) {
  const std::string base = R"({"type":"header","format":"gpudoc-trace","version":1,)";
  EXPECT_EQ(rejection(base + R"("gpus":[],"metrics":[]})"
                             "\n"),
            R"(run.jsonl line 1: "start_unix_ns" is missing)");
  EXPECT_EQ(rejection(base + R"("start_unix_ns":-5,"gpus":[],"metrics":[]})"
                             "\n"),
            R"(run.jsonl line 1: "start_unix_ns" must be an integer between 0 and 4000000000000000000)");
  EXPECT_EQ(rejection(base + R"("start_unix_ns":0,"metrics":[]})"
                             "\n"),
            R"(run.jsonl line 1: "gpus" is missing)");
  EXPECT_EQ(rejection(base + R"("start_unix_ns":0,"gpus":[{"memory_total_bytes":-1}],"metrics":[]})"
                             "\n"),
            R"(run.jsonl line 1: "gpus[0].memory_total_bytes" must be a non-negative integer)");
  EXPECT_EQ(rejection(base + R"("start_unix_ns":0,"gpus":[{"name":7}],"metrics":[]})"
                             "\n"),
            R"(run.jsonl line 1: "gpus[0].name" must be a string)");
  EXPECT_EQ(rejection(base + R"("start_unix_ns":0,"gpus":[{"sm_clock_max_mhz":"fast"}],"metrics":[]})"
                             "\n"),
            R"(run.jsonl line 1: "gpus[0].sm_clock_max_mhz" must be a number)");
  EXPECT_EQ(rejection(base + R"("start_unix_ns":0,"gpus":[{"mig_instances":[{"uuid":1}]}],"metrics":[]})"
                             "\n"),
            R"(run.jsonl line 1: "gpus[0].mig_instances[0].uuid" must be a string)");
  EXPECT_EQ(rejection(base + R"("start_unix_ns":0,"gpus":[],"metrics":[{"unit":"W"}]})"
                             "\n"),
            R"(run.jsonl line 1: "metrics[0].name" must be a non-empty string)");
  EXPECT_EQ(rejection(base + R"("start_unix_ns":0,"gpus":[],"metrics":[],"command":"python3 x.py"})"
                             "\n"),
            R"(run.jsonl line 1: "command" must be a list of strings)");
  EXPECT_EQ(rejection(base + R"("start_unix_ns":0,"gpus":[],"metrics":[],"host":null})"
                             "\n"),
            R"(run.jsonl line 1: "host" must be a string)");
}

TEST(TraceReader, KeepsUnknownHeaderKeys) {
  auto t = parse(header_line(1, R"(,"site":"lab","future":{"a":[1,2]})"));
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->header.extra, (nlohmann::json{{"site", "lab"}, {"future", {{"a", {1, 2}}}}}));
}

TEST(TraceReader, RejectsTooManyGpus) {
  std::string gpus;
  for (std::size_t i = 0; i <= kMaxGpus; ++i) gpus += i ? ",{}" : "{}";
  std::string h = R"({"type":"header","format":"gpudoc-trace","version":1,"start_unix_ns":0,"gpus":[)" + gpus +
                  R"(],"metrics":[]})"
                  "\n";
  EXPECT_EQ(rejection(h), "run.jsonl line 1: the header lists 4097 GPUs; at most 4096 are supported");
}

TEST(TraceReader, RejectsALineOverTheLimit) {
  std::string big =
      R"({"type":"annotation","t":1,"kind":"annotation","text":")" + std::string(kMaxLineBytes, 'x') + "\"}\n";
  EXPECT_EQ(rejection(kHeader + big), "run.jsonl line 2: the line is longer than the limit of 1048576 bytes");
}

TEST(TraceReader, RejectsAGpuOutOfRange) {
  EXPECT_EQ(rejection(kHeader + R"({"type":"sample","t":1,"gpu":2,"power_watts":1})"
                                "\n"),
            R"(run.jsonl line 2: "gpu" is 2 but the header lists 2 GPUs (0..1))");
  EXPECT_EQ(rejection(kHeader + R"({"type":"sample","t":1,"gpu":-1,"power_watts":1})"
                                "\n"),
            R"(run.jsonl line 2: "gpu" must be a non-negative integer)");
  EXPECT_EQ(rejection(kHeader + R"({"type":"sample","t":1,"gpu":0.5,"power_watts":1})"
                                "\n"),
            R"(run.jsonl line 2: "gpu" must be a non-negative integer)");
  EXPECT_EQ(rejection(kHeader + R"({"type":"process","t":1,"gpu":7,"pid":1})"
                                "\n"),
            R"(run.jsonl line 2: "gpu" is 7 but the header lists 2 GPUs (0..1))");
  EXPECT_EQ(rejection(kHeader + R"({"type":"event","t":1,"gpu":9,"kind":"gpu_lost"})"
                                "\n"),
            R"(run.jsonl line 2: "gpu" is 9 but the header lists 2 GPUs (0..1))");
  EXPECT_EQ(rejection(kHeader + R"({"type":"sample","t":1,"power_watts":1})"
                                "\n"),
            R"(run.jsonl line 2: "gpu" is missing)");
}

TEST(TraceReader, RejectsATimeOutOfRange) {
  const std::string msg = R"(run.jsonl line 2: "t" must be a number of seconds between -1 and 100000000)";
  EXPECT_EQ(rejection(kHeader + R"({"type":"sample","t":-1.5,"gpu":0,"power_watts":1})"
                                "\n"),
            msg);
  EXPECT_EQ(rejection(kHeader + R"({"type":"sample","t":100000001,"gpu":0,"power_watts":1})"
                                "\n"),
            msg);
  EXPECT_EQ(rejection(kHeader + R"({"type":"sample","t":"1","gpu":0,"power_watts":1})"
                                "\n"),
            msg);
  EXPECT_EQ(rejection(kHeader + R"({"type":"sample","t":null,"gpu":0,"power_watts":1})"
                                "\n"),
            msg);
  EXPECT_EQ(rejection(kHeader + R"({"type":"event","t":-2,"kind":"x"})"
                                "\n"),
            msg);
  EXPECT_EQ(rejection(kHeader + R"({"type":"sample","gpu":0,"power_watts":1})"
                                "\n"),
            R"(run.jsonl line 2: "t" is missing)");
  // Not finite: JSON has no NaN or Infinity, and 1e999 overflows.
  EXPECT_EQ(rejection(kHeader + R"({"type":"sample","t":NaN,"gpu":0})"
                                "\n")
                .rfind("run.jsonl line 2: not valid JSON: ", 0),
            0u);
  EXPECT_EQ(rejection(kHeader + R"({"type":"sample","t":1e999,"gpu":0})"
                                "\n")
                .rfind("run.jsonl line 2: not valid JSON: ", 0),
            0u);
  // -1 itself is allowed: utilization samples may predate the start a little.
  EXPECT_EQ(rejection(kHeader + R"({"type":"sample","t":-1,"gpu":0,"power_watts":1})"
                                "\n"),
            "<accepted>");
}

TEST(TraceReader, RejectsUnknownMetricsButAcceptsCatalogAndDeclaredOnes) {
  EXPECT_EQ(
      rejection(kHeader + R"({"type":"sample","t":1,"gpu":0,"power_watt":1})"
                          "\n"),
      R"(run.jsonl line 2: unknown metric "power_watt" in a sample (neither in the header's "metrics" nor in this gpudoc's catalog))");
  // In the catalog though not in this header's list: accepted.
  auto t = parse(kHeader + R"({"type":"sample","t":1,"gpu":0,"sm_clock_mhz":1980})"
                           "\n");
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->gpus[0].metric(Metric::kSmClockMhz).v, std::vector<double>{1980});
  // Declared by a newer gpudoc's header but unknown here: checked, then skipped.
  std::string newer = R"({"type":"header","format":"gpudoc-trace","version":1,"start_unix_ns":0,"gpus":[{}],)"
                      R"("metrics":[{"name":"nvlink_errors_total","unit":"1","group":"slow","period_ms":1000}]})"
                      "\n";
  auto n = parse(newer + R"({"type":"sample","t":1,"gpu":0,"nvlink_errors_total":3,"power_watts":2})"
                         "\n");
  ASSERT_TRUE(n.ok()) << n.error().message();
  EXPECT_EQ(n->gpus[0].metric(Metric::kPowerWatts).v, std::vector<double>{2});
  EXPECT_EQ(rejection(newer + R"({"type":"sample","t":1,"gpu":0,"nvlink_errors_total":"3"})"
                              "\n"),
            R"(run.jsonl line 2: "nvlink_errors_total" must be a number)");
}

TEST(TraceReader, RejectsWrongTypes) {
  EXPECT_EQ(rejection(kHeader + R"({"type":"sample","t":1,"gpu":0,"power_watts":"312"})"
                                "\n"),
            R"(run.jsonl line 2: "power_watts" must be a number)");
  EXPECT_EQ(rejection(kHeader + R"({"type":"sample","t":1,"gpu":0,"power_watts":[1]})"
                                "\n"),
            R"(run.jsonl line 2: "power_watts" must be a number)");
  EXPECT_EQ(rejection(kHeader + R"({"type":"sample","t":1,"gpu":0,"power_watts":null})"
                                "\n"),
            R"(run.jsonl line 2: "power_watts" must be a number)");
  EXPECT_EQ(rejection(kHeader + R"({"type":"process","t":1,"gpu":0,"pid":"12"})"
                                "\n"),
            R"(run.jsonl line 2: "pid" must be a process id)");
  EXPECT_EQ(rejection(kHeader + R"({"type":"process","t":1,"gpu":0,"pid":4294967296})"
                                "\n"),
            R"(run.jsonl line 2: "pid" must be a process id)");
  EXPECT_EQ(rejection(kHeader + R"({"type":"process","t":1,"gpu":0})"
                                "\n"),
            R"(run.jsonl line 2: "pid" is missing)");
  EXPECT_EQ(rejection(kHeader + R"({"type":"process","t":1,"gpu":0,"pid":1,"name":5})"
                                "\n"),
            R"(run.jsonl line 2: "name" must be a string)");
  EXPECT_EQ(rejection(kHeader + R"({"type":"process","t":1,"gpu":0,"pid":1,"memory_used_bytes":1.5})"
                                "\n"),
            R"(run.jsonl line 2: "memory_used_bytes" must be a non-negative integer)");
  EXPECT_EQ(rejection(kHeader + R"({"type":"process","t":1,"gpu":0,"pid":1,"sm_utilization_percent":true})"
                                "\n"),
            R"(run.jsonl line 2: "sm_utilization_percent" must be a number)");
  EXPECT_EQ(rejection(kHeader + R"({"type":5,"t":1})"
                                "\n"),
            R"(run.jsonl line 2: "type" must be a string)");
  EXPECT_EQ(rejection(kHeader + R"({"t":1})"
                                "\n"),
            R"(run.jsonl line 2: missing "type")");
  EXPECT_EQ(rejection(kHeader + "[1]\n"), "run.jsonl line 2: a record must be a JSON object");
  EXPECT_EQ(rejection(kHeader + R"({"type":"event","t":1})"
                                "\n"),
            R"(run.jsonl line 2: "kind" is missing)");
  EXPECT_EQ(rejection(kHeader + R"({"type":"event","t":1,"kind":""})"
                                "\n"),
            R"(run.jsonl line 2: "kind" must be a non-empty string)");
}

TEST(TraceReader, ChecksTheKeysOfKnownEventKinds) {
  EXPECT_EQ(rejection(kHeader + R"({"type":"event","t":1,"kind":"xid","gpu":0})"
                                "\n"),
            R"(run.jsonl line 2: a "xid" event needs "code")");
  EXPECT_EQ(rejection(kHeader + R"({"type":"event","t":1,"kind":"xid","code":79})"
                                "\n"),
            R"(run.jsonl line 2: a "xid" event needs "gpu")");
  EXPECT_EQ(rejection(kHeader + R"({"type":"event","t":1,"kind":"process_exit","pid":1,"exit_code":"0"})"
                                "\n"),
            R"(run.jsonl line 2: "exit_code" of a "process_exit" event must be an integer)");
  EXPECT_EQ(rejection(kHeader + R"({"type":"event","t":1,"kind":"process_start","pid":1,"command":[1]})"
                                "\n"),
            R"(run.jsonl line 2: "command" of a "process_start" event must be a list of strings)");
  EXPECT_EQ(rejection(kHeader + R"({"type":"event","t":1,"kind":"annotation"})"
                                "\n"),
            R"(run.jsonl line 2: a "annotation" event needs "text")");
  EXPECT_EQ(rejection(kHeader + R"({"type":"event","t":1,"kind":"sampler_overrun","dropped":-3})"
                                "\n"),
            R"(run.jsonl line 2: "dropped" of a "sampler_overrun" event must be a non-negative integer)");
  std::string ok = kHeader;
  for (
      const char* line : {
          R"({"type":"event","t":0,"kind":"process_start","pid":1,"command":["python3","x.py"]})",
          R"({"type":"event","t":1,"kind":"process_exit","pid":1,"signal":9})",
          R"({"type":"event","t":1,"kind":"xid","gpu":1,"code":79})",
          R"({"type":"event","t":1,"kind":"step","step_ms":412.5,"loss":1.25})",
          R"({"type":"event","t":1,"kind":"finding","id":"GD001","severity":"warning","message":"idle"})",
          R"({"type":"event","t":1,"kind":"annotation","text":"eval"})",
          R"({"type":"event","t":1,"kind":"gpu_lost","gpu":0})",
          R"({"type":"event","t":1,"kind":"gpu_unresponsive","gpu":0,"call":"nvmlDeviceGetPowerUsage","waited_ms":2000})",
          R"({"type":"event","t":1,"kind":"gpu_recovered","gpu":0})",
          R"({"type":"event","t":1,"kind":"sampler_overrun","dropped":12})",
      })
    ok += std::string(line) + "\n";
  auto t = parse(ok);
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->events.size(), 10u);
}

TEST(TraceReader, KeepsUnknownEventKindsAndTheirFields) {
  auto t = parse(kHeader +
                 R"({"type":"event","t":3,"kind":"nccl_hang","gpu":1,"comm":"0xdead","ranks":[0,1],"x":{"y":null}})"
                 "\n");
  ASSERT_TRUE(t.ok()) << t.error().message();
  ASSERT_EQ(t->events.size(), 1u);
  EXPECT_EQ(t->events[0].kind, "nccl_hang");
  EXPECT_EQ(t->events[0].gpu, 1);
  EXPECT_EQ(t->events[0].fields, (nlohmann::json{{"comm", "0xdead"}, {"ranks", {0, 1}}, {"x", {{"y", nullptr}}}}));
}

TEST(TraceReader, IgnoresUnknownKeysOnProcessLines) {
  auto t = parse(kHeader + R"({"type":"process","t":1,"gpu":0,"pid":5,"cgroup":"/slurm/job42"})"
                           "\n");
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->gpus[0].processes.size(), 1u);
}

TEST(TraceReader, RejectsUnknownRecordTypesAndASecondHeader) {
  EXPECT_EQ(rejection(kHeader + R"({"type":"gauge","t":1})"
                                "\n"),
            R"(run.jsonl line 2: unknown record type "gauge" (this gpudoc reads header, sample, process, event, end))");
  EXPECT_EQ(rejection(kHeader + kHeader), "run.jsonl line 2: a second header (only line 1 is a header)");
}

TEST(TraceReader, RejectsEmptyLines) {
  EXPECT_EQ(rejection(kHeader + "\n" +
                      R"({"type":"sample","t":1,"gpu":0})"
                      "\n"),
            "run.jsonl line 2: empty line (a trace has no blank lines)");
  EXPECT_EQ(rejection(kHeader + R"({"type":"sample","t":1,"gpu":0})"
                                "\n\n"),
            "run.jsonl line 3: empty line (a trace has no blank lines)");
}

TEST(TraceReader, RejectsInvalidJsonInTheMiddle) {
  auto msg = rejection(kHeader + R"({"type":"sample","t":1,"gpu":0,)"
                                 "\n"
                                 R"({"type":"sample","t":2,"gpu":0})"
                                 "\n");
  EXPECT_EQ(msg.rfind("run.jsonl line 2: not valid JSON: column ", 0), 0u) << msg;
}

TEST(TraceReader, KeepsWhatCameBeforeALastLineCutOffAndAcceptsACompleteOneWithoutNewline) {
  // A crash or a full disk cuts the last line: the lines before it are the recording.
  const std::string s1 = R"({"type":"sample","t":1,"gpu":0,"power_watts":300})";
  auto cut = parse(kHeader + s1 + "\n" + R"({"type":"sample","t":1.1,"gpu":0,"power_wa)");
  ASSERT_TRUE(cut.ok()) << cut.error().message();
  EXPECT_EQ(cut->gpus[0].metric(Metric::kPowerWatts).v, std::vector<double>{300});
  EXPECT_DOUBLE_EQ(cut->duration_s, 1);
  ASSERT_EQ(cut->warnings.size(), 1u);
  EXPECT_EQ(cut->warnings[0],
            "run.jsonl line 3: the recording was cut off in the middle of this line (42 bytes "
            "without a newline): it is dropped; lines 1-2 are read");
  // Without a header there is nothing to keep.
  EXPECT_EQ(rejection(kHeader.substr(0, 40)), "run.jsonl: truncated at line 1: the recording was cut off");
  // A last line that is not cut off (only its newline is missing) is read, and nothing is said.
  auto t = parse(kHeader + s1);
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->gpus[0].metric(Metric::kPowerWatts).size(), 1u);
  EXPECT_TRUE(t->warnings.empty());
  // Invalid JSON anywhere but in a cut-off last line is still an error.
  EXPECT_EQ(rejection(kHeader +
                      R"({"type":"sample","t":1.1,"gpu":0,"power_wa)"
                      "\n" +
                      s1 + "\n")
                .rfind("run.jsonl line 2: not valid JSON", 0),
            0u);
}

TEST(TraceReader, MessagesQuoteKeysAsJsonSoEscapesStayText) {
  EXPECT_EQ(rejection(kHeader + R"({"type":"sample","t":1,"gpu":0,"\u001b]0;x\u0007":1})"
                                "\n"),
            R"(run.jsonl line 2: unknown metric "\u001b]0;x\u0007" in a sample (neither in the header's "metrics" nor )"
            R"(in this gpudoc's catalog))");
}

TEST(TraceReader, RejectsRecordsAfterTheEnd) {
  const std::string end = R"({"type":"end","t":2,"sample_lines":0,"dropped_records":0,"reason":"duration"})"
                          "\n";
  EXPECT_EQ(rejection(kHeader + end +
                      R"({"type":"sample","t":3,"gpu":0})"
                      "\n"),
            "run.jsonl line 3: a record after the end line (line 2)");
  EXPECT_EQ(rejection(kHeader + end + end), "run.jsonl line 3: a record after the end line (line 2)");
  EXPECT_EQ(rejection(kHeader + R"({"type":"end","t":2,"sample_lines":0,"dropped_records":0})"
                                "\n"),
            R"(run.jsonl line 2: "reason" is missing)");
  EXPECT_EQ(rejection(kHeader + R"({"type":"end","t":2,"sample_lines":-1,"dropped_records":0,"reason":"x"})"
                                "\n"),
            R"(run.jsonl line 2: "sample_lines" must be a non-negative integer)");
  auto t = parse(kHeader + end);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(t->end);
  EXPECT_EQ(t->end->reason, "duration");
}

TEST(TraceReader, SortsEachSeriesByTimeStably) {
  // Utilization samples come from the driver's buffer, after later fast samples.
  auto t = parse(kHeader + R"({"type":"sample","t":1.0,"gpu":0,"power_watts":1})"
                           "\n"
                           R"({"type":"sample","t":0.8,"gpu":0,"gpu_utilization_percent":80,"power_watts":2})"
                           "\n"
                           R"({"type":"sample","t":0.2,"gpu":0,"gpu_utilization_percent":20})"
                           "\n"
                           R"({"type":"sample","t":0.8,"gpu":0,"power_watts":3})"
                           "\n"
                           R"({"type":"process","t":5,"gpu":0,"pid":2})"
                           "\n"
                           R"({"type":"process","t":4,"gpu":0,"pid":1})"
                           "\n"
                           R"({"type":"event","t":9,"kind":"b"})"
                           "\n"
                           R"({"type":"event","t":8,"kind":"a"})"
                           "\n");
  ASSERT_TRUE(t.ok()) << t.error().message();
  const auto& g = t->gpus[0];
  EXPECT_EQ(g.metric(Metric::kGpuUtilizationPercent).t, (std::vector<double>{0.2, 0.8}));
  EXPECT_EQ(g.metric(Metric::kGpuUtilizationPercent).v, (std::vector<double>{20, 80}));
  EXPECT_EQ(g.metric(Metric::kPowerWatts).t, (std::vector<double>{0.8, 0.8, 1.0}));
  EXPECT_EQ(g.metric(Metric::kPowerWatts).v, (std::vector<double>{2, 3, 1}));
  EXPECT_EQ(g.processes[0].sample.pid, 1u);
  EXPECT_EQ(t->events[0].kind, "a");
  EXPECT_DOUBLE_EQ(t->duration_s, 9);
}

TEST(TraceReader, ReadsLinesTheFastPathLeavesToTheFullParser) {
  // Escapes, non-ASCII, spaces, CRLF, repeated keys (the last wins, as in most JSON parsers).
  auto t = parse(kHeader + R"({"type":"sample","t":1,"gpu":0,"\u0070ower_watts":5})"
                           "\n"
                           R"( { "type" : "sample" , "t" : 2 , "gpu" : 0 , "power_watts" : 6 } )"
                           "\r\n"
                           R"({"type":"sample","t":3,"gpu":0,"power_watts":7,"power_watts":8})"
                           "\n"
                           R"({"type":"process","t":4,"gpu":0,"pid":9,"name":"tr\u00e4in \"x\""})"
                           "\n"
                           R"({"type":"process","t":5,"gpu":0,"pid":9,"name":"träin"})"
                           "\n"
                           R"({"type":"sample","t":6e0,"gpu":1.0,"power_watts":-0.5E+1})"
                           "\n");
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->gpus[0].metric(Metric::kPowerWatts).v, (std::vector<double>{5, 6, 8}));
  EXPECT_EQ(t->gpus[0].processes[0].sample.name, "träin \"x\"");
  EXPECT_EQ(t->gpus[0].processes[1].sample.name, "träin");
  EXPECT_EQ(t->gpus[1].metric(Metric::kPowerWatts).v, std::vector<double>{-5});
}

TEST(TraceReader, KeepsLargeIntegersExact) {
  auto t = parse(kHeader + R"({"type":"process","t":1,"gpu":0,"pid":1,"memory_used_bytes":18446744073709551615})"
                           "\n");
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->gpus[0].processes[0].sample.memory_used_bytes, 18446744073709551615ULL);
}

TEST(TraceReader, ReportsAMissingFileAsIo) {
  auto t = read_trace_file("/nonexistent/run.jsonl");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().kind(), core::ErrorKind::kIo);
  EXPECT_EQ(t.error().message(), "reading /nonexistent/run.jsonl: No such file or directory");
}

TEST(TraceReader, NamesTheFileAsGiven) {
  testing::TempFile f;
  {
    std::FILE* out = std::fopen(f.path().c_str(), "w");
    ASSERT_NE(out, nullptr);
    std::string bad = kHeader + R"({"type":"sample","t":1,"gpu":0,"power_watts":"x"})"
                                "\n";
    std::fputs(bad.c_str(), out);
    std::fclose(out);
  }
  auto t = read_trace_file(f.path());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().message(), f.path() + R"( line 2: "power_watts" must be a number)");
}

// ---- the fast path on its own -------------------------------------------------------------------

using detail::FlatKind;
using detail::FlatParse;
using detail::parse_flat_line;

TEST(FlatLine, SplitsAFlatObject) {
  std::vector<detail::FlatField> f;
  ASSERT_EQ(parse_flat_line(R"({"a":1,"b":-2.5e3,"c":"x y","d":true,"e":false,"f":null})", f), FlatParse::kOk);
  ASSERT_EQ(f.size(), 6u);
  EXPECT_EQ(f[0].key, "a");
  EXPECT_TRUE(f[0].value.exact_u64);
  EXPECT_EQ(f[0].value.u64, 1u);
  EXPECT_EQ(f[1].value.number, -2500);
  EXPECT_FALSE(f[1].value.exact_u64);
  EXPECT_EQ(f[2].value.kind, FlatKind::kString);
  EXPECT_EQ(f[2].value.text, "x y");
  EXPECT_EQ(f[3].value.kind, FlatKind::kTrue);
  EXPECT_EQ(f[4].value.kind, FlatKind::kFalse);
  EXPECT_EQ(f[5].value.kind, FlatKind::kNull);
  ASSERT_EQ(parse_flat_line(" {} ", f), FlatParse::kOk);
  EXPECT_TRUE(f.empty());
}

TEST(FlatLine, LeavesEverythingElseToTheFullParser) {
  std::vector<detail::FlatField> f;
  for (const char* line : {
           R"({"a":{}})",
           R"({"a":[1]})",
           R"({"a\n":1})",
           R"({"a":"\u00e4"})",
           "{\"a\":\"\xc3\xa4\"}",
           R"({"a":1,"a":2})",
           R"({"a":01})",
           R"({"a":1.})",
           R"({"a":.5})",
           R"({"a":+1})",
           R"({"a":1e})",
           R"({"a":-})",
           R"({"a":1e999})",
           R"({"a":tru})",
           R"({"a":1,})",
           R"({"a":1}x)",
           R"({"a" 1})",
           R"({a:1})",
           R"({"a":1)",
           R"({"a":"x)",
           "",
           "[]",
           R"({"a":NaN})",
           R"({"a":Infinity})",
           "{\"a\":\"\t\"}",
       })
    EXPECT_EQ(parse_flat_line(line, f), FlatParse::kFallback) << line;
}

}  // namespace
}  // namespace gpudoc::telemetry

namespace gpudoc::telemetry {
namespace {

// docs/trace-format.md lists the metric catalog; it must not drift from src/gpu/metrics.hpp.
TEST(TraceFormatDoc, ListsEveryCatalogMetricWithItsUnitGroupAndPeriod) {
  std::string doc = testing::slurp(GPUDOC_SOURCE_DIR "/docs/trace-format.md");
  ASSERT_FALSE(doc.empty());
  for (gpu::Metric m : gpu::all_metrics()) {
    const auto& mi = gpu::info(m);
    const auto& gi = gpu::info(mi.group);
    std::string row = fmt::format("| `{}` | {} | {} | {} | {} |", mi.name, mi.unit, gi.name, gi.default_period.count(),
                                  mi.description);
    EXPECT_NE(doc.find(row), std::string::npos) << "missing or stale row: " << row;
  }
  for (const char* kind : {"process_start", "process_exit", "xid", "step", "finding", "annotation", "gpu_lost",
                           "gpu_unresponsive", "gpu_recovered", "sampler_overrun"})
    EXPECT_NE(doc.find(fmt::format("| `{}` |", kind)), std::string::npos) << kind;
}

}  // namespace
}  // namespace gpudoc::telemetry
