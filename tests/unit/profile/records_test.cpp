// profile::read_records: the lines the injection library writes, read back; a job cut short leaves
// a readable file; anything else malformed is an error naming the line.
#include "profile/records.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <tuple>

#include "profile/record_format.hpp"

namespace gpudoc::profile {
namespace {

core::Result<RecordSet> read(const std::string& text) { return read_records_text(text, "records-7.txt"); }

const std::string kHeader = "H\tgpudoc-profile\t1\t7\t130001\n";
const std::string kSampledHeader = "H\tgpudoc-profile\t2\t7\t1\n";  // format 2: O and F lines

TEST(Records, ReadsEveryKindAndNamesApiCalls) {
  auto set = read(kHeader +
                  "K\t100\t200\t0\t7\t11\t64\t1\t1\t128\t1\t1\t0\t_Z3fooPf\n"
                  "M\t300\t400\t0\t7\t12\t2\t3\t1\t4096\t0\n"
                  "S\t50\t60\t0\t7\t13\t512\t3\t0\n"
                  "C\tR\t211\tcudaLaunchKernel_v7000\n"
                  "R\t90\t95\t211\t11\t99\n"
                  "D\t91\t94\t307\t11\t99\n"
                  "Y\t401\t450\t3\t7\t14\n"
                  "G\t500\t900\t0\t7\t5\t15\n"
                  "N\t2\t1\t80\t99\tstep\\t1\t\n"
                  "N\t4\t1\t460\t99\t\t\n"
                  "X\tDROPPED\t17\n"
                  "W\tsomething\\nodd\n"
                  "E\t1000\t17\n");
  ASSERT_TRUE(set.ok()) << set.error().message();
  EXPECT_EQ(set->pid, 7u);
  ASSERT_EQ(set->kernels.size(), 1u);
  EXPECT_EQ(set->kernels[0].grid[0], 64);
  EXPECT_EQ(set->kernels[0].name, "_Z3fooPf");
  ASSERT_EQ(set->copies.size(), 2u);
  EXPECT_TRUE(set->copies[0].memset);  // sorted by start: the memset came first
  EXPECT_TRUE(set->copies[1].pageable());
  EXPECT_EQ(set->copies[1].bytes, 4096u);
  ASSERT_EQ(set->api_calls.size(), 2u);
  EXPECT_EQ(set->api_calls[0].name, "cudaLaunchKernel_v7000");
  EXPECT_EQ(set->api_calls[1].name, "cbid 307");  // a driver call whose name line is missing
  EXPECT_TRUE(set->api_calls[1].driver);
  ASSERT_EQ(set->ranges.size(), 1u);
  EXPECT_EQ(set->ranges[0].name, "step\t1");
  EXPECT_EQ(set->ranges[0].end_ns, 460u);
  EXPECT_EQ(set->dropped, 17u);
  ASSERT_EQ(set->warnings.size(), 1u);
  EXPECT_EQ(set->warnings[0], "something\nodd");
  EXPECT_TRUE(set->complete);
}

TEST(Records, RecordsOverTheFilesBoundAreCountedApartFromCuptisDrops) {
  // The library writes an X LIMIT line with each buffer after the bound (not only at exit, which a
  // program killed by a signal never reaches): the counts add up, and no E line is needed.
  auto set = read(kHeader +
                  "K\t100\t200\t0\t7\t11\t64\t1\t1\t128\t1\t1\t0\tk\n"
                  "X\tLIMIT\t1000\nX\tDROPPED\t5\nX\tLIMIT\t234\n");
  ASSERT_TRUE(set.ok()) << set.error().message();
  EXPECT_EQ(set->over_file_limit, 1234u);
  EXPECT_EQ(set->dropped, 5u);
  EXPECT_FALSE(set->complete);
}

TEST(Records, AJobKilledMidLineLeavesTheLinesBeforeIt) {
  auto set = read(kHeader + "K\t100\t200\t0\t7\t11\t64\t1\t1\t128\t1\t1\t0\tk\nK\t300\t4");
  ASSERT_TRUE(set.ok()) << set.error().message();
  EXPECT_EQ(set->kernels.size(), 1u);
  EXPECT_EQ(set->truncated_lines, 1u);
  EXPECT_FALSE(set->complete);
}

TEST(Records, AMalformedLineIsAnErrorNamingFileAndLine) {
  auto set = read(kHeader + "K\t100\tabc\t0\n");
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.error().kind(), core::ErrorKind::kBadInput);
  EXPECT_EQ(set.error().message(), "records-7.txt line 2: malformed 'K' record (4 fields)");
}

TEST(Records, AFileThatIsNotAProfileSaysSo) {
  auto set = read("hello\tworld\n");
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.error().message(), "records-7.txt line 1: not a record (the first field is not one letter)");
  auto empty = read("");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().message(), "records-7.txt: empty or not a gpudoc profile (no H line)");
  auto newer = read("H\tgpudoc-profile\t9\t7\t1\n");
  ASSERT_FALSE(newer.ok());
  EXPECT_EQ(
      newer.error().message(),
      fmt::format("records-7.txt line 1: format version 9 is newer than this gpudoc reads ({})", kRecordFormatVersion));
}

TEST(Records, EscapingRoundTrips) {
  std::string out;
  append_escaped(out, "a\tb\nc\\d\re");
  EXPECT_EQ(out, "a\\tb\\nc\\\\d\\re");
  EXPECT_EQ(unescape_field(out), "a\tb\nc\\d\re");
}

TEST(RecordedKinds, TheDefaultLeavesOutSynchronizationRecordsAndAListReplacesIt) {
  const auto d = RecordedKinds::parse(nullptr);
  EXPECT_TRUE(d.memcpy && d.memset && d.graph && d.marker && d.runtime && d.driver);
  EXPECT_FALSE(d.sync);
  EXPECT_FALSE(RecordedKinds::parse("").sync);
  const auto k = RecordedKinds::parse("sync,runtime,nonsense,");
  EXPECT_TRUE(k.sync && k.runtime);
  EXPECT_FALSE(k.memcpy || k.memset || k.graph || k.marker || k.driver);
  const auto none = RecordedKinds::parse("none");  // a name of nothing: kernels only
  EXPECT_FALSE(none.memcpy || none.runtime || none.driver || none.sync || none.marker);
}

TEST(Records, SamplingWindowsAreReadFromTheOAndFLines) {
  auto set = read(kSampledHeader + "O\t100\nF\t200\nO\t300\nF\t400\nO\t500\n");
  ASSERT_TRUE(set) << set.error().message();
  ASSERT_EQ(set->windows.size(), 3u);
  EXPECT_EQ(set->windows[0].start_ns, 100u);
  EXPECT_EQ(set->windows[0].end_ns, 200u);
  EXPECT_EQ(set->windows[1].start_ns, 300u);
  EXPECT_EQ(set->windows[2].end_ns, UINT64_MAX);  // still open when the records end
  EXPECT_FALSE(read(fmt::format("H\tgpudoc-profile\t{}\t7\t1\n", kRecordFormatVersion + 1)));
}

// The windows come out in time order and disjoint, which the analysis's look-ups rely on: an O line
// while a window is open (the library never writes one) closes that window there.
TEST(Records, AnOpenWindowEndsWhereTheNextOneOpens) {
  auto set = read(kSampledHeader + "O\t100\nO\t300\nF\t400\n");
  ASSERT_TRUE(set) << set.error().message();
  ASSERT_EQ(set->windows.size(), 2u);
  EXPECT_EQ(set->windows[0].end_ns, 300u);
  EXPECT_EQ(set->windows[1].start_ns, 300u);
  EXPECT_EQ(set->windows[1].end_ns, 400u);
  EXPECT_EQ(set->windows[1].end_by(350), 350u);  // no record after 350: traced up to there
  const TraceWindow open{500, UINT64_MAX};
  EXPECT_EQ(open.end_by(800), 800u);  // open: where the records end
  EXPECT_EQ(open.end_by(200), 500u);  // nothing recorded after it opened
}

// The library stamps O and F lines from CUPTI's clock, which never goes back: a window that closes
// before it opens, or opens before the last one closed, is not a file it wrote (the analysis looks
// windows up by time), and the error names the line.
TEST(Records, AWindowGoingBackInTimeIsAnErrorNamingTheLine) {
  for (const auto& [lines, line, why] : {std::tuple{"O\t300\nF\t100\n", 3, "closes at 100, before it opened at 300"},
                                         std::tuple{"O\t100\nF\t200\nO\t150\n", 4, "before the last one closed at 200"},
                                         std::tuple{"O\t300\nO\t100\n", 3, "before the last one opened at 300"}}) {
    auto set = read(kSampledHeader + lines);
    ASSERT_FALSE(set) << lines;
    EXPECT_EQ(set.error().kind(), core::ErrorKind::kBadInput);
    EXPECT_NE(set.error().message().find(fmt::format("records-7.txt line {}: a sampling window", line)),
              std::string::npos)
        << set.error().message();
    EXPECT_NE(set.error().message().find(why), std::string::npos) << set.error().message();
  }
  EXPECT_TRUE(read(kSampledHeader + "O\t100\nF\t200\nO\t200\nF\t200\n"));  // equal times are fine
}

// CUPTI's forced flush at a window's end hands back a kernel still running with no end time (0), and
// its records may carry no start either: such records are counted and left out, not read as spans
// reaching back to the epoch.
TEST(Records, KernelsAndCopiesWithoutValidTimesAreCountedAndLeftOut) {
  auto set = read(kHeader +
                  "K\t100\t200\t0\t7\t11\t64\t1\t1\t128\t1\t1\t0\t_Z3fooPf\n"
                  "K\t300\t0\t0\t7\t12\t64\t1\t1\t128\t1\t1\t0\t_Z3fooPf\n"
                  "K\t0\t0\t0\t7\t13\t64\t1\t1\t128\t1\t1\t0\t_Z3fooPf\n"
                  "M\t500\t0\t0\t7\t14\t2\t3\t1\t4096\t0\n"
                  "S\t0\t60\t0\t7\t15\t512\t3\t0\n"
                  "S\t70\t80\t0\t7\t16\t512\t3\t0\n");
  ASSERT_TRUE(set) << set.error().message();
  EXPECT_EQ(set->kernels.size(), 1u);
  EXPECT_EQ(set->copies.size(), 1u);
  EXPECT_EQ(set->untimed, 4u);
}

// A span that ends before it starts, with both times there, is no record CUPTI writes (a kernel still
// running has no end at all, above): the file is refused naming the line, not explained as "still
// running". So is a span of more than a day: CUPTI's clock cannot have measured a 1.8e18 ns kernel.
TEST(Records, ASpanEndingBeforeItStartsOrLastingOverADayIsAnErrorNamingTheLine) {
  const std::string good = "K\t100\t200\t0\t7\t11\t64\t1\t1\t128\t1\t1\t0\tk\n";
  const std::pair<std::string, std::string> cases[] = {
      {"K\t500\t400\t0\t7\t12\t64\t1\t1\t128\t1\t1\t0\tk\n", "a kernel that ends (400) before it starts (500)"},
      {"M\t500\t400\t0\t7\t14\t2\t3\t1\t4096\t0\n", "a copy that ends (400) before it starts (500)"},
      {"S\t500\t400\t0\t7\t15\t512\t3\t0\n", "a memset that ends (400) before it starts (500)"},
      {"R\t500\t400\t211\t11\t99\n", "a runtime API call that ends (400) before it starts (500)"},
      {"D\t500\t400\t211\t11\t99\n", "a driver API call that ends (400) before it starts (500)"},
      {"Y\t500\t400\t3\t7\t11\n", "a synchronization that ends (400) before it starts (500)"},
      {"G\t500\t400\t0\t7\t3\t11\n", "a graph launch that ends (400) before it starts (500)"},
      {"N\t2\t1\t500\t99\tstep\t\nN\t4\t1\t400\t99\t\t\n", "an NVTX range that ends (400) before it starts (500)"},
      {"K\t1000\t1800000000000001000\t0\t7\t12\t64\t1\t1\t128\t1\t1\t0\tk\n",
       "a kernel 1800000000000000000 ns long (over a day)"},
      {"R\t1\t86400000000002\t211\t11\t99\n", "a runtime API call 86400000000001 ns long (over a day)"},
  };
  for (const auto& [line, why] : cases) {
    auto set = read(kHeader + good + line);
    ASSERT_FALSE(set.ok()) << line;
    EXPECT_EQ(set.error().kind(), core::ErrorKind::kBadInput);
    const std::string at = line.rfind("N", 0) == 0 ? "4" : "3";  // an NVTX range ends at its end marker
    EXPECT_EQ(set.error().message(), "records-7.txt line " + at + ": " + why) << line;
  }
  // A day exactly is still a record.
  EXPECT_TRUE(read(kHeader + "K\t1\t86400000000001\t0\t7\t12\t64\t1\t1\t128\t1\t1\t0\tk\n").ok());
}

// The file's limits (kRecordsInput, here smaller) end the reading with an error naming the line: too
// many lines (blank ones count), a line too long, too many bytes.
TEST(Records, TheInputsLimitsEndTheReadingNamingTheLine) {
  const std::string line = "R\t90\t95\t211\t11\t99\n";
  std::string four = kHeader;
  for (int i = 0; i < 3; ++i) four += line;
  const core::InputLimits limits{.max_bytes = 1000, .max_line_bytes = 40, .max_lines = 4, .what = "CUPTI records"};
  EXPECT_TRUE(read_records_text(four, "r.txt", limits).ok());
  auto lines = read_records_text(four + "\n", "r.txt", limits);
  ASSERT_FALSE(lines.ok());
  EXPECT_EQ(lines.error().message(), "r.txt line 5: more than 4 lines, the limit for CUPTI records");
  auto wide = read_records_text(kHeader + "W\t" + std::string(40, 'x') + "\n", "r.txt", limits);
  ASSERT_FALSE(wide.ok());
  EXPECT_EQ(wide.error().message(), "r.txt line 2: the line is longer than the limit of 40 bytes");
  EXPECT_EQ(kRecordsInput.max_lines, 5'000'000u);
  EXPECT_EQ(kRecordsInput.max_line_bytes, 64u << 10);
  EXPECT_EQ(kRecordsInput.max_bytes, 1ULL << 30);
}

// The library writes each problem once; a file of endless W lines keeps the first kMaxWarnings.
TEST(Records, WarningsBeyondTheFirstHundredAreCounted) {
  std::string text = kHeader;
  for (int i = 0; i < 250; ++i) text += "W\tsomething went wrong\n";
  auto set = read(text);
  ASSERT_TRUE(set.ok()) << set.error().message();
  ASSERT_EQ(set->warnings.size(), kMaxWarnings + 1);
  EXPECT_EQ(set->warnings.back(), "150 more warnings (W lines) left out");
}

TEST(SampleWindows, OnlyTwoWholePositiveMillisecondCountsParse) {
  SampleWindows w;
  ASSERT_TRUE(SampleWindows::parse("2000:18000", w));
  EXPECT_EQ(w.on_ms, 2000u);
  EXPECT_EQ(w.off_ms, 18000u);
  for (const char* bad : {"", "2000", ":1", "1:", "0:5", "5:0", "1.5:2", "-1:2", "1:2:3", "abc:1", "1234567890:1"})
    EXPECT_FALSE(SampleWindows::parse(bad, w)) << bad;
  EXPECT_FALSE(SampleWindows::parse(nullptr, w));
}

}  // namespace
}  // namespace gpudoc::profile
