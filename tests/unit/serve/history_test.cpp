// serve::History: the window handed to the sliding diagnosis (times relative to its start, only
// what lies inside, events and XID counts), pruning and the per-series bound, and the dashboard's
// grid (means per cell, null where no sample fell).
#include "serve/history.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace gpudoc::serve {
namespace {

using telemetry::SamplerRecord;
constexpr std::int64_t kSecond = 1'000'000'000;
constexpr std::int64_t kT0 = 1'800'000'000 * kSecond;  // a whole second

gpu::DeviceInfo device(int index) {
  gpu::DeviceInfo d;
  d.index = index;
  d.name = "NVIDIA H200";
  return d;
}

SamplerRecord samples(int gpu, gpu::Metric m, std::int64_t t, double v) {
  SamplerRecord r;
  r.kind = SamplerRecord::Kind::kSamples;
  r.gpu = gpu;
  r.samples = {{m, v, t}};
  return r;
}

SamplerRecord xid(int gpu, std::int64_t t, std::uint64_t code) {
  SamplerRecord r;
  r.kind = SamplerRecord::Kind::kEvent;
  r.gpu = gpu;
  r.time_unix_ns = t;
  r.event_kind = "xid";
  r.event_fields = {{"code", code}};
  return r;
}

TEST(History, WindowIsRelativeToItsStartAndHoldsOnlyItsSpan) {
  History h({device(0), device(3)}, std::chrono::seconds(600));
  for (int s = 0; s < 100; ++s) h.apply(samples(3, gpu::Metric::kPowerWatts, kT0 + s * kSecond, 100.0 + s));
  h.apply(samples(3, gpu::Metric::kPowerWatts, kT0 + 50 * kSecond + kSecond / 2, 555));  // late, out of order
  h.apply(samples(7, gpu::Metric::kPowerWatts, kT0, 1));                                 // not our GPU
  h.apply(xid(3, kT0 + 95 * kSecond, 79));
  h.apply(xid(3, kT0 + 10 * kSecond, 79));
  telemetry::TraceHeader header;
  header.gpus = {device(0), device(3)};
  const auto t = h.window(header, kT0 + 99 * kSecond, 20);
  EXPECT_EQ(t.header.start_unix_ns, kT0 + 79 * kSecond);
  ASSERT_EQ(t.gpus.size(), 2u);
  EXPECT_TRUE(t.gpus[0].metric(gpu::Metric::kPowerWatts).empty());
  const auto& p = t.gpus[1].metric(gpu::Metric::kPowerWatts);
  ASSERT_EQ(p.size(), 21u);  // 79..99 s
  EXPECT_DOUBLE_EQ(p.t.front(), 0.0);
  EXPECT_DOUBLE_EQ(p.v.front(), 179.0);
  EXPECT_DOUBLE_EQ(p.t.back(), 20.0);
  ASSERT_EQ(t.events.size(), 1u);  // the XID at 95 s, not the one at 10 s
  EXPECT_EQ(t.events[0].gpu, 1);   // a position in the header's list
  EXPECT_DOUBLE_EQ(t.events[0].t, 16.0);
  EXPECT_DOUBLE_EQ(*t.first_sample_s, 0.0);
  const auto all = h.window(header, kT0 + 99 * kSecond, 200);
  const auto& q = all.gpus[1].metric(gpu::Metric::kPowerWatts);
  ASSERT_EQ(q.size(), 101u);
  EXPECT_TRUE(std::is_sorted(q.t.begin(), q.t.end()));  // the late sample went to its place
  EXPECT_DOUBLE_EQ(q.v[51], 555.0);
  const auto x = h.xids();
  ASSERT_EQ(x.size(), 1u);
  EXPECT_EQ(x[0].gpu, 3);
  EXPECT_EQ(x[0].xid, 79);
  EXPECT_EQ(x[0].count, 2u);                         // counted since the start, pruned or not
  EXPECT_EQ(x[0].last_unix_ns, kT0 + 95 * kSecond);  // the newest, whatever order they came in
}

TEST(History, PruneAndTheBoundPerSeries) {
  History h({device(0)}, std::chrono::seconds(60));
  const auto n = static_cast<std::int64_t>(kMaxPointsPerSeries) + 500;
  for (std::int64_t i = 0; i < n; ++i) h.apply(samples(0, gpu::Metric::kSmClockMhz, kT0 + i * kSecond / 1000, 1980));
  telemetry::TraceHeader header;
  header.gpus = {device(0)};
  const std::int64_t end = kT0 + (n - 1) * kSecond / 1000;
  EXPECT_EQ(h.window(header, end, 3600).gpus[0].metric(gpu::Metric::kSmClockMhz).size(), kMaxPointsPerSeries);
  h.prune(end + 55 * kSecond);  // keeps the last 60 s: 5 s of it had samples
  EXPECT_EQ(h.window(header, end + 55 * kSecond, 3600).gpus[0].metric(gpu::Metric::kSmClockMhz).size(), 5001u);
  h.prune(end + 120 * kSecond);
  EXPECT_TRUE(h.window(header, end + 120 * kSecond, 3600).gpus[0].metric(gpu::Metric::kSmClockMhz).empty());
}

TEST(History, JsonGridHasMeansAndNulls) {
  History h({device(0)}, std::chrono::seconds(600));
  // Utilization 20 then 40 in the cell [t0+8, t0+8.5), nothing in the next, 90 in the last.
  h.apply(samples(0, gpu::Metric::kGpuUtilizationPercent, kT0 + 8 * kSecond + kSecond / 10, 20));
  h.apply(samples(0, gpu::Metric::kGpuUtilizationPercent, kT0 + 8 * kSecond + kSecond / 5, 40));
  h.apply(samples(0, gpu::Metric::kGpuUtilizationPercent, kT0 + 9 * kSecond + kSecond / 10, 90));
  h.apply(samples(0, gpu::Metric::kEnergyJoules, kT0 + 9 * kSecond, 5));  // not a plotted metric
  const auto j = h.to_json(kT0 + 9 * kSecond + kSecond / 5, 10);
  EXPECT_DOUBLE_EQ(j["step_s"].get<double>(), 0.5);
  const auto& g = j["gpus"][0];
  EXPECT_EQ(g["gpu"], 0);
  const auto& t = g["t"];
  const auto& u = g["series"]["gpu_utilization_percent"];
  ASSERT_EQ(t.size(), 20u);
  ASSERT_EQ(u.size(), 20u);
  EXPECT_DOUBLE_EQ(t.back().get<double>(), 1'800'000'009.0);
  EXPECT_DOUBLE_EQ(u[19].get<double>(), 90.0);
  EXPECT_TRUE(u[18].is_null());
  EXPECT_DOUBLE_EQ(u[17].get<double>(), 30.0);
  EXPECT_FALSE(g["series"].contains("energy_joules"));
  EXPECT_FALSE(g["series"].contains("power_watts"));  // no samples: no series
  // A long span: at most kMaxHistoryPoints cells, on whole half-seconds.
  const auto wide = h.to_json(kT0 + 9 * kSecond, 600);
  EXPECT_LE(wide["gpus"][0]["t"].size(), kMaxHistoryPoints);
  EXPECT_DOUBLE_EQ(wide["step_s"].get<double>(), 1.0);
}

}  // namespace
}  // namespace gpudoc::serve
