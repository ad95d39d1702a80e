// gpudoc::diagnose signals (internal to the diagnose library) — where a diagnosis gets its numbers:
// the span of a trace worth analysing (start-up and teardown left out), each GPU's series on the
// analysis grid, and the features of one span of that grid (levels, period, crossings).
//
//   detail::Span sp = detail::analysed_span(trace, options);
//   detail::Signals s = detail::make_signals(trace.gpus[0], &trace.header.gpus[0], sp.t0, sp.t1);
//   detail::Features f = detail::features(s, 0, s.util.cells);   // the whole span
//
// The grids are step grids (features.hpp): one GPU's signals over a day take tens of MB, and two
// samples far apart take two steps, not the cells between them.
//
// Pure functions; thread-safe (no shared state); never throw.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "diagnose/diagnose.hpp"
#include "diagnose/features.hpp"
#include "diagnose/thresholds.hpp"
#include "telemetry/trace.hpp"

namespace gpudoc::diagnose::detail {

// The span of the trace that is analysed: [t0, t1] in seconds since the trace's start; `first` is
// the first sample's time, `how` says what was skipped (a note of the report).
struct Span {
  double t0 = 0, t1 = 0, first = 0;
  std::string how;
};
[[nodiscard]] Span analysed_span(const telemetry::Trace& trace, const Options& options);

// One GPU's series on the analysis grid (th::kGridStepS), over the analysed span; every grid has
// the same t0 and number of cells.
struct Signals {
  StepGrid util, mutil, sm, tensor, dram, power, nvlink_tx;
  StepGrid pcie_rx, pcie_tx;  // GPM PCIe bytes per second, each way
  StepGrid power_cap;         // 1 where the software power cap holds the clocks (clock-event reasons), else 0
  bool has_util = false, has_gpm = false, has_power = false, has_mutil = false;
  double util_period_s = th::kUtilSensorPeriodS;  // upper median spacing of util samples
  double power_floor_w = 0;                       // idle floor: p05 of the whole trace's power
  bool has_power_floor = false;
  bool power_floor_idle = false;  // the floor was read while the GPU was idle (util p05 below 1 %)
  double power_limit_w = 0;       // the board's power limit (recorded, else the default, else its model's); 0: unknown
  const char* power_limit_from = "";  // "recorded", "default" or "model"
};
// The default power limit of a board named `name` as NVML and nvidia-smi name it, for the boards
// whose limit was read on the board itself (docs/reference: an H200 SXM, 700 W); 0 for others.
[[nodiscard]] double model_power_limit_w(std::string_view name);
[[nodiscard]] Signals make_signals(const telemetry::GpuTrace& g, const gpu::DeviceInfo* dev, double t0, double t1);

// The upper median of the spacings (> 1 ms) between the first 4097 samples of s: for an even count
// the larger of the two middle spacings, so that a series alternating short and long intervals
// reads as its longer one. `fallback` when s has fewer than two such samples.
[[nodiscard]] double upper_median_spacing(const telemetry::Series& s, double fallback);

// Features of one GPU over grid cells [a, b).
struct Features {
  double t0 = 0, t1 = 0;
  Levels util, mutil, sm, tensor, dram, power;
  Levels power_cap;      // its mean: the share of the span at the power cap
  bool use_util = true;  // the wave signal is util (else GPM SM activity)
  std::optional<AcfPeak> acf;
  double period_s = 0;  // sawtooth period estimate (0: none)
  double acf_period_s = 0;
  std::size_t mid_crossings = 0;
  double above_mid_share = 0;  // share of the wave's cells at or above its mid level: the duty cycle
  double nvlink_tx_mean = 0;
  bool has_nvlink = false;
  double pcie_bytes_per_s = 0;  // GPM PCIe rx + tx, mean (bytes per second)
  bool has_pcie = false;
};
// with_wave = false skips the period (autocorrelation, crossings): summaries need only levels.
[[nodiscard]] Features features(const Signals& s, std::size_t a, std::size_t b, bool with_wave = true);

// Mean util, or GPM SM activity when there is no util (a GPM-only trace).
[[nodiscard]] double busy_level(const Features& f);
// Enough GPM SM activity cells to judge the chip's work.
[[nodiscard]] bool has_gpm(const Features& f);
// part / whole, 0 when whole is not positive.
[[nodiscard]] double share_of(double part, double whole);

}  // namespace gpudoc::diagnose::detail
