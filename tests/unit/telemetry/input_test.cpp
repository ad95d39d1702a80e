// The input layer: the line reader (blocks, bounded lines, /dev/zero ends at once), reading a
// trace as a stream with only some metrics kept, and the streaming statistics of `trace info`
// (gaps in time order whatever the order samples arrive in).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "telemetry/input.hpp"
#include "telemetry/trace.hpp"
#include "telemetry/trace_stats.hpp"
#include "trace_test_util.hpp"

namespace gpudoc::telemetry {
namespace {

using gpu::Metric;
using testing::header_line;
using testing::TempFile;

void write_to(const TempFile& f, const std::string& text) {
  std::ofstream out(f.path(), std::ios::binary);
  out << text;
}

std::vector<std::string> all_lines(LineReader& r, std::vector<bool>* terminated = nullptr) {
  std::vector<std::string> out;
  while (true) {
    auto l = r.next();
    EXPECT_TRUE(l.ok()) << l.error().message();
    if (!l.ok() || !*l) break;
    out.emplace_back(**l);
    if (terminated) terminated->push_back(r.terminated());
  }
  return out;
}

TEST(LineReader, ReadsLinesAcrossBlocksAsTheTextReaderDoes) {
  // Lines of every length around the 256 KiB block, the last one without a newline.
  std::string text;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 40; ++i)
    text +=
        std::string(std::uniform_int_distribution<std::size_t>(0, 200000)(rng), static_cast<char>('a' + i % 26)) + "\n";
  text += "last";
  TempFile f;
  write_to(f, text);
  auto file = LineReader::open(f.path());
  ASSERT_TRUE(file.ok()) << file.error().message();
  auto mem = LineReader::of_text(text, "mem");
  std::vector<bool> tf, tm;
  auto a = all_lines(*file, &tf);
  auto b = all_lines(mem, &tm);
  EXPECT_EQ(a, b);
  ASSERT_EQ(a.size(), 41u);
  EXPECT_EQ(a.back(), "last");
  EXPECT_EQ(tf, tm);
  EXPECT_FALSE(tf.back());
  EXPECT_TRUE(tf.front());
  EXPECT_EQ(file->line_no(), 41u);
}

TEST(LineReader, UnreadGivesTheSameLineOnce) {
  auto r = LineReader::of_text("one\ntwo\n", "t");
  EXPECT_EQ(**r.next(), "one");
  r.unread();
  EXPECT_EQ(**r.next(), "one");
  EXPECT_EQ(**r.next(), "two");
  EXPECT_EQ(r.line_no(), 2u);
  EXPECT_FALSE(*r.next());
}

TEST(LineReader, ALineOverTheLimitIsAnErrorNamingFileAndLine) {
  const std::string ok(kMaxLineBytes, 'x');
  const std::string text = "a\n" + ok + "\n" + ok + "y\nb\n";
  TempFile f;
  write_to(f, text);
  for (int mode = 0; mode < 2; ++mode) {
    auto r = mode == 0 ? LineReader::open(f.path()).value() : LineReader::of_text(text, f.path());
    EXPECT_EQ(**r.next(), "a");
    EXPECT_EQ(r.next()->value().size(), kMaxLineBytes);
    auto bad = r.next();
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().kind(), core::ErrorKind::kBadInput);
    EXPECT_EQ(bad.error().message(), f.path() + " line 3: the line is longer than the limit of 1048576 bytes");
  }
}

TEST(LineReader, DevZeroEndsAtOnceWithAClearError) {
  const auto t0 = std::chrono::steady_clock::now();
  auto t = read_trace_file("/dev/zero");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().kind(), core::ErrorKind::kBadInput);
  EXPECT_EQ(t.error().message(), "/dev/zero line 1: the line is longer than the limit of 1048576 bytes");
  EXPECT_LT(s, 10.0);  // hang guard: normally ~0.01 s (1 MiB read); reading on would never end
  auto any = read_telemetry_file("/dev/zero");
  ASSERT_FALSE(any.ok());
  EXPECT_EQ(any.error().message(), "/dev/zero line 1: the line is longer than the limit of 1048576 bytes");
}

TEST(LineReader, MissingFilesAndDirectoriesAreIoErrorsNamingThePath) {
  auto missing = LineReader::open("/nonexistent/run.jsonl");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind(), core::ErrorKind::kIo);
  EXPECT_EQ(missing.error().message(), "reading /nonexistent/run.jsonl: No such file or directory");
  auto dir = read_trace_file("/");
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.error().message(), "reading /: Is a directory");
}

std::string three_lines() {
  return header_line(1) + R"({"type":"sample","t":0.5,"gpu":0,"energy_joules":10})"
                          "\n"
                          R"({"type":"sample","t":1,"gpu":0,"power_watts":300,"gpu_utilization_percent":50})"
                          "\n"
                          R"({"type":"process","t":1.5,"gpu":0,"pid":7})"
                          "\n"
                          R"({"type":"sample","t":2,"gpu":0,"memory_temperature_celsius":40})"
                          "\n";
}

TEST(ReadOptions, KeepsOnlyTheMetricsAskedForAndStillKnowsTheSampleSpan) {
  ReadOptions o;
  o.metrics.reset();
  o.metrics.set(gpu::index(Metric::kPowerWatts));
  o.processes = false;
  auto t = parse_trace(three_lines(), "run.jsonl", o);
  ASSERT_TRUE(t.ok()) << t.error().message();
  const auto& g = t->gpus[0];
  EXPECT_EQ(g.metric(Metric::kPowerWatts).v, std::vector<double>{300});
  EXPECT_TRUE(g.metric(Metric::kGpuUtilizationPercent).empty());
  EXPECT_TRUE(g.metric(Metric::kEnergyJoules).empty());
  EXPECT_TRUE(g.processes.empty());
  // The span of samples is the file's, kept metrics or not.
  EXPECT_EQ(t->first_sample_s, 0.5);
  EXPECT_EQ(t->last_sample_s, 2.0);
  // Everything is still validated.
  auto bad = parse_trace(header_line(1) + R"({"type":"sample","t":1,"gpu":0,"energy_joules":"x"})"
                                          "\n",
                         "run.jsonl", o);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(), R"(run.jsonl line 2: "energy_joules" must be a number)");
}

TEST(ReadOptions, AStreamedFileReadsAsTheSameTextInMemory) {
  std::string text = header_line(2);
  for (int i = 0; i < 20000; ++i)
    text += R"({"type":"sample","t":)" + std::to_string(i * 0.1) + R"(,"gpu":)" + std::to_string(i % 2) +
            R"(,"power_watts":)" + std::to_string(100 + i % 7) + "}\n";
  TempFile f;
  write_to(f, text);
  auto a = read_trace_file(f.path());
  auto b = parse_trace(text, f.path());
  ASSERT_TRUE(a.ok() && b.ok());
  for (std::size_t g = 0; g < 2; ++g) {
    EXPECT_EQ(a->gpus[g].metric(Metric::kPowerWatts).t, b->gpus[g].metric(Metric::kPowerWatts).t);
    EXPECT_EQ(a->gpus[g].metric(Metric::kPowerWatts).v, b->gpus[g].metric(Metric::kPowerWatts).v);
  }
  EXPECT_EQ(a->duration_s, b->duration_s);
}

// Gaps of a sorted copy, the obvious way: what trace info printed when it held the whole trace.
std::pair<std::size_t, double> sorted_gaps(std::vector<double> t, double threshold) {
  std::sort(t.begin(), t.end());
  std::size_t n = 0;
  double longest = 0;
  for (std::size_t i = 1; i < t.size(); ++i)
    if (t[i] - t[i - 1] > threshold) {
      ++n;
      longest = std::max(longest, t[i] - t[i - 1]);
    }
  return {n, longest};
}

TEST(TraceStats, GapsAreThoseOfTheSortedSeriesWhateverTheArrivalOrder) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 50; ++round) {
    std::vector<double> times;
    double t = 0;
    for (int i = 0; i < 200; ++i) {
      t += std::uniform_int_distribution<int>(0, 9)(rng) < 8 ? 0.1
                                                             : 0.1 * std::uniform_int_distribution<int>(0, 40)(rng);
      times.push_back(std::round(t * 10) / 10);
    }
    times.push_back(times[5]);  // a duplicate time
    std::shuffle(times.begin() + 20, times.end(), rng);
    Trace tr;
    tr.header.gpus.resize(1);
    tr.header.metrics.push_back({"power_watts", "W", "fast", 100});
    tr.gpus.resize(1);
    for (double x : times) {
      tr.gpus[0].metric(Metric::kPowerWatts).t.push_back(x);
      tr.gpus[0].metric(Metric::kPowerWatts).v.push_back(x);
    }
    const TraceStats s = trace_stats(tr);
    ASSERT_EQ(s.gpus[0].metrics.size(), 1u);
    const MetricStats& m = s.gpus[0].metrics[0];
    const auto [gaps, longest] = sorted_gaps(times, kGapPeriods * 0.1);
    EXPECT_EQ(m.gaps, gaps) << "round " << round;
    EXPECT_DOUBLE_EQ(m.longest_gap_s, longest);
    EXPECT_EQ(m.samples, times.size());
    const auto [lo, hi] = std::minmax_element(times.begin(), times.end());
    EXPECT_DOUBLE_EQ(*m.mean_interval_s, (*hi - *lo) / static_cast<double>(times.size() - 1));
    EXPECT_DOUBLE_EQ(m.min, *lo);
    EXPECT_DOUBLE_EQ(m.max, *hi);
  }
}

TEST(TraceStats, AFileIsSummarisedWithoutHoldingItAndSaysWhatWasDropped) {
  TempFile f;
  write_to(f, three_lines() + R"({"type":"event","t":3,"kind":"xid","gpu":0,"code":79})"
                              "\n"
                              R"({"type":"sample","t":3.5,"gp)");
  auto s = trace_stats_of_file(f.path());
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(s->format, InputFormat::kGpudocTrace);
  EXPECT_EQ(s->events.at("xid"), 1u);
  EXPECT_EQ(s->gpus[0].process_records, 1u);
  EXPECT_EQ(s->gpus[0].process_ids, 1u);
  EXPECT_DOUBLE_EQ(s->duration_s, 3);
  ASSERT_EQ(s->warnings.size(), 1u);
  EXPECT_EQ(s->warnings[0], f.path() +
                                " line 7: the recording was cut off in the middle of this line (28 bytes without a "
                                "newline): it is dropped; lines 1-6 are read");
}

}  // namespace
}  // namespace gpudoc::telemetry
