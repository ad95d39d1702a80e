// The fleet counters of gpudoc serve: sliding windows that overlap attribute each second once, the
// split closes exactly on each GPU, a finding's loss is taken at its rate, a series is 0 on its
// first scrape, a new holder starts new series, and the exposition names the counters.
#include "serve/accounting.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "cost/account.hpp"

namespace gpudoc::serve {
namespace {

using gpu::Metric;

constexpr std::int64_t kOrigin = 1'764'547'200'000'000'000;  // Unix ns of the timeline's t = 0

// The window [from, to] of a timeline sampled at 10 Hz: busy half of each second, 400 W, the energy
// counter at 400 J/s; a sawtooth over the whole window that lost `lost_share` of it on GPU 0.
struct Window {
  telemetry::Trace trace;
  std::vector<findings::Finding> found;
};

Window window(double from, double to, double lost_share = 0.3) {
  Window w;
  telemetry::Trace& t = w.trace;
  t.header.start_unix_ns = kOrigin + static_cast<std::int64_t>(std::llround(from * 1e9));
  gpu::DeviceInfo d;
  d.index = 0;
  d.uuid = "GPU-aaaa";
  d.name = "NVIDIA H200";
  d.compute_capability_major = 9;
  t.header.gpus = {d};
  t.gpus.resize(1);
  auto& g = t.gpus[0];
  for (long k = std::lround(from * 10); k <= std::lround(to * 10); ++k) {
    const double x = static_cast<double>(k) / 10 - from;
    g.metric(Metric::kGpuUtilizationPercent).t.push_back(x);
    g.metric(Metric::kGpuUtilizationPercent).v.push_back(k % 10 >= 1 && k % 10 <= 5 ? 100 : 0);
    g.metric(Metric::kPowerWatts).t.push_back(x);
    g.metric(Metric::kPowerWatts).v.push_back(400);
    g.metric(Metric::kEnergyJoules).t.push_back(x);
    g.metric(Metric::kEnergyJoules).v.push_back(400.0 * static_cast<double>(k) / 10);
  }
  t.first_sample_s = 0;
  t.last_sample_s = to - from;
  t.duration_s = to - from;
  findings::Finding f;
  f.id = "sawtooth";
  f.gpus = {0};
  f.window = {.start_s = 0, .end_s = to - from};
  f.evidence.push_back({.name = "gpu_time_lost_s", .value = lost_share * (to - from), .unit = "s", .how = "test"});
  w.found.push_back(f);
  return w;
}

double lost(const AccountSeries& s, const std::string& id) {
  for (const auto& [cause, v] : s.lost_s)
    if (cause == id) return v;
  return 0;
}

void expect_closes(const AccountSeries& s) {
  double parts = s.useful_s + s.unexplained_s, energy = 0;
  for (const auto& [cause, v] : s.lost_s) parts += v;
  EXPECT_NEAR(parts, s.observed_s, 1e-6);  // whole microseconds, added as seconds
  ASSERT_TRUE(s.energy_j && s.useful_energy_j && s.unexplained_energy_j);
  energy = *s.useful_energy_j + *s.unexplained_energy_j;
  for (const auto& [cause, v] : s.lost_energy_j) energy += v;
  EXPECT_NEAR(energy, *s.energy_j, 1e-3);  // whole millijoules
}

// Serve's windows: the last 120 s every 10 s, the first once 24 s are in.
void slide(Accounting& acc, double until, const std::map<int, LabelPairs>& holders = {}) {
  for (double now = 24; now <= until; now += 10) {
    const Window w = window(std::max(0.0, now - 120), now);
    acc.add_window(w.trace, w.found, holders);
  }
}

TEST(Accounting, OverlappingWindowsAttributeEachSecondOnceAndTheSplitCloses) {
  Accounting acc;
  slide(acc, 304);
  ASSERT_EQ(acc.series().size(), 1u);  // the first scrape: 0
  const auto s = acc.series();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_NEAR(s[0].observed_s, 304, 1e-6);               // 0..304 once, not 24 + 28 windows of 120 s
  EXPECT_NEAR(lost(s[0], "sawtooth"), 0.3 * 304, 1e-3);  // at its rate: 30 % of each second
  EXPECT_NEAR(s[0].useful_s, 152, 1e-3);                 // busy half the time, the loss from idle time
  EXPECT_NEAR(s[0].unexplained_s, 304 - 152 - 0.3 * 304, 1e-3);
  EXPECT_NEAR(*s[0].energy_j, 400.0 * 304, 1.0);  // the counter's difference
  expect_closes(s[0]);
  EXPECT_EQ(acc.attributed_until().at(0), kOrigin + 304'000'000'000);
}

TEST(Accounting, ADiagnosisWithoutNewReadingsAddsNothing) {
  Accounting acc;
  slide(acc, 64);
  const Window again = window(0, 64);
  acc.add_window(again.trace, again.found, {});
  (void)acc.series();
  EXPECT_NEAR(acc.series().at(0).observed_s, 64, 1e-6);
}

TEST(Accounting, ASeriesAndACauseShowZeroOnTheirFirstScrape) {
  Accounting acc;
  Window w = window(0, 30, 0);
  w.found.clear();
  acc.add_window(w.trace, w.found, {});
  auto first = acc.series();
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].observed_s, 0);
  EXPECT_EQ(*first[0].energy_j, 0);
  EXPECT_NEAR(acc.series()[0].observed_s, 30, 1e-6);
  const Window next = window(0, 40, 0.5);  // the sawtooth comes: its counter is new
  acc.add_window(next.trace, next.found, {});
  const auto shown = acc.series();
  EXPECT_EQ(lost(shown[0], "sawtooth"), 0);
  EXPECT_NEAR(shown[0].observed_s, 40, 1e-6);
  EXPECT_NEAR(lost(acc.series()[0], "sawtooth"), 0.5 * 10, 1e-3);  // 10 s of a window that lost half
}

TEST(Accounting, ANewHolderStartsNewSeriesAndTheOldKeepsItsCount) {
  Accounting acc;
  slide(acc, 64, {{0, {{"namespace", "ml"}, {"pod", "train-0"}}}});
  for (double now = 74; now <= 104; now += 10) {
    const Window w = window(now - 120 < 0 ? 0 : now - 120, now);
    acc.add_window(w.trace, w.found, {{0, {{"namespace", "ml"}, {"pod", "train-1"}}}});
  }
  (void)acc.series();
  const auto s = acc.series();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].labels.back().second, "train-0");
  EXPECT_NEAR(s[0].observed_s, 64, 1e-6);
  EXPECT_EQ(s[1].labels.back().second, "train-1");
  EXPECT_NEAR(s[1].observed_s, 40, 1e-6);
  EXPECT_EQ(s[0].labels.front(), (std::pair<std::string, std::string>{"gpu", "0"}));
}

TEST(Accounting, HolderLabelsAreTheKubeletsThenTheIdsEveryProcessShares) {
  GpuSnapshot g;
  g.attribution.pods = {{.namespace_name = "ml", .pod = "train-0", .container = "main"}};
  ProcessSnapshot a, b;
  a.pid = 1;
  a.slurm_job_id = b.slurm_job_id = "4213";
  a.container_id = "abc";
  b.container_id = "def";
  b.pid = 2;
  g.processes = {a, b};
  const LabelPairs l = holder_labels(g);
  ASSERT_EQ(l.size(), 4u);
  EXPECT_EQ(l[0], (std::pair<std::string, std::string>{"namespace", "ml"}));
  EXPECT_EQ(l[3], (std::pair<std::string, std::string>{"slurm_job_id", "4213"}));  // container ids differ
}

TEST(Accounting, TheExpositionNamesTheCountersWithTheirCause) {
  Accounting acc;
  slide(acc, 44);
  Snapshot s;
  (void)acc.series();
  s.accounts = acc.series();
  const std::string body = render(s, {});
  EXPECT_NE(body.find("# TYPE gpudoc_gpu_observed_seconds_total counter\n"
                      "gpudoc_gpu_observed_seconds_total{gpu=\"0\",uuid=\"GPU-aaaa\",name=\"NVIDIA H200\"} 44\n"),
            std::string::npos)
      << body;
  EXPECT_NE(
      body.find("gpudoc_gpu_lost_seconds_total{gpu=\"0\",uuid=\"GPU-aaaa\",name=\"NVIDIA H200\",id=\"sawtooth\"}"),
      std::string::npos);
  EXPECT_NE(body.find("gpudoc_gpu_lost_energy_joules_total{"), std::string::npos);
  EXPECT_NE(body.find("gpudoc_gpu_unexplained_energy_joules_total{"), std::string::npos);
}

}  // namespace
}  // namespace gpudoc::serve
