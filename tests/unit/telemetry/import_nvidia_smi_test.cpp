// The nvidia-smi CSV importer: both --format forms, column subsets and orders, several GPUs,
// absent values, every error message, a generated round trip and fixed-seed mutations.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>

#include "telemetry/import_nvidia_smi.hpp"

namespace gpudoc::telemetry {
namespace {

using gpu::Metric;
using ::testing::HasSubstr;

const std::string kUnitsHeader =
    "timestamp, index, utilization.gpu [%], utilization.memory [%], memory.used [MiB], memory.total [MiB], "
    "power.draw [W], temperature.gpu, clocks.current.sm [MHz], clocks.max.sm [MHz], clocks_event_reasons.active\n";
const std::string kUnitsRow =
    "2026/11/29 18:45:48.466, 0, 0 %, 0 %, 0 MiB, 143771 MiB, 81.31 W, 27, 900 MHz, 1980 MHz, 0x0000000000000001\n";
constexpr std::int64_t kRowNs = 1'795'977'948'466'000'000;

core::Result<Trace> parse(const std::string& content) { return parse_nvidia_smi_csv(content, "log.csv"); }

std::string rejection(const std::string& content) {
  auto t = parse(content);
  if (t.ok()) return "<accepted>";
  EXPECT_EQ(t.error().kind(), core::ErrorKind::kBadInput) << t.error().message();
  return t.error().message();
}

double only(const Trace& t, std::size_t g, Metric m) {
  const Series& s = t.gpus.at(g).metric(m);
  EXPECT_EQ(s.size(), 1u) << gpu::info(m).name;
  return s.empty() ? -1 : s.v[0];
}

TEST(ImportNvidiaSmi, ReadsTheDriver580UnitsForm) {
  auto t = parse(kUnitsHeader + kUnitsRow);
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->header.system.backend, "nvidia-smi-csv");
  EXPECT_EQ(t->header.host, "");
  EXPECT_EQ(t->header.start_unix_ns, kRowNs);
  ASSERT_EQ(t->header.gpus.size(), 1u);
  ASSERT_EQ(t->gpus.size(), 1u);
  const auto& info = t->header.gpus[0];
  EXPECT_EQ(info.index, 0);
  EXPECT_EQ(info.memory_total_bytes, 143771ull * 1024 * 1024);
  EXPECT_EQ(info.sm_clock_max_mhz, 1980.0);
  EXPECT_EQ(only(*t, 0, Metric::kGpuUtilizationPercent), 0.0);
  EXPECT_EQ(only(*t, 0, Metric::kMemoryUtilizationPercent), 0.0);
  EXPECT_EQ(only(*t, 0, Metric::kMemoryUsedBytes), 0.0);
  EXPECT_DOUBLE_EQ(only(*t, 0, Metric::kPowerWatts), 81.31);
  EXPECT_EQ(only(*t, 0, Metric::kGpuTemperatureCelsius), 27.0);
  EXPECT_EQ(only(*t, 0, Metric::kSmClockMhz), 900.0);
  EXPECT_EQ(only(*t, 0, Metric::kClockEventReasonsMask), 1.0);
  EXPECT_EQ(t->gpus[0].metric(Metric::kPowerWatts).t[0], 0.0);
  // Seven metrics, catalog order, unit and group from the catalog; one row: no period estimate.
  ASSERT_EQ(t->header.metrics.size(), 7u);
  EXPECT_EQ(t->header.metrics[0].name, "gpu_utilization_percent");
  EXPECT_EQ(t->header.metrics[0].group, "utilization");
  EXPECT_EQ(t->header.metrics[2].name, "power_watts");
  EXPECT_EQ(t->header.metrics[2].unit, "W");
  EXPECT_EQ(t->header.metrics[2].group, "fast");
  EXPECT_EQ(t->header.metrics[2].period_ms, 0);
  EXPECT_TRUE(t->header.extra.contains("timestamps"));
  EXPECT_NE(t->header.extra["timestamps"].get<std::string>().find("UTC"), std::string::npos);
  EXPECT_FALSE(t->header.extra.contains("import_notes"));
}

TEST(ImportNvidiaSmi, ReadsTheNounitsForm) {
  auto t = parse(kUnitsHeader +
                 "2026/11/29 18:45:48.466, 0, 37, 12, 2048, 143771, 81.31, 27, 900, 1980, 0x0000000000000004\n"
                 "2026/11/29 18:45:48.566, 0, 38, 13, 4096, 143771, 90.5, 28, 1980, 1980, 0x0000000000000000\n");
  ASSERT_TRUE(t.ok()) << t.error().message();
  const auto& g = t->gpus[0];
  EXPECT_EQ(g.metric(Metric::kGpuUtilizationPercent).v, (std::vector<double>{37, 38}));
  EXPECT_EQ(g.metric(Metric::kMemoryUsedBytes).v, (std::vector<double>{2048.0 * 1048576, 4096.0 * 1048576}));
  EXPECT_EQ(g.metric(Metric::kClockEventReasonsMask).v, (std::vector<double>{4, 0}));
  ASSERT_EQ(g.metric(Metric::kPowerWatts).t.size(), 2u);
  EXPECT_NEAR(g.metric(Metric::kPowerWatts).t[1], 0.1, 1e-9);
  EXPECT_NEAR(t->duration_s, 0.1, 1e-9);
  EXPECT_EQ(t->header.metrics[0].period_ms, 100);
}

TEST(ImportNvidiaSmi, AcceptsSubsetsOtherOrdersAndOldNames) {
  auto t = parse(
      "power.draw.instant [W], clocks_throttle_reasons.active, clocks.sm [MHz], timestamp, name, uuid, pci.bus_id\n"
      "120.5 W, 0x00000000000000A0, 1410 MHz, 2026/01/02 03:04:05.006, NVIDIA H200, GPU-abc, 00000000:18:00.0\n");
  ASSERT_TRUE(t.ok()) << t.error().message();
  ASSERT_EQ(t->gpus.size(), 1u);
  EXPECT_EQ(t->header.gpus[0].index, 0);
  EXPECT_EQ(t->header.gpus[0].name, "NVIDIA H200");
  EXPECT_EQ(t->header.gpus[0].uuid, "GPU-abc");
  EXPECT_EQ(t->header.gpus[0].pci_bus_id, "00000000:18:00.0");
  EXPECT_FALSE(t->header.gpus[0].memory_total_bytes.has_value());
  EXPECT_EQ(only(*t, 0, Metric::kPowerWatts), 120.5);
  EXPECT_EQ(only(*t, 0, Metric::kClockEventReasonsMask), 160.0);
  EXPECT_EQ(only(*t, 0, Metric::kSmClockMhz), 1410.0);
  EXPECT_TRUE(t->gpus[0].metric(Metric::kGpuUtilizationPercent).empty());
  ASSERT_EQ(t->header.metrics.size(), 3u);
  EXPECT_EQ(t->header.metrics[0].name, "power_watts");
  EXPECT_EQ(t->header.start_unix_ns, 1'767'323'045'006'000'000);
}

TEST(ImportNvidiaSmi, NotesColumnsItDoesNotImport) {
  auto t = parse("timestamp, fan.speed [%], power.draw [W]\n2026/01/02 03:04:05.006, 30 %, 100 W\n");
  ASSERT_TRUE(t.ok()) << t.error().message();
  ASSERT_TRUE(t->header.extra.contains("import_notes"));
  EXPECT_EQ(t->header.extra["import_notes"][0], "column 2 (\"fan.speed [%]\") is not imported");
}

TEST(ImportNvidiaSmi, SplitsInterleavedGpusByIndex) {
  auto t = parse(
      "timestamp, index, power.draw [W]\n"
      "2026/01/02 03:04:05.000, 1, 200 W\n"
      "2026/01/02 03:04:05.000, 0, 100 W\n"
      "2026/01/02 03:04:06.000, 1, 201 W\n"
      "2026/01/02 03:04:06.000, 0, 101 W\n");
  ASSERT_TRUE(t.ok()) << t.error().message();
  ASSERT_EQ(t->gpus.size(), 2u);
  EXPECT_EQ(t->header.gpus[0].index, 0);
  EXPECT_EQ(t->header.gpus[1].index, 1);
  EXPECT_EQ(t->gpus[0].metric(Metric::kPowerWatts).v, (std::vector<double>{100, 101}));
  EXPECT_EQ(t->gpus[1].metric(Metric::kPowerWatts).v, (std::vector<double>{200, 201}));
  EXPECT_EQ(t->gpus[1].metric(Metric::kPowerWatts).t, (std::vector<double>{0, 1}));
  EXPECT_EQ(t->header.metrics[0].period_ms, 1000);
}

TEST(ImportNvidiaSmi, NotAvailableValuesAreAbsentNotZero) {
  auto t = parse(
      "timestamp, index, power.draw [W], memory.total [MiB], clocks_event_reasons.active, temperature.gpu\n"
      "2026/01/02 03:04:05.000, 0, [N/A], [Not Supported], [N/A], N/A\n"
      "2026/01/02 03:04:05.100, 0, 50 W, 1024 MiB, 0x0000000000000000, 30\n");
  ASSERT_TRUE(t.ok()) << t.error().message();
  const auto& power = t->gpus[0].metric(Metric::kPowerWatts);
  ASSERT_EQ(power.size(), 1u);
  EXPECT_NEAR(power.t[0], 0.1, 1e-9);
  EXPECT_EQ(power.v[0], 50.0);
  EXPECT_EQ(t->gpus[0].metric(Metric::kClockEventReasonsMask).size(), 1u);
  EXPECT_EQ(t->gpus[0].metric(Metric::kGpuTemperatureCelsius).size(), 1u);
  EXPECT_EQ(t->header.gpus[0].memory_total_bytes, 1024ull * 1024 * 1024);
}

TEST(ImportNvidiaSmi, SkipsATruncatedLastLineWithANote) {
  auto t = parse(kUnitsHeader + kUnitsRow + "2026/11/29 18:45:48.566, 0, 1 %, 2");
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->gpus[0].metric(Metric::kPowerWatts).size(), 1u);
  ASSERT_TRUE(t->header.extra.contains("import_notes"));
  EXPECT_EQ(t->header.extra["import_notes"][0], "line 3: truncated last line skipped (4 of 11 columns)");
}

TEST(ImportNvidiaSmi, AcceptsCrlfARepeatedHeaderAndBlankLines) {
  auto t = parse(
      "\xEF\xBB\xBFtimestamp, power.draw [W]\r\n2026/01/02 03:04:05.000, 1 W\r\n\r\n"
      "timestamp, power.draw [W]\r\n2026/01/02 03:04:05.100, 2 W\r\n");
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->gpus[0].metric(Metric::kPowerWatts).v, (std::vector<double>{1, 2}));
}

// A stream of blank lines after the header (`yes ''`) ends with an error naming where, after 1 MiB
// of them, instead of being read up to the 1 TiB input limit; the same in lines of spaces.
TEST(ImportNvidiaSmi, AStreamOfBlankLinesIsRefusedAfterOneMebibyte) {
  const std::string head = "timestamp, power.draw [W]\n2026/01/02 03:04:05.000, 1 W\n";
  EXPECT_EQ(rejection(head + std::string(2u << 20, '\n') + "2026/01/02 03:04:05.100, 2 W\n"),
            "log.csv line 1048579: over 1 MiB of blank lines in a row: not an nvidia-smi log");
  std::string spaces;
  for (int i = 0; i < 20; ++i) spaces += std::string(100'000, ' ') + "\r\n";
  EXPECT_THAT(rejection(head + spaces), HasSubstr("line 13: over 1 MiB of blank lines in a row"));
  // Just under the limit, the log is read whole.
  auto t = parse(head + std::string((1u << 20) - 1, '\n') + "2026/01/02 03:04:05.100, 2 W\n");
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->gpus[0].metric(Metric::kPowerWatts).v, (std::vector<double>{1, 2}));
}

TEST(ImportNvidiaSmi, SkipsRowsWhoseTimeGoesBackwards) {
  auto t = parse(
      "timestamp, power.draw [W]\n2026/01/02 03:04:05.000, 1 W\n2026/01/02 03:04:04.000, 2 W\n"
      "2026/01/02 03:04:05.100, 3 W\n");
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->gpus[0].metric(Metric::kPowerWatts).v, (std::vector<double>{1, 3}));
  EXPECT_EQ(t->header.extra["import_notes"][0], "1 rows skipped: their time went backwards (clock change?)");
}

TEST(ImportNvidiaSmi, MessagesQuoteCellsAsJsonSoEscapesStayText) {
  EXPECT_EQ(rejection("timestamp, power.draw [W]\n2026/01/02 03:04:05.000, \x1b[2J W\n"),
            "log.csv line 2: column 2 (\"power.draw [W]\"): \"\\u001b[2J W\" is not a number");
}

TEST(ImportNvidiaSmi, SaysHowManyRowsWereDroppedAndWhere) {
  std::string csv = "timestamp, power.draw [W]\n2026/01/02 03:04:05.000, 1 W\n";
  for (int i = 0; i < 7; ++i) csv += "2026/01/02 03:04:04.000, 2 W\n";  // lines 3..9 go backwards
  csv += "2026/01/02 03:04:05.100, 3 W\n2031/01/01 00:00:00.000, 4 W\n2026/01/02 03:04:05.200";
  auto t = parse(csv);
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->gpus[0].metric(Metric::kPowerWatts).v, (std::vector<double>{1, 3}));
  ASSERT_EQ(t->warnings.size(), 3u);
  EXPECT_EQ(t->warnings[0], "log.csv line 12: the last line is cut off (1 of 2 columns): it is skipped");
  EXPECT_EQ(t->warnings[1],
            "log.csv: 7 rows skipped, their time went backwards (clock change?): lines 3, 4, 5, 6, 7 and 2 more");
  EXPECT_EQ(t->warnings[2], "log.csv: 1 row skipped, more than 100000000 s after the first row: line 11");
  // A clean log has none.
  EXPECT_TRUE(parse("timestamp, power.draw [W]\n2026/01/02 03:04:05.000, 1 W\n")->warnings.empty());
}

// Found by fuzzing (tests/fuzz/corpus/csv/crash_*.csv): what the importer returns must be a trace
// the trace format can hold, and JSON output of its strings must not throw.
TEST(ImportNvidiaSmi, InvalidUtf8BecomesReplacementCharacters) {
  auto t = parse(
      "timestamp, name, uuid, pci.bus_id, power.draw [W], fan\xc3\n"
      "2026/01/02 03:04:05.000, H200\xff, GPU-\xed\xa0\x80x, 0\xe2\x82, 1 W, 1\n");
  ASSERT_TRUE(t.ok()) << t.error().message();
  const auto& d = t->header.gpus[0];
  EXPECT_EQ(d.name, "H200\xEF\xBF\xBD");
  EXPECT_EQ(d.uuid, "GPU-\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDx");  // a UTF-16 surrogate is not UTF-8
  EXPECT_EQ(d.pci_bus_id, "0\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(t->header.extra["import_notes"][0], "column 6 (\"fan\xEF\xBF\xBD\") is not imported");
  EXPECT_NO_THROW((void)t->header.extra.dump());
  // Valid multi-byte text is kept as it is.
  t = parse(
      "timestamp, name, power.draw [W]\n2026/01/02 03:04:05.000, GPU \xc3\xa9\xe2\x82\xac\xf0\x9f\x94\xa5, 1 W\n");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->header.gpus[0].name, "GPU \xc3\xa9\xe2\x82\xac\xf0\x9f\x94\xa5");
}

TEST(ImportNvidiaSmi, APeriodBeyondTheFormatIsCappedAndFarRowsAreNoted) {
  // Two rows 306 days apart: a median interval the trace format's period_ms (uint32) cannot hold.
  auto t = parse("timestamp, power.draw [W]\n2026/01/01 00:00:00.000, 1 W\n2026/11/03 00:00:00.000, 2 W\n");
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->header.metrics[0].period_ms, 4'294'967'295);
  // A row more than 10^8 s (3.2 years) after the first does not fit a trace: skipped, with a note.
  t = parse("timestamp, power.draw [W]\n2026/01/01 00:00:00.000, 1 W\n2030/01/01 00:00:00.000, 2 W\n");
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->gpus[0].metric(Metric::kPowerWatts).v, (std::vector<double>{1}));
  EXPECT_EQ(t->header.extra["import_notes"][0], "1 rows skipped: more than 100000000 s after the first row");
}

TEST(ImportNvidiaSmi, RejectsBadInputWithExactMessages) {
  const std::string h = "timestamp, index, power.draw [W], clocks_event_reasons.active\n";
  EXPECT_EQ(rejection(""), "log.csv: empty file (not an nvidia-smi CSV)");
  EXPECT_EQ(rejection("\n \n"), "log.csv: empty file (not an nvidia-smi CSV)");
  EXPECT_EQ(
      rejection("foo, bar\n1, 2\n"),
      "log.csv line 1: no known nvidia-smi column in the header (expected e.g. \"timestamp, index, power.draw [W]\")");
  EXPECT_EQ(rejection("index, power.draw [W]\n0, 1 W\n"),
            "log.csv line 1: no timestamp column: the rows cannot be placed in time");
  EXPECT_EQ(rejection("timestamp, power.draw [W], power.draw.instant [W]\n"),
            "log.csv line 1: column 3 (\"power.draw.instant [W]\") repeats column 2 (\"power.draw [W]\")");
  EXPECT_EQ(rejection(h), "log.csv: no data rows");
  EXPECT_EQ(rejection(h + "2026/01/02 03:04:05.000, 0, 1 W\n"), "log.csv line 2: 3 columns, the header has 4");
  EXPECT_EQ(rejection(h + "2026/01/02 03:04:05.000, 0, 1 W, 0x0, 5\n"), "log.csv line 2: 5 columns, the header has 4");
  EXPECT_EQ(rejection(h + "2026/01/02 03:04:05.000, 0, 1 W, 0x0\n"
                          "2026/01/02 03:04:05.100, 0, abc W, 0x0\n"),
            "log.csv line 3: column 3 (\"power.draw [W]\"): \"abc W\" is not a number");
  EXPECT_EQ(rejection(h + "2026/01/02 03:04:05.000, 0, inf, 0x0\n"),
            "log.csv line 2: column 3 (\"power.draw [W]\"): \"inf\" is not a number");
  EXPECT_EQ(rejection(h + "2026/01/02 03:04:05.000, 0, 1 W, 12\n"),
            "log.csv line 2: column 4 (\"clocks_event_reasons.active\"): \"12\" is not a hexadecimal mask");
  EXPECT_EQ(
      rejection(h + "2026/01/02 03:04:05.000, 0, 1 W, 0x1ffffffffffffffff\n"),
      "log.csv line 2: column 4 (\"clocks_event_reasons.active\"): \"0x1ffffffffffffffff\" is not a hexadecimal mask");
  EXPECT_EQ(rejection(h + "2026/02/30 03:04:05.000, 0, 1 W, 0x0\n"),
            "log.csv line 2: column 1 (\"timestamp\"): \"2026/02/30 03:04:05.000\" is not a timestamp (YYYY/MM/DD "
            "HH:MM:SS.mmm)");
  EXPECT_EQ(rejection(h + "yesterday, 0, 1 W, 0x0\n"),
            "log.csv line 2: column 1 (\"timestamp\"): \"yesterday\" is not a timestamp (YYYY/MM/DD HH:MM:SS.mmm)");
  EXPECT_EQ(rejection(h + "2026/01/02 03:04:05.000, 5000, 1 W, 0x0\n"),
            "log.csv line 2: column 2 (\"index\"): \"5000\" is not a GPU index");
  EXPECT_EQ(rejection(h + "2026/01/02 03:04:05.000, -1, 1 W, 0x0\n"),
            "log.csv line 2: column 2 (\"index\"): \"-1\" is not a GPU index");
  EXPECT_EQ(rejection("timestamp, memory.total [MiB]\n2026/01/02 03:04:05.000, -5 MiB\n"),
            "log.csv line 2: column 2 (\"memory.total [MiB]\"): \"-5 MiB\" is not a memory size");
  EXPECT_EQ(rejection("timestamp, memory.used [MiB]\n2026/01/02 03:04:05.000, 1e305 MiB\n"),
            "log.csv line 2: column 2 (\"memory.used [MiB]\"): \"1e305 MiB\" is not a memory size");
  EXPECT_EQ(rejection("timestamp, power.draw [W]\n2026/01/02 03:04:05.000, 1\xff W\n"),
            "log.csv line 2: column 2 (\"power.draw [W]\"): \"1\xEF\xBF\xBD W\" is not a number");
  EXPECT_EQ(rejection(std::string("timestamp, power.draw [W]\n") + std::string(kMaxLineBytes + 1, 'x') + "\n"),
            "log.csv line 2: the line is longer than the limit of 1048576 bytes");
}

TEST(ImportNvidiaSmi, RecognisesHeaders) {
  EXPECT_TRUE(looks_like_nvidia_smi_csv(kUnitsHeader));
  EXPECT_TRUE(looks_like_nvidia_smi_csv("\xEF\xBB\xBFtimestamp, power.draw [W]\r"));
  EXPECT_TRUE(looks_like_nvidia_smi_csv("clocks_throttle_reasons.active"));
  EXPECT_FALSE(looks_like_nvidia_smi_csv(R"({"type":"header","version":1})"));
  EXPECT_FALSE(looks_like_nvidia_smi_csv("t,power_watts"));
  EXPECT_FALSE(looks_like_nvidia_smi_csv(""));
}

// 2 GPUs x 600 rows at 100 ms, generated with known values, come back exactly.
std::string generated_csv(bool units) {
  auto u = [&](const char* s) { return units ? std::string(" ") + s : std::string(); };
  std::string csv = kUnitsHeader;
  for (int r = 0; r < 600; ++r) {
    const int ms = r * 100;
    for (int g = 0; g < 2; ++g) {
      csv += fmt::format(
          "2026/11/29 18:{:02}:{:02}.{:03}, {}, {}{}, {}{}, {}{}, 143771{}, {:.2f}{}, {}, {}{}, 1980{}, 0x{:016x}\n",
          45 + ms / 60000, ms / 1000 % 60, ms % 1000, g, (r + g) % 101, u("%"), r % 50, u("%"), r * 10 + g, u("MiB"),
          u("MiB"), 100.0 + r * 0.25 + g, u("W"), 30 + r % 40, 900 + r, u("MHz"), u("MHz"),
          static_cast<unsigned>(r % 8) << g);
    }
  }
  return csv;
}

TEST(ImportNvidiaSmi, GeneratedTwoGpusRoundTrip) {
  for (bool units : {true, false}) {
    auto t = parse(generated_csv(units));
    ASSERT_TRUE(t.ok()) << t.error().message();
    ASSERT_EQ(t->gpus.size(), 2u);
    EXPECT_EQ(t->header.start_unix_ns, 1'795'977'900'000'000'000);
    EXPECT_NEAR(t->duration_s, 59.9, 1e-9);
    for (const auto& m : t->header.metrics) EXPECT_EQ(m.period_ms, 100) << m.name;
    for (std::size_t g = 0; g < 2; ++g) {
      const auto& gt = t->gpus[g];
      EXPECT_EQ(t->header.gpus[g].index, static_cast<int>(g));
      EXPECT_EQ(t->header.gpus[g].memory_total_bytes, 143771ull * 1048576);
      for (Metric m :
           {Metric::kGpuUtilizationPercent, Metric::kMemoryUtilizationPercent, Metric::kMemoryUsedBytes,
            Metric::kPowerWatts, Metric::kGpuTemperatureCelsius, Metric::kSmClockMhz, Metric::kClockEventReasonsMask})
        ASSERT_EQ(gt.metric(m).size(), 600u) << gpu::info(m).name;
      for (int r = 0; r < 600; ++r) {
        const auto k = static_cast<std::size_t>(r);
        const int gi = static_cast<int>(g);
        ASSERT_NEAR(gt.metric(Metric::kPowerWatts).t[k], r * 0.1, 1e-6);
        ASSERT_EQ(gt.metric(Metric::kGpuUtilizationPercent).v[k], (r + gi) % 101);
        ASSERT_EQ(gt.metric(Metric::kMemoryUtilizationPercent).v[k], r % 50);
        ASSERT_EQ(gt.metric(Metric::kMemoryUsedBytes).v[k], (r * 10 + gi) * 1048576.0);
        ASSERT_DOUBLE_EQ(gt.metric(Metric::kPowerWatts).v[k], 100.0 + r * 0.25 + gi);
        ASSERT_EQ(gt.metric(Metric::kGpuTemperatureCelsius).v[k], 30 + r % 40);
        ASSERT_EQ(gt.metric(Metric::kSmClockMhz).v[k], 900 + r);
        ASSERT_EQ(gt.metric(Metric::kClockEventReasonsMask).v[k], static_cast<double>((r % 8) << gi));
      }
    }
  }
}

// Fixed-seed mutations of a valid CSV: never a crash, only ok or kBadInput, sane when ok.
std::string mutate_csv(const std::string& in, std::mt19937_64& rng) {
  static const std::vector<std::string> kTokens = {"\n",
                                                   ",",
                                                   ", ",
                                                   " ",
                                                   "[N/A]",
                                                   "N/A",
                                                   "0x",
                                                   "0xffffffffffffffffff",
                                                   "-1",
                                                   "1e999",
                                                   "nan",
                                                   "4096",
                                                   "W",
                                                   " MiB",
                                                   "\r\n",
                                                   "\xff",
                                                   "2026/02/29 25:61:61.9999999999",
                                                   "timestamp",
                                                   "index",
                                                   "power.draw [W]",
                                                   ""};
  std::string s = in;
  auto pick = [&](std::size_t n) {
    return n == 0 ? std::size_t{0} : std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
  };
  const int steps = 1 + static_cast<int>(pick(4));
  for (int k = 0; k < steps; ++k) {
    switch (pick(5)) {
      case 0:
        if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1u << pick(8));
        break;
      case 1: s.insert(pick(s.size() + 1), kTokens[pick(kTokens.size())]); break;
      case 2: {
        if (s.empty()) break;
        const std::size_t at = pick(s.size());
        s.erase(at, 1 + pick(std::min<std::size_t>(24, s.size() - at)));
        break;
      }
      case 3: s.resize(pick(s.size() + 1)); break;
      default: {
        const std::size_t at = s.find_first_of("0123456789", pick(s.size() + 1));
        if (at != std::string::npos) s.replace(at, 1, kTokens[pick(kTokens.size())]);
        break;
      }
    }
  }
  return s;
}

TEST(ImportNvidiaSmi, TwoThousandMutationsOnlyAcceptOrReject) {
  std::string seed = kUnitsHeader;
  for (int r = 0; r < 6; ++r)
    for (int g = 0; g < 2; ++g)
      seed += fmt::format(
          "2026/11/29 18:45:48.{}66, {}, {} %, 0 %, 0 MiB, 143771 MiB, 81.31 W, 27, 900 MHz, 1980 MHz, "
          "0x0000000000000001\n",
          r, g, r * 10);
  std::mt19937_64 rng(20261129);
  std::size_t accepted = 0;
  for (int i = 0; i < 2000; ++i) {
    const std::string input = mutate_csv(seed, rng);
    (void)looks_like_nvidia_smi_csv(input.substr(0, input.find('\n')));
    auto t = parse_nvidia_smi_csv(input, "m.csv");
    if (!t.ok()) {
      ASSERT_EQ(t.error().kind(), core::ErrorKind::kBadInput) << t.error().message();
      ASSERT_EQ(t.error().message().rfind("m.csv", 0), 0u) << t.error().message();
      continue;
    }
    ++accepted;
    ASSERT_EQ(t->gpus.size(), t->header.gpus.size());
    ASSERT_LE(t->gpus.size(), kMaxGpus);
    for (const auto& g : t->gpus)
      for (const auto& s : g.metrics) {
        ASSERT_EQ(s.t.size(), s.v.size());
        for (std::size_t k = 0; k < s.size(); ++k) {
          ASSERT_TRUE(std::isfinite(s.v[k]));
          ASSERT_GE(s.t[k], -1.0);
          ASSERT_LE(s.t[k], t->duration_s);
          if (k > 0) {
            ASSERT_LE(s.t[k - 1], s.t[k]);
          }
        }
      }
  }
  EXPECT_GT(accepted, 100u);
}

}  // namespace
}  // namespace gpudoc::telemetry
