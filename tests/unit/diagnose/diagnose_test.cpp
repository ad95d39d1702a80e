// The classifier on synthetic traces: every finding, start-up skipping, windows and pattern
// changes, missing signals (lower confidence, `unseen`), and bad input (never a crash).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>

#include "diagnose/diagnose.hpp"
#include "synth.hpp"

namespace gpudoc::diagnose {
namespace {

using findings::Finding;
using findings::Severity;
using gpu::Metric;
using testing::constant;
using testing::fill;
using testing::fill_gpu;
using testing::make_trace;
using testing::Shape;
using testing::square;

const Finding* find(const Diagnosis& d, const std::string& id) {
  for (const Finding& f : d.findings)
    if (f.id == id) return &f;
  return nullptr;
}

double evidence(const Finding& f, const std::string& name) {
  for (const auto& e : f.evidence)
    if (e.name == name) return e.value;
  ADD_FAILURE() << "no evidence " << name << " in " << f.id;
  return NAN;
}

std::vector<std::string> warning_ids(const Diagnosis& d) {
  std::vector<std::string> ids;
  for (const Finding& f : d.findings)
    if (f.severity >= Severity::kWarning) ids.push_back(f.id);
  return ids;
}

Shape busy_gemm() {
  Shape s;
  s.util = constant(99);
  s.sm = constant(96);
  s.tensor = constant(93);
  s.dram = constant(17);
  s.power = constant(690);
  s.mutil = constant(24);
  return s;
}

Diagnosis run(const telemetry::Trace& t) { return diagnose(t, Options{}); }

TEST(Diagnose, Idle) {
  auto t = make_trace(1);
  fill_gpu(t, 0, 0, 20, Shape{});
  const auto d = run(t);
  const Finding* f = find(d, "idle");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kInfo);
  EXPECT_TRUE(warning_ids(d).empty());
  EXPECT_EQ(d.gpus.at(0).primary, "idle");
}

TEST(Diagnose, HealthyAndItsJson) {
  auto t = make_trace(1);
  fill_gpu(t, 0, 0, 20, busy_gemm());
  const auto d = run(t);
  ASSERT_NE(find(d, "healthy"), nullptr);
  EXPECT_TRUE(warning_ids(d).empty());
  const nlohmann::json j = to_json(d);
  EXPECT_EQ(j["findings"][0]["id"], "healthy");
  EXPECT_EQ(j["gpus"][0]["primary"], "healthy");
  EXPECT_NEAR(j["gpus"][0]["mean_utilization_percent"].get<double>(), 99, 1e-9);
  EXPECT_EQ(max_severity(d), Severity::kInfo);
}

TEST(Diagnose, SlowSawtoothReportsPeriodDutyLevelsAndLostTime) {
  auto t = make_trace(1);
  Shape s;
  s.util = square(2.0, 0.25, 100, 0);
  s.sm = square(2.0, 0.25, 95, 0);
  s.tensor = square(2.0, 0.25, 90, 0);
  s.power = square(2.0, 0.25, 600, 150);
  fill_gpu(t, 0, 0, 40, s);
  const auto d = run(t);
  const Finding* f = find(d, "sawtooth");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(evidence(*f, "period_s"), 2.0, 0.11);
  EXPECT_NEAR(evidence(*f, "duty_cycle_percent"), 25, 4);
  EXPECT_NEAR(evidence(*f, "peak_percent"), 100, 1);
  EXPECT_NEAR(evidence(*f, "trough_percent"), 0, 1);
  EXPECT_NEAR(evidence(*f, "gpu_time_lost_s"), 0.75 * 40, 3);
  EXPECT_EQ(f->severity, Severity::kCritical);  // idle 75 % of the time
  EXPECT_FALSE(f->details["below_sensor_resolution"].get<bool>());
}

TEST(Diagnose, FastSawtoothWithGpmIsSawtoothBelowSensorResolution) {
  auto t = make_trace(1);
  Shape s;  // what p100_d50 reads: a flat middle level with SM activity to match
  s.util = [](double x) { return 48 + 2 * std::sin(7 * x); };
  s.sm = constant(44);
  s.tensor = constant(43);
  s.dram = constant(10);
  s.power = constant(500);
  fill_gpu(t, 0, 0, 20, s);
  const auto d = run(t);
  const Finding* f = find(d, "sawtooth");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->details["below_sensor_resolution"].get<bool>());
  EXPECT_EQ(find(d, "plateau"), nullptr);
  EXPECT_EQ(find(d, "healthy"), nullptr);
  EXPECT_NE(f->next_steps.front().find("nsys"), std::string::npos);                // points to a profiler
  EXPECT_NE(f->next_steps.front().find("gpudoc profile -- "), std::string::npos);  // gpudoc's own first
}

TEST(Diagnose, FastSawtoothWithoutGpmUsesPowerAndLowersConfidence) {
  auto t = make_trace(1);
  Shape idle;
  idle.gpm = false;
  idle.power = constant(84);
  fill_gpu(t, 0, 0, 5, idle);  // start-up: establishes the idle power floor
  Shape s;
  s.gpm = false;
  s.util = constant(49);
  s.power = constant(500);
  fill_gpu(t, 0, 5, 25, s);
  const auto d = run(t);
  const Finding* f = find(d, "sawtooth");
  ASSERT_NE(f, nullptr);
  EXPECT_LT(f->confidence, 0.6);
  EXPECT_NE(std::find(d.unseen.begin(), d.unseen.end(), "GPM SM activity"), d.unseen.end());
}

TEST(Diagnose, LaunchBoundPlateau) {
  auto t = make_trace(1);
  Shape s;
  s.util = constant(18);
  s.power = constant(127);
  fill_gpu(t, 0, 0, 20, s);
  const auto d = run(t);
  const Finding* f = find(d, "plateau");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->details["kind"], "launch_bound");
  EXPECT_EQ(f->severity, Severity::kCritical);  // SM activity ~0
  EXPECT_NE(f->next_steps.front().find("reduce-overhead"), std::string::npos);
  EXPECT_NE(f->next_steps.front().find("gpudoc profile -- "), std::string::npos);  // whether a graph pays
}

// A low flat level whose busy time is copies: PCIe moves far more per unit of busy time than a
// loop that only computes. The GPU waits on its host's copies, not on launches.
// One GPU, GPM on, holding utilization, SM activity and power flat for 20 s.
telemetry::Trace flat_gpu(double util, double sm, double power_w) {
  auto t = make_trace(1);
  Shape s;
  s.util = constant(util);
  s.sm = constant(sm);
  s.power = constant(power_w);
  fill_gpu(t, 0, 0, 20, s);
  return t;
}

TEST(Diagnose, LowLevelWithHeavyPcieWaitsOnCopiesNotLaunches) {
  auto t = flat_gpu(12, 2.8, 133);
  fill(t, 0, Metric::kGpmPcieRxBytesPerSecond, 0, 20, 0.2, constant(4.4e9));
  fill(t, 0, Metric::kGpmPcieTxBytesPerSecond, 0, 20, 0.2, constant(0.3e9));
  const auto d = run(t);
  EXPECT_EQ(find(d, "plateau"), nullptr);
  const Finding* f = find(d, "sawtooth");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->details["cause"], "copies");
  EXPECT_NE(f->message.find("waits on copies"), std::string::npos) << f->message;
  EXPECT_NEAR(evidence(*f, "pcie_bytes_per_second"), 4.7e9, 1e6);
  EXPECT_NE(f->next_steps.front().find("non_blocking=True"), std::string::npos);
}

// Small kernels (SM activity half of util) with little PCIe: launches or host work between them,
// both named, the profiler named to decide; tiny ones (SM ~0) stay launch-bound.
TEST(Diagnose, SmallKernelsWithoutCopiesNameLaunchesAndHostWork) {
  const auto d = run(flat_gpu(13, 6, 131));
  const Finding* f = find(d, "plateau");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->details["kind"], "launch_bound");
  EXPECT_EQ(f->details["undecided_between"], nlohmann::json({"plateau", "sawtooth"}));
  EXPECT_NE(f->message.find("cannot tell launch gaps from host work"), std::string::npos) << f->message;
  EXPECT_NE(f->message.find("gpudoc profile -- "), std::string::npos);

  const auto d2 = run(flat_gpu(18, 0, 127));
  const Finding* g = find(d2, "plateau");
  ASSERT_NE(g, nullptr);
  EXPECT_FALSE(g->details.contains("undecided_between"));
}

TEST(Diagnose, BusyButIdlePlateauOnOneGpu) {
  auto t = make_trace(1);
  Shape s;
  s.util = constant(99);
  s.sm = constant(30);
  s.tensor = constant(10);
  s.dram = constant(3);
  s.power = constant(300);
  fill_gpu(t, 0, 0, 20, s);
  const auto d = run(t);
  const Finding* f = find(d, "plateau");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->details["kind"], "busy_but_idle");
  EXPECT_NEAR(evidence(*f, "mean_sm_activity_percent"), 30, 1e-9);
}

// Without GPM, utilization alone cannot tell a working chip from a kernel spinning in a wait:
// the board's power against its limit (recorded, or the model's) decides, else against the
// trace's idle floor, else it says saturation is not shown.
telemetry::Trace busy_without_gpm(double busy_power_w, bool idle_start, bool known_board) {
  auto t = make_trace(1);
  if (!known_board) {
    t.header.gpus[0].power_limit_default_watts.reset();
    t.header.gpus[0].name = "";
  }
  const double start = idle_start ? 5 : 0;
  if (idle_start) {
    Shape idle;
    idle.gpm = false;
    idle.power = constant(81);
    fill_gpu(t, 0, 0, start, idle);
  }
  Shape s;
  s.gpm = false;
  s.util = constant(99);
  s.mutil = constant(0);
  s.power = constant(busy_power_w);
  fill_gpu(t, 0, start, start + 20, s);
  return t;
}

TEST(Diagnose, BusyWithoutGpmSpinningBelowHalfTheLimitIsBusyButIdle) {
  const auto d = run(busy_without_gpm(180, false, true));
  EXPECT_EQ(find(d, "healthy"), nullptr);
  const Finding* f = find(d, "plateau");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->details["kind"], "busy_but_idle");
  EXPECT_NE(f->message.find("of its 700 W limit"), std::string::npos) << f->message;
}

TEST(Diagnose, BusyWithoutGpmDrawingMostOfTheLimitIsHealthy) {
  const auto d = run(busy_without_gpm(600, false, true));
  ASSERT_NE(find(d, "healthy"), nullptr);
  EXPECT_EQ(find(d, "plateau"), nullptr);
}

TEST(Diagnose, BusyWithoutGpmOrLimitIsJudgedAgainstTheIdleFloor) {
  const auto spinning = run(busy_without_gpm(180, true, false));
  EXPECT_EQ(find(spinning, "healthy"), nullptr);
  const Finding* f = find(spinning, "plateau");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->details["kind"], "busy_but_idle");
  EXPECT_NE(f->message.find("idle floor"), std::string::npos) << f->message;
  bool names_limit = false;
  for (const auto& c : f->caveats) names_limit = names_limit || c.find("power.limit") != std::string::npos;
  EXPECT_TRUE(names_limit);
  EXPECT_NE(find(run(busy_without_gpm(600, true, false)), "healthy"), nullptr);
}

TEST(Diagnose, BusyWithNothingToShowSaturationIsNotHealthy) {
  // No GPM, no limit, no model name, never idle: the power cannot be judged.
  const auto d = run(busy_without_gpm(600, false, false));
  EXPECT_EQ(find(d, "healthy"), nullptr);
  EXPECT_TRUE(warning_ids(d).empty());
  const Finding* f = find(d, "insufficient_data");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->message.find("cannot show whether the chip works or waits"), std::string::npos) << f->message;
  EXPECT_NE(f->next_steps.front().find("power.limit"), std::string::npos);
}

TEST(Diagnose, ModelNameGivesTheLimitWhenNoneWasLogged) {
  auto t = busy_without_gpm(180, false, false);
  t.header.gpus[0].name = "NVIDIA H200";
  const auto d = run(t);
  const Finding* f = find(d, "plateau");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->message.find("of its 700 W limit"), std::string::npos) << f->message;
}

TEST(Diagnose, MemoryBound) {
  auto t = make_trace(1);
  Shape s;
  s.util = constant(99);
  s.sm = constant(99);
  s.tensor = constant(0);
  s.dram = constant(91);
  s.mutil = constant(100);
  s.power = constant(600);
  fill_gpu(t, 0, 0, 20, s);
  const auto d = run(t);
  ASSERT_NE(find(d, "memory_bound"), nullptr);
  EXPECT_EQ(warning_ids(d), std::vector<std::string>{"memory_bound"});
}

TEST(Diagnose, PulseNamesStragglerAndWaitingGpu) {
  auto t = make_trace(2);
  Shape wait;
  wait.util = constant(99);
  wait.sm = constant(32);
  wait.tensor = constant(17);
  wait.dram = constant(4);
  wait.power = constant(300);
  fill_gpu(t, 0, 0, 20, wait);
  fill_gpu(t, 1, 0, 20, busy_gemm());
  const auto d = run(t);
  const Finding* f = find(d, "pulse");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->details["straggler"][0]["gpu"], 1);
  EXPECT_EQ(f->details["waiting"][0]["gpu"], 0);
  // It waits in every second of the span: the whole span is lost to waiting.
  EXPECT_NEAR(f->details["waiting_share"].get<double>(), 1.0, 0.06);
  EXPECT_EQ(f->severity, Severity::kCritical);
  EXPECT_EQ(warning_ids(d), std::vector<std::string>{"pulse"});  // no plateau on the waiting GPU
}

TEST(Diagnose, BalancedGpusAreNoPulse) {
  auto t = make_trace(2);
  fill_gpu(t, 0, 0, 20, busy_gemm());
  fill_gpu(t, 1, 0, 20, busy_gemm());
  const auto d = run(t);
  EXPECT_EQ(find(d, "pulse"), nullptr);
  EXPECT_EQ(d.gpus.at(1).primary, "healthy");
}

void add_process(telemetry::Trace& t, int g, std::uint32_t pid, double t0, double t1, double period,
                 const std::function<double(double)>& f) {
  for (double x = t0; x < t1; x += period) {
    telemetry::ProcessPoint p;
    p.t = x;
    p.sample.pid = pid;
    p.sample.name = "python3";
    p.sample.sm_utilization_percent = f(x);
    t.gpus[static_cast<std::size_t>(g)].processes.push_back(p);
  }
}

TEST(Diagnose, StaircaseTakingTurns) {
  auto t = make_trace(1);
  fill_gpu(t, 0, 0, 30, busy_gemm());
  add_process(t, 0, 100, 0, 30, 0.2, square(4, 0.5, 99, 0));
  add_process(t, 0, 200, 0, 30, 0.2, [](double x) { return std::fmod(x, 4) < 2 ? 0.0 : 99.0; });
  const auto d = run(t);
  const Finding* f = find(d, "staircase");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->details["mode"], "turns");
  EXPECT_LT(f->details["correlation"].get<double>(), -0.9);
  EXPECT_NEAR(evidence(*f, "max_loses_share"), 0.5, 0.05);
  EXPECT_EQ(find(d, "healthy"), nullptr);  // contention, not health
}

TEST(Diagnose, StaircaseFromSparseSamplesHasLowerConfidence) {
  auto t = make_trace(1);
  fill_gpu(t, 0, 0, 30, busy_gemm());
  add_process(t, 0, 100, 0, 30, 5, constant(50));
  add_process(t, 0, 200, 0, 30, 5, constant(48));
  const auto d = run(t);
  const Finding* f = find(d, "staircase");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->details["mode"], "unknown");
  EXPECT_LT(f->confidence, 0.8);
}

TEST(Diagnose, MemoryGrowthRateAndTimeToExhaustion) {
  auto t = make_trace(1);
  fill_gpu(t, 0, 0, 30, Shape{});
  const double step = 512.0 * 1024 * 1024;
  fill(t, 0, Metric::kMemoryUsedBytes, 0, 30, 0.1, [&](double x) { return 1e9 + step * std::floor(x); });
  const auto d = run(t);
  const Finding* f = find(d, "memory_growth");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(evidence(*f, "growth_rate_bytes_per_second"), step, step * 0.05);
  const double eta = f->details["time_to_exhaustion_s"].get<double>();
  EXPECT_NEAR(eta, (150754820096.0 - (1e9 + 29 * step)) / step, 20);
  EXPECT_EQ(f->severity, Severity::kCritical);  // full within the hour
}

TEST(Diagnose, MemoryThatIsReleasedIsNoGrowth) {
  auto t = make_trace(1);
  fill_gpu(t, 0, 0, 30, Shape{});
  fill(t, 0, Metric::kMemoryUsedBytes, 0, 30, 0.1, [](double x) { return std::fmod(x, 4) < 2 ? 2e9 : 8e9; });
  EXPECT_EQ(find(run(t), "memory_growth"), nullptr);
}

TEST(Diagnose, ThrottledPowerCapIsInfoThermalIsWarning) {
  auto t = make_trace(1);
  fill_gpu(t, 0, 0, 20, busy_gemm());
  fill(t, 0, Metric::kClockEventReasonsMask, 0, 20, 0.1, constant(0x4));
  fill(t, 0, Metric::kSmClockMhz, 0, 20, 0.1, constant(1470));
  auto d = run(t);
  const Finding* f = find(d, "throttled");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kInfo);

  auto t2 = make_trace(1);
  fill_gpu(t2, 0, 0, 20, busy_gemm());
  fill(t2, 0, Metric::kClockEventReasonsMask, 0, 20, 0.1, square(2, 0.3, 0x40, 0));
  d = run(t2);
  f = find(d, "throttled");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_NEAR(evidence(*f, "thermal_or_hw_share"), 0.3, 0.05);
  EXPECT_EQ(f->details["reasons"][0], "hw_thermal_slowdown");
}

// The power-cap bit with the board far below its limit on average: short peaks reach the limit;
// the board is not said to be at it.
TEST(Diagnose, ThrottledPowerCapFarBelowTheLimitSaysPeaksNotTheBoard) {
  auto t = make_trace(1);
  Shape s = busy_gemm();
  s.power = constant(301);
  fill_gpu(t, 0, 0, 20, s);
  fill(t, 0, Metric::kClockEventReasonsMask, 0, 20, 0.1, constant(0x4));
  fill(t, 0, Metric::kSmClockMhz, 0, 20, 0.1, constant(1700));
  const auto d = run(t);
  const Finding* f = find(d, "throttled");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kInfo);
  EXPECT_EQ(f->message.find("the board is at its power limit"), std::string::npos) << f->message;
  EXPECT_NE(f->message.find("301 W of its 700 W limit"), std::string::npos) << f->message;
  EXPECT_NEAR(evidence(*f, "power_while_throttled_watts"), 301, 1e-9);

  auto at_limit = make_trace(1);
  fill_gpu(at_limit, 0, 0, 20, busy_gemm());  // 690 W
  fill(at_limit, 0, Metric::kClockEventReasonsMask, 0, 20, 0.1, constant(0x4));
  fill(at_limit, 0, Metric::kSmClockMhz, 0, 20, 0.1, constant(1470));
  const auto d2 = run(at_limit);
  const Finding* g = find(d2, "throttled");
  ASSERT_NE(g, nullptr);
  EXPECT_NE(g->message.find("the board is at its power limit"), std::string::npos) << g->message;
}

TEST(Diagnose, ThrottledWithLoweredPowerLimitIsWarning) {
  auto t = make_trace(1);
  fill_gpu(t, 0, 0, 20, busy_gemm());
  fill(t, 0, Metric::kClockEventReasonsMask, 0, 20, 0.1, constant(0x4));
  fill(t, 0, Metric::kPowerLimitWatts, 0, 20, 1.0, constant(400));
  const auto d = run(t);
  const Finding* f = find(d, "throttled");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_TRUE(f->details["power_limit_lowered"].get<bool>());
}

TEST(Diagnose, SkipsStartUpBeforeTheFirstWork) {
  auto t = make_trace(1);
  fill_gpu(t, 0, 0, 6, Shape{});  // python/torch import: idle
  Shape burst = busy_gemm();      // warm-up, then the pattern
  fill_gpu(t, 0, 6, 6.8, burst);
  Shape s;
  s.util = constant(18);
  s.power = constant(127);
  fill_gpu(t, 0, 6.8, 30, s);
  const auto d = run(t);
  ASSERT_NE(find(d, "plateau"), nullptr);
  EXPECT_EQ(find(d, "idle"), nullptr);
  EXPECT_NEAR(d.gpus.at(0).analysed_from_s, 7.0, 0.2);
  ASSERT_FALSE(d.notes.empty());
  EXPECT_NE(d.notes.front().find("start-up"), std::string::npos);

  Options o;
  o.skip_start_s = 0;  // asked to keep everything
  EXPECT_NEAR(diagnose(t, o).gpus.at(0).analysed_from_s, 0, 1e-9);
}

TEST(Diagnose, LongTracesAreWindowedAndReportPatternChanges) {
  Shape s;  // 120 s healthy, then 120 s of a 1 s sawtooth
  s.util = square(1.0, 0.5, 100, 0);
  s.sm = square(1.0, 0.5, 95, 0);
  s.tensor = square(1.0, 0.5, 90, 0);
  auto t2 = make_trace(1);
  fill_gpu(t2, 0, 0, 120, busy_gemm());
  auto t3 = make_trace(1);
  fill_gpu(t3, 0, 120, 240, s);
  for (std::size_t m = 0; m < gpu::kMetricCount; ++m) {
    auto& a = t2.gpus[0].metrics[m];
    const auto& b = t3.gpus[0].metrics[m];
    a.t.insert(a.t.end(), b.t.begin(), b.t.end());
    a.v.insert(a.v.end(), b.v.begin(), b.v.end());
  }
  t2.duration_s = 240;
  Options o;
  o.window_s = 60;
  const auto d = diagnose(t2, o);
  ASSERT_EQ(d.changes.size(), 1u);
  EXPECT_EQ(d.changes[0].from, "healthy");
  EXPECT_EQ(d.changes[0].to, "sawtooth");
  EXPECT_NEAR(d.changes[0].t_s, 120, 1);
  const Finding* f = find(d, "sawtooth");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->window.start_s, 120, 1);
  EXPECT_NEAR(evidence(*f, "period_s"), 1.0, 0.11);
}

// ---- bad input: a clear result, never a crash ------------------------------------------------

TEST(BadInput, NoGpus) {
  telemetry::Trace t;
  const auto d = run(t);
  ASSERT_NE(find(d, "insufficient_data"), nullptr);
  EXPECT_NE(find(d, "insufficient_data")->message.find("no GPU"), std::string::npos);
}

TEST(BadInput, GpuWithoutSamples) {
  const auto d = run(make_trace(2));
  ASSERT_NE(find(d, "insufficient_data"), nullptr);
  EXPECT_EQ(d.gpus.size(), 2u);
  EXPECT_EQ(d.gpus[0].primary, "insufficient_data");
}

TEST(BadInput, OneSample) {
  auto t = make_trace(1);
  fill(t, 0, Metric::kGpuUtilizationPercent, 0, 0.1, 0.2, constant(50));
  const auto d = run(t);
  ASSERT_NE(find(d, "insufficient_data"), nullptr);
  EXPECT_TRUE(warning_ids(d).empty());
}

TEST(BadInput, OnlyPowerNoUtilizationOrGpm) {
  auto t = make_trace(1);
  fill(t, 0, Metric::kPowerWatts, 0, 20, 0.1, constant(300));
  const auto d = run(t);
  ASSERT_NE(find(d, "insufficient_data"), nullptr);
  EXPECT_NE(std::find(d.unseen.begin(), d.unseen.end(), "GPU utilization"), d.unseen.end());
}

TEST(BadInput, NanValuesAreSkipped) {
  auto t = make_trace(1);
  fill_gpu(t, 0, 0, 20, busy_gemm());
  auto& u = t.gpus[0].metric(Metric::kGpuUtilizationPercent);
  for (std::size_t i = 0; i < u.v.size(); i += 3) u.v[i] = NAN;
  const auto d = run(t);
  ASSERT_NE(find(d, "healthy"), nullptr);
  EXPECT_NEAR(*d.gpus[0].mean_utilization_percent, 99, 1e-9);
}

TEST(BadInput, OutOfOrderTimestamps) {
  auto t = make_trace(1);
  Shape s;
  s.util = square(2.0, 0.5, 100, 0);
  s.sm = square(2.0, 0.5, 95, 0);
  fill_gpu(t, 0, 0, 30, s);
  for (auto& m : t.gpus[0].metrics) {
    std::reverse(m.t.begin(), m.t.end());
    std::reverse(m.v.begin(), m.v.end());
  }
  const auto d = run(t);
  const Finding* f = find(d, "sawtooth");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(evidence(*f, "period_s"), 2.0, 0.11);
}

TEST(BadInput, GapsAreNotReadAsZero) {
  auto t = make_trace(1);
  fill_gpu(t, 0, 0, 10, busy_gemm());
  fill_gpu(t, 0, 40, 50, busy_gemm());  // 30 s with no samples at all
  const auto d = run(t);
  ASSERT_NE(find(d, "healthy"), nullptr);
  EXPECT_EQ(find(d, "idle"), nullptr);
  EXPECT_EQ(find(d, "sawtooth"), nullptr);
}

TEST(BadInput, InfiniteAndNegativeTimesDoNotCrash) {
  auto t = make_trace(1);
  fill_gpu(t, 0, 0, 10, busy_gemm());
  auto& u = t.gpus[0].metric(Metric::kGpuUtilizationPercent);
  u.t.push_back(INFINITY);
  u.v.push_back(50);
  u.t.push_back(-1);
  u.v.push_back(INFINITY);
  const auto d = run(t);
  EXPECT_FALSE(d.findings.empty());
}

// ---- memory and time follow the samples, not the span ----------------------------------------
// Each diagnosis here takes ~1 ms; a grid over the span took GBs and minutes. The seconds are a hang
// guard only (10 s: 1000x the normal time); the speed of diagnosis is tests/perf/diagnose_speed.cpp.
constexpr double kSpanHangGuardSeconds = 10.0;

double seconds_of(const std::function<void()>& f) {
  const auto a = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
}

TEST(Span, TwoSamplesYearsApartAreTwoSamples) {
  // Before: a 0.1 s grid over the 10^8 s between them (10^9 cells per signal, GBs and growing).
  auto t = make_trace(4);  // three GPUs without a single sample
  for (Metric m : {Metric::kGpuUtilizationPercent, Metric::kGpmSmActivityPercent, Metric::kPowerWatts}) {
    fill(t, 0, m, 0.1, 0.2, 1, constant(97));
    fill(t, 0, m, 1e8, 1e8 + 0.1, 1, constant(3));
  }
  Diagnosis d;
  EXPECT_LT(seconds_of([&] { d = run(t); }), kSpanHangGuardSeconds);  // hang guard (above)
  ASSERT_EQ(d.gpus.size(), 4u);
  EXPECT_EQ(d.gpus[0].primary, "insufficient_data");
  ASSERT_NE(find(d, "insufficient_data"), nullptr);
  // As one recording it makes no sense: the CLI refuses it, naming the silence.
  const auto ok = check_diagnosable(t, "bomb.jsonl");
  ASSERT_FALSE(ok.ok());
  EXPECT_EQ(ok.error().kind(), core::ErrorKind::kBadInput);
  EXPECT_EQ(
      ok.error().message(),
      "bomb.jsonl: no sample from t = 0.1 s to t = 100000000.0 s (1157.4 days): one trace is not silent for more "
      "than 7 days; this is two recordings joined, or a clock that jumped (split the file at the gap and diagnose "
      "each part)");
}

TEST(Span, GapsOfDaysAreGapsNotGrids) {
  auto t = make_trace(2);
  fill_gpu(t, 0, 0, 30, busy_gemm());
  fill_gpu(t, 1, 0, 30, busy_gemm());
  fill_gpu(t, 0, 3 * 86400, 3 * 86400 + 30, busy_gemm());
  Diagnosis d;
  EXPECT_LT(seconds_of([&] { d = run(t); }), kSpanHangGuardSeconds);  // hang guard (above)
  EXPECT_TRUE(check_diagnosable(t, "x").ok());
  // Healthy where there is data, twice on GPU 0; the three days between are a gap, not idle.
  std::size_t healthy0 = 0;
  for (const auto& f : d.findings)
    if (f.id == "healthy" && f.gpus == std::vector<int>{0}) ++healthy0;
  EXPECT_EQ(healthy0, 2u);
  EXPECT_EQ(find(d, "idle"), nullptr);
  ASSERT_EQ(d.changes.size(), 3u);  // GPU 0: healthy -> gap -> healthy; GPU 1: healthy -> gap
  EXPECT_EQ(d.changes[0].to, "insufficient_data");
  EXPECT_EQ(d.changes[1].to, "healthy");
  EXPECT_NEAR(d.changes[1].t_s, 3 * 86400, 60);
}

TEST(Span, WindowsShorterThanACellAreBounded) {
  auto t = make_trace(1);
  fill_gpu(t, 0, 0, 20, busy_gemm());
  Options o;
  o.window_s = 1e-9;  // before: 2e10 windows, std::bad_alloc
  Diagnosis d;
  EXPECT_LT(seconds_of([&] { d = diagnose(t, o); }), kSpanHangGuardSeconds);  // hang guard (above)
  ASSERT_NE(find(d, "insufficient_data"), nullptr);  // a 0.1 s window holds too little to conclude
}

// ---- The classes seen on real jobs ----------------------------------------------------------------

// A ResNet fed by too few workers: a burst every 0.5 s lights one 200 ms reading in ~3 at 15 %
// (mean ~4 %), the process holds GiBs. Not idle: a starved loop, critical, with the time lost.
TEST(DiagnoseRealJobs, StarvedLoopIsSawtoothNotIdle) {
  auto t = make_trace(1);
  Shape s;
  s.util = square(0.6, 0.34, 12, 0);
  s.sm = square(0.6, 0.34, 9, 0);
  s.power = constant(145);
  fill_gpu(t, 0, 0, 30, s);
  fill(t, 0, Metric::kMemoryUsedBytes, 0, 30, 1.0, constant(5.3e9));
  const auto d = run(t);
  const Finding* f = find(d, "sawtooth");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(find(d, "idle"), nullptr);
  EXPECT_EQ(f->severity, Severity::kCritical);
  EXPECT_GT(evidence(*f, "gpu_time_lost_share"), 0.9);
  EXPECT_GT(evidence(*f, "gpu_time_lost_s"), 25);
}

// Bursts of a service every 2 s that never fill the GPU (util 50 % inside them, 0 between): the
// sensor resolves the period, so period and duty are read from the curve, and what the bursts
// themselves use is said; the time lost counts the unfilled bursts too.
// 30 s of bursts every `period` seconds, half of it at 50 % utilization (40 % SM), 2 % between.
Diagnosis unfilled_bursts(double period) {
  auto t = make_trace(1);
  Shape s;
  s.util = square(period, 0.5, 50, 2);
  s.sm = square(period, 0.5, 40, 1);
  s.power = constant(300);
  fill_gpu(t, 0, 0, 30, s);
  return run(t);
}

TEST(DiagnoseRealJobs, UnfilledBurstsWithAResolvedPeriodSayPeriodDutyAndLevel) {
  const auto d = unfilled_bursts(2.0);
  const Finding* f = find(d, "sawtooth");
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(f->details["below_sensor_resolution"].get<bool>());
  EXPECT_FALSE(f->details["bursts_saturate"].get<bool>());
  EXPECT_NEAR(evidence(*f, "period_s"), 2.0, 0.2);
  EXPECT_NEAR(evidence(*f, "duty_cycle_percent"), 50, 8);
  EXPECT_NEAR(evidence(*f, "gpu_time_lost_share"), 0.74, 0.05);  // 1 - mean util (26 %)
  EXPECT_NE(f->message.find("bursts themselves reach only"), std::string::npos) << f->message;
  ASSERT_FALSE(f->next_steps.empty());
  EXPECT_NE(f->next_steps.front().find("batch more work per burst"), std::string::npos);
}

// The same level alternating every 0.4 s (two samples): the sensor cannot resolve it.
TEST(DiagnoseRealJobs, UnfilledBurstsFasterThanTheSensorAreBelowResolution) {
  const auto d = unfilled_bursts(0.4);
  const Finding* f = find(d, "sawtooth");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->details["below_sensor_resolution"].get<bool>());
}

// A checkpoint of 0.5 s every 5 s loses ~10 %: say so, at info (CI gates on warning stay quiet).
TEST(DiagnoseRealJobs, SmallLossIsInfo) {
  auto t = make_trace(1);
  Shape s = busy_gemm();
  s.util = square(5.0, 0.9, 99, 0);
  s.sm = square(5.0, 0.9, 90, 0);
  fill_gpu(t, 0, 0, 40, s);
  const auto d = run(t);
  const Finding* f = find(d, "sawtooth");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kInfo);
  EXPECT_NEAR(evidence(*f, "gpu_time_lost_share"), 0.1, 0.05);
  EXPECT_NEAR(evidence(*f, "period_s"), 5.0, 0.5);
  EXPECT_TRUE(warning_ids(d).empty());
}

// ~9 s of nothing, then a context appears at the end: nothing ever worked: idle.
TEST(DiagnoseRealJobs, LateContextWithoutWorkIsIdle) {
  auto t = make_trace(1);
  Shape s;
  s.power = [](double x) { return x < 7 ? 79.0 : 122.0; };
  fill_gpu(t, 0, 0, 9, s);
  fill(t, 0, Metric::kMemoryUsedBytes, 0, 9, 1.0, [](double x) { return x < 7 ? 0.6e9 : 1.6e9; });
  const auto d = run(t);
  EXPECT_NE(find(d, "idle"), nullptr);
  EXPECT_EQ(find(d, "insufficient_data"), nullptr);
}

// A straggler every few seconds (one rank checkpoints): the other GPU spins in the all-reduce
// (util 99 %, SM 18 %) while the straggler idles; a pulse with the share of time spent waiting.
TEST(DiagnoseRealJobs, IntermittentStragglerIsPulse) {
  auto t = make_trace(2);
  const auto in_ckpt = [](double x) { return std::fmod(x, 6.0) >= 4.0; };
  Shape waiting = busy_gemm(), straggler = busy_gemm();
  waiting.util = [=](double x) { return in_ckpt(x) ? 99.0 : 85.0; };
  waiting.sm = [=](double x) { return in_ckpt(x) ? 18.0 : 62.0; };
  straggler.util = [=](double x) { return in_ckpt(x) ? 3.0 : 85.0; };
  straggler.sm = [=](double x) { return in_ckpt(x) ? 0.0 : 62.0; };
  fill_gpu(t, 0, 0, 30, straggler);
  fill_gpu(t, 1, 0, 30, waiting);
  const auto d = run(t);
  const Finding* f = find(d, "pulse");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->details["straggler"][0]["gpu"], 0);
  EXPECT_EQ(f->details["waiting"][0]["gpu"], 1);
  EXPECT_NEAR(f->details["waiting_share"].get<double>(), 1.0 / 3, 0.1);
}

// The CSV form of a host-side straggler: no GPM; the waiting GPU is busy at a fifth of its board's
// limit, the straggler nearly idle at the same power. Power against the limit tells them apart.
TEST(DiagnoseRealJobs, HostStragglerWithoutGpmIsPulseByPowerLimit) {
  auto t = make_trace(2);
  Shape waiting, straggler;
  waiting.gpm = straggler.gpm = false;
  waiting.util = constant(63);
  waiting.power = constant(173);
  straggler.util = constant(8);
  straggler.power = constant(171);
  fill_gpu(t, 0, 0, 30, straggler);
  fill_gpu(t, 1, 0, 30, waiting);
  for (int g = 0; g < 2; ++g) fill(t, g, Metric::kPowerLimitWatts, 0, 30, 1.0, constant(700));
  const auto d = run(t);
  const Finding* f = find(d, "pulse");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->details["straggler"][0]["gpu"], 0);
  EXPECT_EQ(f->details["waiting"][0]["gpu"], 1);
  EXPECT_EQ(find(d, "healthy"), nullptr);
}

// Memory climbs the whole run, then the process exits and frees it in the last second: growth.
TEST(DiagnoseRealJobs, LeakReleasedAtExitIsGrowth) {
  auto t = make_trace(1);
  fill_gpu(t, 0, 0, 30, busy_gemm());
  fill(t, 0, Metric::kMemoryUsedBytes, 0, 30, 1.0, [](double x) { return x < 29 ? 1.8e9 + x * 0.45e9 : 0.6e9; });
  const auto d = run(t);
  const Finding* f = find(d, "memory_growth");
  ASSERT_NE(f, nullptr);
  EXPECT_GT(evidence(*f, "released_at_end_bytes"), 1e10);
}

// The power-cap bit in a quarter of the samples at 1965 of 1980 MHz: no clock lost, no finding.
TEST(DiagnoseRealJobs, PowerCapBitWithoutClockLossIsNotThrottled) {
  auto t = make_trace(1);
  fill_gpu(t, 0, 0, 30, busy_gemm());
  fill(t, 0, Metric::kClockEventReasonsMask, 0, 30, 0.1, [](double x) { return std::fmod(x, 1.0) < 0.25 ? 4.0 : 0.0; });
  fill(t, 0, Metric::kSmClockMhz, 0, 30, 0.1, constant(1965));
  EXPECT_EQ(find(run(t), "throttled"), nullptr);
  // Held at 1500 MHz: throttled, with the clock lost.
  auto u = make_trace(1);
  fill_gpu(u, 0, 0, 30, busy_gemm());
  fill(u, 0, Metric::kClockEventReasonsMask, 0, 30, 0.1, constant(4));
  fill(u, 0, Metric::kSmClockMhz, 0, 30, 0.1, constant(1500));
  const auto d = run(u);
  const Finding* f = find(d, "throttled");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(evidence(*f, "clock_lost_share"), 1 - 1500.0 / 1980, 1e-6);
}

// A steady 60 % with the board at 80 % of its limit: power-bound, healthy; the same level at a
// third of the limit is a fast sawtooth.
TEST(DiagnoseRealJobs, SteadyLevelAtThePowerLimitIsHealthy) {
  auto t = make_trace(1);
  Shape s = busy_gemm();
  s.util = constant(60);
  s.sm = constant(56);
  s.power = constant(560);
  fill_gpu(t, 0, 0, 30, s);
  EXPECT_NE(find(run(t), "healthy"), nullptr);
  auto u = make_trace(1);
  s.power = constant(230);
  fill_gpu(u, 0, 0, 30, s);
  EXPECT_NE(find(run(u), "sawtooth"), nullptr);
}

// Work ends 2.5 s before the trace does (teardown): left out, not a swing of the curve.
TEST(DiagnoseRealJobs, TeardownAfterTheLastWorkIsLeftOut) {
  auto t = make_trace(1);
  Shape s = busy_gemm();
  const auto work = [](double x) { return x < 27.5; };
  s.util = [=](double x) { return work(x) ? 99.0 : 0.0; };
  s.sm = [=](double x) { return work(x) ? 90.0 : 0.0; };
  fill_gpu(t, 0, 0, 30, s);
  const auto d = run(t);
  EXPECT_NE(find(d, "healthy"), nullptr);
  EXPECT_TRUE(warning_ids(d).empty());
  ASSERT_FALSE(d.notes.empty());
  EXPECT_NE(d.notes.front().find("teardown"), std::string::npos);
}

// Two processes whose per-process samples are 0.1 ms apart in spacing are still paired.
TEST(DiagnoseRealJobs, ContentionSeriesWithDifferentSpacingsAreAligned) {
  auto t = make_trace(1);
  fill_gpu(t, 0, 0, 40, busy_gemm());
  auto& procs = t.gpus[0].processes;
  for (double x = 0.0; x < 40; x += 0.2) {
    telemetry::ProcessPoint a;
    a.t = x;
    a.sample.pid = 100;
    a.sample.name = "train";
    a.sample.sm_utilization_percent = std::fmod(x, 4.0) < 2.0 ? 90.0 : 5.0;
    procs.push_back(a);
  }
  for (double x = 0.05; x < 40; x += 0.2001) {
    telemetry::ProcessPoint b;
    b.t = x;
    b.sample.pid = 200;
    b.sample.name = "other";
    b.sample.sm_utilization_percent = std::fmod(x, 4.0) < 2.0 ? 5.0 : 90.0;
    procs.push_back(b);
  }
  std::sort(procs.begin(), procs.end(), [](const auto& p, const auto& q) { return p.t < q.t; });
  const auto d = run(t);
  const Finding* f = find(d, "staircase");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->details["mode"], "turns");
  EXPECT_LT(f->details["correlation"].get<double>(), -0.5);
}

}  // namespace
}  // namespace gpudoc::diagnose
