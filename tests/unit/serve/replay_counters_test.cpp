// `gpudoc trace counters` without a GPU: a real H200 trace's counters, scrape by scrape, end where
// serve::Accounting ends over the same windows (built here from a History fed the whole trace at
// once), every series' timestamps increase and its values never fall, each starts at 0, the text
// parses (the Prometheus client's strict OpenMetrics parser, promtool's backfill and its dump of
// the blocks), label values are escaped, and what cannot be exported is refused.
#include "serve/replay_counters.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "serve/accounting.hpp"
#include "serve/history.hpp"
#include "serve/service.hpp"
#include "support/temp_dir.hpp"
#include "telemetry/trace.hpp"

namespace gpudoc::serve {
namespace {

telemetry::Trace bundled(const std::string& name) {
  auto t = telemetry::read_trace_file(std::string(GPUDOC_SOURCE_DIR) + "/tests/data/" + name);
  if (!t) throw std::runtime_error(t.error().message());
  return std::move(*t);
}

struct Point {
  double value = 0;
  double time_s = 0;
};

// series text ("name{labels}") -> its samples, in the order written; and the family lines.
struct Parsed {
  std::map<std::string, std::vector<Point>> series;
  std::vector<std::string> families;  // the names of the # TYPE lines
  bool ends_with_eof = false;
};

Parsed parse(const std::string& text) {
  Parsed p;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# TYPE ", 0) == 0) p.families.push_back(line.substr(7, line.find(' ', 7) - 7));
    if (line.empty() || line[0] == '#') continue;
    const std::size_t ts = line.rfind(' ');
    const std::size_t value = line.rfind(' ', ts - 1);
    p.series[line.substr(0, value)].push_back(
        {std::stod(line.substr(value + 1, ts - value - 1)), std::stod(line.substr(ts + 1))});
  }
  p.ends_with_eof = text.size() >= 6 && text.compare(text.size() - 6, 6, "# EOF\n") == 0;
  return p;
}

std::string labels_text(const AccountSeries& s, const std::string& extra = {}) {
  std::string out;
  for (const auto& [k, v] : s.labels) out += (out.empty() ? "" : ",") + k + "=\"" + escape_label_value(v) + "\"";
  if (!extra.empty()) out += "," + extra;
  return out;
}

// The last value of the exported series `name{labels,extra,instance="node-a"}`.
double last_exported(const Parsed& p, const std::string& name, const AccountSeries& s, const std::string& extra = {}) {
  const auto it = p.series.find(name + "{" + labels_text(s, extra) + ",instance=\"node-a\"}");
  if (it == p.series.end() || it->second.empty()) return -1;
  return it->second.back().value;
}

// Serve's windows built another way: a History holding the whole trace at once, the same times.
std::vector<AccountSeries> accounting_over_windows(const telemetry::Trace& t, double window_s, double every_s,
                                                   double end_s) {
  History h(t.header.gpus, std::chrono::hours(24));
  for (std::size_t pos = 0; pos < t.gpus.size(); ++pos) {
    telemetry::SamplerRecord rec;
    rec.gpu = t.header.gpus[pos].index;
    for (std::size_t m = 0; m < gpu::kMetricCount; ++m)
      for (std::size_t i = 0; i < t.gpus[pos].metrics[m].size(); ++i)
        rec.samples.push_back({static_cast<gpu::Metric>(m), t.gpus[pos].metrics[m].v[i],
                               t.header.start_unix_ns + std::llround(t.gpus[pos].metrics[m].t[i] * 1e9)});
    h.apply(rec);
    telemetry::SamplerRecord procs;
    procs.kind = telemetry::SamplerRecord::Kind::kProcesses;
    procs.gpu = rec.gpu;
    for (const auto& pp : t.gpus[pos].processes) {
      procs.processes.push_back(pp.sample);
      procs.processes.back().time_unix_ns = t.header.start_unix_ns + std::llround(pp.t * 1e9);
    }
    h.apply(procs);
  }
  Accounting acc;
  for (double now = std::floor(window_s / 5); now <= end_s; now += every_s) {
    const telemetry::Trace w = h.window(t.header, t.header.start_unix_ns + std::llround(now * 1e9), window_s);
    if (w.first_sample_s) acc.add_window(w, diagnose_window(w, window_s), {});
  }
  (void)acc.series();  // the first scrape shows 0
  return acc.series();
}

TEST(ReplayCounters, EndWhereAccountingEndsOverTheSameWindows) {
  const telemetry::Trace t = bundled("allreduce_straggler_slow0.jsonl");  // two GPUs, one waiting
  const CounterReplayOptions o{.window_s = 10, .every_s = 1, .instance = "node-a"};
  auto scrapes = replay_counter_scrapes(t, o);
  ASSERT_TRUE(scrapes) << scrapes.error().message();
  ASSERT_GT(scrapes->size(), 30U);
  const double end_s = (scrapes->back().time_unix_s - static_cast<double>(t.header.start_unix_ns) / 1e9);
  const std::vector<AccountSeries> want = accounting_over_windows(t, 10, 1, end_s + 0.5);
  const Parsed p = parse(counters_openmetrics(*scrapes, o.instance));
  ASSERT_EQ(want.size(), 2U);
  std::size_t causes = 0;
  for (const AccountSeries& s : want) {
    EXPECT_GT(s.observed_s, 20);
    EXPECT_DOUBLE_EQ(last_exported(p, "gpudoc_gpu_observed_seconds_total", s), s.observed_s);
    EXPECT_DOUBLE_EQ(last_exported(p, "gpudoc_gpu_useful_seconds_total", s), s.useful_s);
    EXPECT_DOUBLE_EQ(last_exported(p, "gpudoc_gpu_unexplained_seconds_total", s), s.unexplained_s);
    double parts = s.useful_s + s.unexplained_s;
    for (const auto& [cause, v] : s.lost_s) {
      EXPECT_DOUBLE_EQ(last_exported(p, "gpudoc_gpu_lost_seconds_total", s, "id=\"" + cause + "\""), v) << cause;
      parts += v;
      causes += v > 0 ? 1 : 0;
    }
    EXPECT_NEAR(parts, s.observed_s, 1e-6);  // useful + causes + unexplained == observed
    ASSERT_TRUE(s.energy_j);
    EXPECT_DOUBLE_EQ(last_exported(p, "gpudoc_gpu_energy_joules_total", s), *s.energy_j);
  }
  EXPECT_GT(causes, 0U);  // the waiting GPU's loss is there
  // The last scrape is the counters standing still: the same as the one before.
  const auto& last = scrapes->back().series;
  const auto& before = (*scrapes)[scrapes->size() - 2].series;
  ASSERT_EQ(last.size(), before.size());
  for (std::size_t i = 0; i < last.size(); ++i) EXPECT_EQ(last[i].observed_s, before[i].observed_s);
}

TEST(ReplayCounters, EachSeriesStartsAtZeroAndGrowsInTimeOrder) {
  const telemetry::Trace t = bundled("sawtooth_p1000_d50.jsonl");
  auto text = replay_counters(t, {.window_s = 10, .every_s = 2, .instance = "node-a", .start_unix_s = 1e9});
  ASSERT_TRUE(text) << text.error().message();
  const Parsed p = parse(*text);
  EXPECT_TRUE(p.ends_with_eof);
  ASSERT_GE(p.series.size(), 8U);  // time and energy: observed, useful, unexplained, a cause
  std::map<std::string, int> seen;
  for (const auto& f : p.families) EXPECT_EQ(++seen[f], 1) << f << " twice";
  for (const auto& [series, points] : p.series) {
    ASSERT_GE(points.size(), 2U) << series;
    EXPECT_EQ(points.front().value, 0) << series;  // Prometheus's increase() starts from its first sample
    for (std::size_t i = 1; i < points.size(); ++i) {
      EXPECT_GT(points[i].time_s, points[i - 1].time_s) << series;
      EXPECT_GE(points[i].value, points[i - 1].value) << series;
    }
    EXPECT_GE(points.front().time_s, 1e9 + 2);  // --start: the first diagnosis a fifth of the window in
  }
  EXPECT_DOUBLE_EQ(p.series.begin()->second.front().time_s, 1e9 + 2);
}

TEST(ReplayCounters, LabelValuesAreEscaped) {
  telemetry::Trace t = bundled("gemm_saturated.jsonl");
  t.header.gpus[0].name = "H200 \"x\" \\ y";
  auto text = replay_counters(t, {.window_s = 10, .every_s = 5, .instance = "rack \"1\"\nnode\\2"});
  ASSERT_TRUE(text) << text.error().message();
  EXPECT_NE(text->find(R"(name="H200 \"x\" \\ y")"), std::string::npos) << *text;
  EXPECT_NE(text->find(R"(instance="rack \"1\"\nnode\\2"})"), std::string::npos) << *text;
}

TEST(ReplayCounters, RefusesWhatItCannotExport) {
  telemetry::Trace t = bundled("idle.jsonl");
  auto bad_window = replay_counter_scrapes(t, {.window_s = 2.5});
  ASSERT_FALSE(bad_window);
  EXPECT_EQ(bad_window.error().kind(), core::ErrorKind::kUsage);
  auto bad_every = replay_counter_scrapes(t, {.every_s = 0});
  ASSERT_FALSE(bad_every);
  EXPECT_EQ(bad_every.error().kind(), core::ErrorKind::kUsage);
  telemetry::Trace far = t;
  far.gpus[0].metric(gpu::Metric::kPowerWatts).t.push_back(1e8);
  far.gpus[0].metric(gpu::Metric::kPowerWatts).v.push_back(100);
  auto too_long = replay_counter_scrapes(far, {});
  ASSERT_FALSE(too_long);
  EXPECT_EQ(too_long.error().kind(), core::ErrorKind::kBadInput);
  EXPECT_NE(too_long.error().message().find("scrapes x GPUs"), std::string::npos) << too_long.error().message();
  telemetry::Trace empty = t;
  for (auto& g : empty.gpus) g = {};
  auto none = replay_counter_scrapes(empty, {});
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().message(), "the trace has no samples");
}

struct Ran {
  int status = -1;
  std::string output;
};

Ran run(const std::string& cmd, const gpudoc::testing::TempDir& tmp) {
  const std::string out = tmp.file("command.out");
  const int rc = std::system((cmd + " > '" + out + "' 2>&1").c_str());
  std::ifstream o(out);
  std::stringstream ss;
  ss << o.rdbuf();
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, ss.str()};
}

// The reference tools on the text: the Prometheus client's strict OpenMetrics parser, and promtool
// backfilling it into blocks whose dump holds the counters' last values.
TEST(ReplayCounters, TheReferenceToolsReadTheText) {
  const telemetry::Trace t = bundled("allreduce_straggler_slow0.jsonl");
  auto text = replay_counters(t, {.window_s = 10, .every_s = 1, .instance = "node-a"});
  ASSERT_TRUE(text) << text.error().message();
  gpudoc::testing::TempDir tmp("gpudoc-replay-counters");
  const std::string in = tmp.file("counters.om");
  std::ofstream(in) << *text;
  bool ran = false;
  if (!std::string(GPUDOC_OM_PYTHON).empty()) {
    const Ran r = run(std::string("'") + GPUDOC_OM_PYTHON + "' '" + GPUDOC_SOURCE_DIR +
                          "/tests/unit/serve/openmetrics_check.py' openmetrics < '" + in + "'",
                      tmp);
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("gpudoc_gpu_observed_seconds counter seconds "), std::string::npos) << r.output;
    ran = true;
  }
  if (!std::string(GPUDOC_PROMTOOL).empty()) {
    const std::string blocks = tmp.file("blocks");
    const Ran made =
        run(std::string("'") + GPUDOC_PROMTOOL + "' tsdb create-blocks-from openmetrics '" + in + "' '" + blocks + "'",
            tmp);
    ASSERT_EQ(made.status, 0) << made.output;
    ASSERT_EQ(run("mkdir '" + blocks + "/wal'", tmp).status, 0);  // the dump reads a WAL folder too
    const Ran dump = run(std::string("'") + GPUDOC_PROMTOOL + "' tsdb dump '" + blocks + "'", tmp);
    ASSERT_EQ(dump.status, 0) << dump.output;
    const Parsed p = parse(*text);
    for (const auto& [series, points] : p.series) {
      if (series.rfind("gpudoc_gpu_observed_seconds_total{", 0) != 0) continue;
      const std::string last = fmt::format("{} {}\n", points.back().value, std::llround(points.back().time_s * 1000));
      EXPECT_NE(dump.output.find(last), std::string::npos) << series << " " << last;
    }
    ran = true;
  }
  if (!ran) GTEST_SKIP() << "neither promtool (Debian package prometheus) nor python3-prometheus-client found";
}

}  // namespace
}  // namespace gpudoc::serve
