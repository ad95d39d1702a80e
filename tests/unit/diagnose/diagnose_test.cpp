// The classifier on synthetic traces: every finding (one table of shapes, kShapeCases), start-up
// skipping, windows and pattern changes, missing signals (lower confidence, `unseen`), and bad
// input (never a crash).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

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

// ---- one table: a synthetic trace of a shape, and what its diagnosis must say -----------------
// Each row builds a trace from spans of a Shape on a GPU (and metrics beyond the shape) and lists
// the checks on the diagnosis; a new case is one row. Every check names the finding it reads.

using Fn = std::function<double(double)>;
using Ids = std::vector<std::string>;

struct Span {  // GPU `gpu` follows `shape` from t0 to t1 (s)
  int gpu;
  double t0, t1;
  Shape shape;
};
struct Fill {  // a metric beyond the shape's: GPU `gpu`, from t0 to t1, every period_s
  int gpu;
  Metric metric;
  double t0, t1, period_s;
  Fn f;
};
struct Near {  // an evidence name, or a JSON pointer into the details: value within tolerance
  std::string key;
  double value, tolerance;
};
struct Above {  // an evidence name: above value
  std::string key;
  double value;
};

struct ShapeCase {
  std::string name;  // the test's name
  // The trace.
  std::vector<Span> spans;
  std::vector<Fill> fills = {};
  int gpus = 1;
  bool logged_limit = true;           // the header has the board's default power limit
  std::string model = "NVIDIA H200";  // the header's model name
  // The finding that must be there (none when empty); the checks below read it.
  std::string finding = "";
  std::optional<Severity> severity = {};
  std::vector<std::pair<std::string, nlohmann::json>> details = {};  // JSON pointer -> value
  std::vector<std::string> details_absent = {};                      // keys the details lack
  std::vector<Near> details_near = {};
  std::vector<Near> evidence_near = {};
  std::vector<Above> evidence_above = {};
  std::optional<double> confidence_below = {};
  std::vector<std::string> message_has = {}, message_lacks = {};
  std::vector<std::string> first_step_has = {};  // in its first next step
  std::vector<std::string> caveat_has = {};      // each in one of its caveats
  // The diagnosis as a whole.
  std::vector<std::string> absent = {};                   // findings that must not be there
  std::optional<Ids> warnings = {};                       // exactly these at warning or above
  std::vector<std::pair<int, std::string>> primary = {};  // GPU -> its primary finding
  std::vector<std::string> unseen = {};                   // each among the signals not seen
  std::string note = "";                                  // in the first note
};

// A failing row is named by its name, not by its bytes.
void PrintTo(const ShapeCase& c, std::ostream* os) { *os << c.name; }

telemetry::Trace trace_of(const ShapeCase& c) {
  auto t = make_trace(c.gpus);
  for (auto& g : t.header.gpus) {
    if (!c.logged_limit) g.power_limit_default_watts.reset();
    g.name = c.model;
  }
  for (const Span& s : c.spans) fill_gpu(t, s.gpu, s.t0, s.t1, s.shape);
  for (const Fill& f : c.fills) fill(t, f.gpu, f.metric, f.t0, f.t1, f.period_s, f.f);
  return t;
}

bool has_text(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

void check_finding(const ShapeCase& c, const Finding& f) {
  if (c.severity) {
    EXPECT_EQ(f.severity, *c.severity);
  }
  for (const auto& [pointer, want] : c.details) {
    const nlohmann::json::json_pointer p(pointer);
    EXPECT_EQ(f.details.contains(p) ? f.details.at(p) : nlohmann::json(), want) << pointer;
  }
  for (const auto& key : c.details_absent) EXPECT_FALSE(f.details.contains(key)) << key;
  for (const Near& n : c.details_near) {
    const nlohmann::json::json_pointer p(n.key);
    EXPECT_NEAR(f.details.contains(p) ? f.details.at(p).get<double>() : NAN, n.value, n.tolerance) << n.key;
  }
  for (const Near& n : c.evidence_near) EXPECT_NEAR(evidence(f, n.key), n.value, n.tolerance) << n.key;
  for (const Above& a : c.evidence_above) EXPECT_GT(evidence(f, a.key), a.value) << a.key;
  if (c.confidence_below) {
    EXPECT_LT(f.confidence, *c.confidence_below);
  }
  for (const auto& s : c.message_has) EXPECT_TRUE(has_text(f.message, s)) << s << " not in: " << f.message;
  for (const auto& s : c.message_lacks) EXPECT_FALSE(has_text(f.message, s)) << s << " in: " << f.message;
  if (!c.first_step_has.empty()) {
    ASSERT_FALSE(f.next_steps.empty());
    for (const auto& s : c.first_step_has) EXPECT_TRUE(has_text(f.next_steps.front(), s)) << s;
  }
  for (const auto& s : c.caveat_has)
    EXPECT_TRUE(std::any_of(f.caveats.begin(), f.caveats.end(), [&](const auto& v) { return has_text(v, s); })) << s;
}

class DiagnoseShape : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(DiagnoseShape, SaysWhatTheShapeIs) {
  const ShapeCase& c = GetParam();
  const auto d = run(trace_of(c));
  if (!c.finding.empty()) {
    const Finding* f = find(d, c.finding);
    ASSERT_NE(f, nullptr) << c.finding;
    check_finding(c, *f);
  }
  for (const auto& id : c.absent) EXPECT_EQ(find(d, id), nullptr) << id;
  if (c.warnings) {
    EXPECT_EQ(warning_ids(d), *c.warnings);
  }
  for (const auto& [gpu, id] : c.primary) EXPECT_EQ(d.gpus.at(static_cast<std::size_t>(gpu)).primary, id);
  for (const auto& s : c.unseen) EXPECT_NE(std::find(d.unseen.begin(), d.unseen.end(), s), d.unseen.end()) << s;
  if (!c.note.empty()) {
    ASSERT_FALSE(d.notes.empty());
    EXPECT_TRUE(has_text(d.notes.front(), c.note)) << d.notes.front();
  }
}

// busy_gemm() with other utilization and SM activity curves and power.
Shape busy_gemm_at(Fn util, Fn sm, double power_w = 690) {
  Shape s = busy_gemm();
  s.util = std::move(util);
  s.sm = std::move(sm);
  s.power = constant(power_w);
  return s;
}

// Without GPM, utilization alone cannot tell a working chip from a kernel spinning in a wait:
// the board's power against its limit (recorded, or the model's) decides, else against the
// trace's idle floor, else it says saturation is not shown. 20 s at 99 %, after 5 s idle at 81 W
// when idle_start.
std::vector<Span> busy_without_gpm(double busy_power_w, bool idle_start) {
  const double start = idle_start ? 5 : 0;
  std::vector<Span> spans;
  if (idle_start) spans.push_back({0, 0, start, Shape{.power = constant(81), .gpm = false}});
  spans.push_back({0, start, start + 20,
                   Shape{.util = constant(99), .power = constant(busy_power_w), .mutil = constant(0), .gpm = false}});
  return spans;
}

// One GPU, GPM on, holding utilization, SM activity and power flat for 20 s.
std::vector<Span> flat_gpu(double util, double sm, double power_w) {
  return {{0, 0, 20, Shape{.util = constant(util), .sm = constant(sm), .power = constant(power_w)}}};
}

// Bursts of a service that never fill the GPU: 30 s of bursts every `period` seconds, half of it
// at 50 % utilization (40 % SM), 2 % between.
std::vector<Span> unfilled_bursts(double period) {
  return {
      {0, 0, 30, Shape{.util = square(period, 0.5, 50, 2), .sm = square(period, 0.5, 40, 1), .power = constant(300)}}};
}

// The power-cap bit (0x4) and a held SM clock, for the first `seconds` of the trace.
std::vector<Fill> power_cap_at(double sm_clock_mhz, double seconds = 20) {
  return {{0, Metric::kClockEventReasonsMask, 0, seconds, 0.1, constant(0x4)},
          {0, Metric::kSmClockMhz, 0, seconds, 0.1, constant(sm_clock_mhz)}};
}

constexpr double kLeakStep = 512.0 * 1024 * 1024;  // bytes a second, in steps of a second

// A rank checkpoints 2 s in every 6.
bool in_checkpoint(double x) { return std::fmod(x, 6.0) >= 4.0; }

// clang-format off
const std::vector<ShapeCase> kShapeCases = {
    {.name = "Idle", .spans = {{0, 0, 20, Shape{}}},
     .finding = "idle", .severity = Severity::kInfo, .warnings = Ids{}, .primary = {{0, "idle"}}},
    {.name = "SlowSawtoothReportsPeriodDutyLevelsAndLostTime",
     .spans = {{0, 0, 40, Shape{.util = square(2.0, 0.25, 100, 0), .sm = square(2.0, 0.25, 95, 0),
                                .tensor = square(2.0, 0.25, 90, 0), .power = square(2.0, 0.25, 600, 150)}}},
     .finding = "sawtooth", .severity = Severity::kCritical,  // idle 75 % of the time
     .details = {{"/below_sensor_resolution", false}},
     .evidence_near = {{"period_s", 2.0, 0.11}, {"duty_cycle_percent", 25, 4}, {"peak_percent", 100, 1},
                       {"trough_percent", 0, 1}, {"gpu_time_lost_s", 0.75 * 40, 3}}},
    // What p100_d50 reads: a flat middle level with SM activity to match. The first next step is
    // gpudoc's own profiler, and nsys is named.
    {.name = "FastSawtoothWithGpmIsSawtoothBelowSensorResolution",
     .spans = {{0, 0, 20, Shape{.util = [](double x) { return 48 + 2 * std::sin(7 * x); }, .sm = constant(44),
                                .tensor = constant(43), .dram = constant(10), .power = constant(500)}}},
     .finding = "sawtooth", .details = {{"/below_sensor_resolution", true}},
     .first_step_has = {"nsys", "gpudoc profile -- "}, .absent = {"plateau", "healthy"}},
    // The first 5 s are start-up: they establish the idle power floor.
    {.name = "FastSawtoothWithoutGpmUsesPowerAndLowersConfidence",
     .spans = {{0, 0, 5, Shape{.power = constant(84), .gpm = false}},
               {0, 5, 25, Shape{.util = constant(49), .power = constant(500), .gpm = false}}},
     .finding = "sawtooth", .confidence_below = 0.6, .unseen = {"GPM SM activity"}},
    // SM activity ~0: critical; the next step names reduce-overhead and whether a graph pays.
    {.name = "LaunchBoundPlateau", .spans = {{0, 0, 20, Shape{.util = constant(18), .power = constant(127)}}},
     .finding = "plateau", .severity = Severity::kCritical, .details = {{"/kind", "launch_bound"}},
     .first_step_has = {"reduce-overhead", "gpudoc profile -- "}},
    // A low flat level whose busy time is copies: PCIe moves far more per unit of busy time than a
    // loop that only computes. The GPU waits on its host's copies, not on launches.
    {.name = "LowLevelWithHeavyPcieWaitsOnCopiesNotLaunches", .spans = flat_gpu(12, 2.8, 133),
     .fills = {{0, Metric::kGpmPcieRxBytesPerSecond, 0, 20, 0.2, constant(4.4e9)},
               {0, Metric::kGpmPcieTxBytesPerSecond, 0, 20, 0.2, constant(0.3e9)}},
     .finding = "sawtooth", .details = {{"/cause", "copies"}},
     .evidence_near = {{"pcie_bytes_per_second", 4.7e9, 1e6}}, .message_has = {"waits on copies"},
     .first_step_has = {"non_blocking=True"}, .absent = {"plateau"}},
    // Small kernels (SM activity half of util) with little PCIe: launches or host work between them,
    // both named, the profiler named to decide; tiny ones (SM ~0) stay launch-bound.
    {.name = "SmallKernelsWithoutCopiesNameLaunchesAndHostWork", .spans = flat_gpu(13, 6, 131),
     .finding = "plateau",
     .details = {{"/kind", "launch_bound"}, {"/undecided_between", nlohmann::json({"plateau", "sawtooth"})}},
     .message_has = {"cannot tell launch gaps from host work", "gpudoc profile -- "}},
    {.name = "TinyKernelsWithoutCopiesAreLaunchBound", .spans = flat_gpu(18, 0, 127),
     .finding = "plateau", .details_absent = {"undecided_between"}},
    {.name = "BusyButIdlePlateauOnOneGpu",
     .spans = {{0, 0, 20, Shape{.util = constant(99), .sm = constant(30), .tensor = constant(10), .dram = constant(3),
                                .power = constant(300)}}},
     .finding = "plateau", .details = {{"/kind", "busy_but_idle"}},
     .evidence_near = {{"mean_sm_activity_percent", 30, 1e-9}}},
    {.name = "BusyWithoutGpmSpinningBelowHalfTheLimitIsBusyButIdle", .spans = busy_without_gpm(180, false),
     .finding = "plateau", .details = {{"/kind", "busy_but_idle"}}, .message_has = {"of its 700 W limit"},
     .absent = {"healthy"}},
    {.name = "BusyWithoutGpmDrawingMostOfTheLimitIsHealthy", .spans = busy_without_gpm(600, false),
     .finding = "healthy", .absent = {"plateau"}},
    {.name = "BusyWithoutGpmOrLimitIsJudgedAgainstTheIdleFloor", .spans = busy_without_gpm(180, true),
     .logged_limit = false, .model = "",
     .finding = "plateau", .details = {{"/kind", "busy_but_idle"}}, .message_has = {"idle floor"},
     .caveat_has = {"power.limit"}, .absent = {"healthy"}},
    {.name = "BusyWithoutGpmOrLimitWellAboveTheIdleFloorIsHealthy", .spans = busy_without_gpm(600, true),
     .logged_limit = false, .model = "", .finding = "healthy"},
    // No GPM, no limit, no model name, never idle: the power cannot be judged.
    {.name = "BusyWithNothingToShowSaturationIsNotHealthy", .spans = busy_without_gpm(600, false),
     .logged_limit = false, .model = "",
     .finding = "insufficient_data", .message_has = {"cannot show whether the chip works or waits"},
     .first_step_has = {"power.limit"}, .absent = {"healthy"}, .warnings = Ids{}},
    {.name = "ModelNameGivesTheLimitWhenNoneWasLogged", .spans = busy_without_gpm(180, false),
     .logged_limit = false, .finding = "plateau", .message_has = {"of its 700 W limit"}},
    {.name = "MemoryBound",
     .spans = {{0, 0, 20, Shape{.util = constant(99), .sm = constant(99), .tensor = constant(0), .dram = constant(91),
                                .power = constant(600), .mutil = constant(100)}}},
     .finding = "memory_bound", .warnings = Ids{"memory_bound"}},
    // GPU 0 waits in every second of the span: the whole span is lost to waiting. No plateau on
    // the waiting GPU.
    {.name = "PulseNamesStragglerAndWaitingGpu",
     .spans = {{0, 0, 20, Shape{.util = constant(99), .sm = constant(32), .tensor = constant(17), .dram = constant(4),
                                .power = constant(300)}},
               {1, 0, 20, busy_gemm()}},
     .gpus = 2,
     .finding = "pulse", .severity = Severity::kCritical,
     .details = {{"/straggler/0/gpu", 1}, {"/waiting/0/gpu", 0}}, .details_near = {{"/waiting_share", 1.0, 0.06}},
     .warnings = Ids{"pulse"}},
    {.name = "BalancedGpusAreNoPulse", .spans = {{0, 0, 20, busy_gemm()}, {1, 0, 20, busy_gemm()}}, .gpus = 2,
     .absent = {"pulse"}, .primary = {{1, "healthy"}}},
    // Half a GiB more every second: full within the hour, critical.
    {.name = "MemoryGrowthRateAndTimeToExhaustion", .spans = {{0, 0, 30, Shape{}}},
     .fills = {{0, Metric::kMemoryUsedBytes, 0, 30, 0.1, [](double x) { return 1e9 + kLeakStep * std::floor(x); }}},
     .finding = "memory_growth", .severity = Severity::kCritical,
     .details_near = {{"/time_to_exhaustion_s", (150754820096.0 - (1e9 + 29 * kLeakStep)) / kLeakStep, 20}},
     .evidence_near = {{"growth_rate_bytes_per_second", kLeakStep, kLeakStep * 0.05}}},
    {.name = "MemoryThatIsReleasedIsNoGrowth", .spans = {{0, 0, 30, Shape{}}},
     .fills = {{0, Metric::kMemoryUsedBytes, 0, 30, 0.1, [](double x) { return std::fmod(x, 4) < 2 ? 2e9 : 8e9; }}},
     .absent = {"memory_growth"}},
    {.name = "ThrottledPowerCapIsInfo", .spans = {{0, 0, 20, busy_gemm()}}, .fills = power_cap_at(1470),
     .finding = "throttled", .severity = Severity::kInfo},
    {.name = "ThrottledThermalIsWarning", .spans = {{0, 0, 20, busy_gemm()}},
     .fills = {{0, Metric::kClockEventReasonsMask, 0, 20, 0.1, square(2, 0.3, 0x40, 0)}},
     .finding = "throttled", .severity = Severity::kWarning, .details = {{"/reasons/0", "hw_thermal_slowdown"}},
     .evidence_near = {{"thermal_or_hw_share", 0.3, 0.05}}},
    // The power-cap bit with the board far below its limit on average: short peaks reach the limit;
    // the board is not said to be at it.
    {.name = "ThrottledPowerCapFarBelowTheLimitSaysPeaksNotTheBoard",
     .spans = {{0, 0, 20, busy_gemm_at(constant(99), constant(96), 301)}},
     .fills = power_cap_at(1700), .finding = "throttled", .severity = Severity::kInfo,
     .evidence_near = {{"power_while_throttled_watts", 301, 1e-9}}, .message_has = {"301 W of its 700 W limit"},
     .message_lacks = {"the board is at its power limit"}},
    {.name = "ThrottledPowerCapAtTheLimitSaysTheBoard", .spans = {{0, 0, 20, busy_gemm()}},  // 690 W
     .fills = power_cap_at(1470), .finding = "throttled", .message_has = {"the board is at its power limit"}},
    {.name = "ThrottledWithLoweredPowerLimitIsWarning", .spans = {{0, 0, 20, busy_gemm()}},
     .fills = {{0, Metric::kClockEventReasonsMask, 0, 20, 0.1, constant(0x4)},
               {0, Metric::kPowerLimitWatts, 0, 20, 1.0, constant(400)}},
     .finding = "throttled", .severity = Severity::kWarning, .details = {{"/power_limit_lowered", true}}},

    // ---- The classes seen on real jobs -------------------------------------------------------------
    // A ResNet fed by too few workers: a burst every 0.5 s lights one 200 ms reading in ~3 at 15 %
    // (mean ~4 %), the process holds GiBs. Not idle: a starved loop, critical, with the time lost.
    {.name = "StarvedLoopIsSawtoothNotIdle",
     .spans = {{0, 0, 30, Shape{.util = square(0.6, 0.34, 12, 0), .sm = square(0.6, 0.34, 9, 0),
                                .power = constant(145)}}},
     .fills = {{0, Metric::kMemoryUsedBytes, 0, 30, 1.0, constant(5.3e9)}},
     .finding = "sawtooth", .severity = Severity::kCritical,
     .evidence_above = {{"gpu_time_lost_share", 0.9}, {"gpu_time_lost_s", 25}}, .absent = {"idle"}},
    // Bursts every 2 s that never fill the GPU: the sensor resolves the period, so period and duty
    // are read from the curve, and what the bursts themselves use is said; the time lost counts
    // the unfilled bursts too (1 - mean util of 26 %).
    {.name = "UnfilledBurstsWithAResolvedPeriodSayPeriodDutyAndLevel", .spans = unfilled_bursts(2.0),
     .finding = "sawtooth", .details = {{"/below_sensor_resolution", false}, {"/bursts_saturate", false}},
     .evidence_near = {{"period_s", 2.0, 0.2}, {"duty_cycle_percent", 50, 8}, {"gpu_time_lost_share", 0.74, 0.05}},
     .message_has = {"bursts themselves reach only"}, .first_step_has = {"batch more work per burst"}},
    // The same level alternating every 0.4 s (two samples): the sensor cannot resolve it.
    {.name = "UnfilledBurstsFasterThanTheSensorAreBelowResolution", .spans = unfilled_bursts(0.4),
     .finding = "sawtooth", .details = {{"/below_sensor_resolution", true}}},
    // A checkpoint of 0.5 s every 5 s loses ~10 %: say so, at info (CI gates on warning stay quiet).
    {.name = "SmallLossIsInfo", .spans = {{0, 0, 40, busy_gemm_at(square(5.0, 0.9, 99, 0), square(5.0, 0.9, 90, 0))}},
     .finding = "sawtooth", .severity = Severity::kInfo,
     .evidence_near = {{"gpu_time_lost_share", 0.1, 0.05}, {"period_s", 5.0, 0.5}}, .warnings = Ids{}},
    // ~9 s of nothing, then a context appears at the end: nothing ever worked: idle.
    {.name = "LateContextWithoutWorkIsIdle",
     .spans = {{0, 0, 9, Shape{.power = [](double x) { return x < 7 ? 79.0 : 122.0; }}}},
     .fills = {{0, Metric::kMemoryUsedBytes, 0, 9, 1.0, [](double x) { return x < 7 ? 0.6e9 : 1.6e9; }}},
     .finding = "idle", .absent = {"insufficient_data"}},
    // A straggler every few seconds (one rank checkpoints): the other GPU spins in the all-reduce
    // (util 99 %, SM 18 %) while the straggler idles; a pulse with the share of time spent waiting.
    {.name = "IntermittentStragglerIsPulse",
     .spans = {{0, 0, 30, busy_gemm_at([](double x) { return in_checkpoint(x) ? 3.0 : 85.0; },
                                       [](double x) { return in_checkpoint(x) ? 0.0 : 62.0; })},
               {1, 0, 30, busy_gemm_at([](double x) { return in_checkpoint(x) ? 99.0 : 85.0; },
                                       [](double x) { return in_checkpoint(x) ? 18.0 : 62.0; })}},
     .gpus = 2,
     .finding = "pulse", .details = {{"/straggler/0/gpu", 0}, {"/waiting/0/gpu", 1}},
     .details_near = {{"/waiting_share", 1.0 / 3, 0.1}}},
    // The CSV form of a host-side straggler: no GPM; the waiting GPU is busy at a fifth of its board's
    // limit, the straggler nearly idle at the same power. Power against the limit tells them apart.
    {.name = "HostStragglerWithoutGpmIsPulseByPowerLimit",
     .spans = {{0, 0, 30, Shape{.util = constant(8), .power = constant(171), .gpm = false}},
               {1, 0, 30, Shape{.util = constant(63), .power = constant(173), .gpm = false}}},
     .fills = {{0, Metric::kPowerLimitWatts, 0, 30, 1.0, constant(700)},
               {1, Metric::kPowerLimitWatts, 0, 30, 1.0, constant(700)}},
     .gpus = 2,
     .finding = "pulse", .details = {{"/straggler/0/gpu", 0}, {"/waiting/0/gpu", 1}}, .absent = {"healthy"}},
    // Memory climbs the whole run, then the process exits and frees it in the last second: growth.
    {.name = "LeakReleasedAtExitIsGrowth", .spans = {{0, 0, 30, busy_gemm()}},
     .fills = {{0, Metric::kMemoryUsedBytes, 0, 30, 1.0, [](double x) { return x < 29 ? 1.8e9 + x * 0.45e9 : 0.6e9; }}},
     .finding = "memory_growth", .evidence_above = {{"released_at_end_bytes", 1e10}}},
    // The power-cap bit in a quarter of the samples at 1965 of 1980 MHz: no clock lost, no finding.
    {.name = "PowerCapBitWithoutClockLossIsNotThrottled", .spans = {{0, 0, 30, busy_gemm()}},
     .fills = {{0, Metric::kClockEventReasonsMask, 0, 30, 0.1,
                [](double x) { return std::fmod(x, 1.0) < 0.25 ? 4.0 : 0.0; }},
               {0, Metric::kSmClockMhz, 0, 30, 0.1, constant(1965)}},
     .absent = {"throttled"}},
    // Held at 1500 MHz: throttled, with the clock lost.
    {.name = "PowerCapBitWithClockLossIsThrottled", .spans = {{0, 0, 30, busy_gemm()}}, .fills = power_cap_at(1500, 30),
     .finding = "throttled", .evidence_near = {{"clock_lost_share", 1 - 1500.0 / 1980, 1e-6}}},
    // A steady 60 % with the board at 80 % of its limit: power-bound, healthy; the same level at a
    // third of the limit is a fast sawtooth.
    {.name = "SteadyLevelAtThePowerLimitIsHealthy",
     .spans = {{0, 0, 30, busy_gemm_at(constant(60), constant(56), 560)}},
     .finding = "healthy"},
    {.name = "SteadyLevelAtAThirdOfThePowerLimitIsSawtooth",
     .spans = {{0, 0, 30, busy_gemm_at(constant(60), constant(56), 230)}},
     .finding = "sawtooth"},
    // Work ends 2.5 s before the trace does (teardown): left out, not a swing of the curve.
    {.name = "TeardownAfterTheLastWorkIsLeftOut",
     .spans = {{0, 0, 30, busy_gemm_at([](double x) { return x < 27.5 ? 99.0 : 0.0; },
                                       [](double x) { return x < 27.5 ? 90.0 : 0.0; })}},
     .finding = "healthy", .warnings = Ids{}, .note = "teardown"},
};
// clang-format on

INSTANTIATE_TEST_SUITE_P(Shapes, DiagnoseShape, ::testing::ValuesIn(kShapeCases),
                         [](const ::testing::TestParamInfo<ShapeCase>& param_info) { return param_info.param.name; });

// ---- beyond one table row: the JSON, several diagnoses of one trace, processes ------------------

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
