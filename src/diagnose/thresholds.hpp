// gpudoc::diagnose thresholds — every number the classifier compares against, in one place, each
// with the reason for its value. docs/methodology.md ("Diagnosis") explains the method around
// them. Tuned on the non-held-out traces of tests/data only (see tests/data/README.md).
#pragma once

#include <cstddef>

namespace gpudoc::diagnose::th {

// --- Grid and data sufficiency ---------------------------------------------------------------
inline constexpr double kGridStepS = 0.1;      // half the 200 ms utilization/GPM period: keeps every sample
inline constexpr double kMaxHoldFactor = 3.0;  // a sample stands for at most 3 of its own periods...
inline constexpr double kMinHoldS = 0.6;       // ...and at least 0.6 s (covers 200 ms jitter); beyond: a gap
// ...and at most 10 minutes: an nvidia-smi log written every 5 min stays one continuous curve,
// sparser data shows its gaps, and no sample stands for more than 6000 cells of the grid (a few
// samples years apart are a few short steps, not a grid over the years between them).
inline constexpr double kMaxHoldS = 600;
inline constexpr std::size_t kMinSignalCells = 20;  // 2 s of a signal on the grid before anything is concluded
inline constexpr double kMinSpanS = 2.0;            // analysed span shorter than this: insufficient data

// --- Start-up and tail -----------------------------------------------------------------------
inline constexpr double kActiveUtilPercent = 5;                         // util/SM at or above: the GPU works (not idle)
inline constexpr double kStartupMemoryRiseBytes = 256.0 * 1024 * 1024;  // a new CUDA context + buffers
inline constexpr double kOnsetMinS = 0.5;       // activity lasting this long marks the start of work
inline constexpr double kWarmupS = 1.0;         // skipped after the first activity: warm-up burst
inline constexpr double kAttachedStartS = 1.0;  // active within 1 s of the first sample: no start-up to skip
inline constexpr double kTailS = 1.0;           // skipped before a process_exit event: teardown

// --- Idle / busy levels ----------------------------------------------------------------------
inline constexpr double kIdleUtilPercent = 5;   // mean util below: idle (H200 idle reads 0; blips < 5)
inline constexpr double kBusyUtilPercent = 85;  // mean util at or above: "fully busy" (gemm reads 99)

// --- Healthy vs plateau vs memory-bound (GPM) ------------------------------------------------
inline constexpr double kHealthySmPercent = 60;     // SM activity at or above with util busy: useful work
inline constexpr double kBusyIdleSmRatio = 0.6;     // SM/util below at busy util: busy-but-idle (allreduce wait: 0.33)
inline constexpr double kBusyIdleDramPercent = 30;  // and DRAM below this (memory-bound reads ~90)
inline constexpr double kMemoryBoundDramPercent = 60;  // GPM DRAM activity at or above: at the bandwidth roof
inline constexpr double kMemoryBoundMemUtilPercent =
    60;  // no GPM: NVML memory util at or above (stream: 100, GEMM: 24)
inline constexpr double kMemoryBoundTensorMaxPercent = 10;  // tensor activity below: no math (stream: 0, GEMM: 93)

// --- Sawtooth --------------------------------------------------------------------------------
inline constexpr double kSawtoothAmplitudePercent = 40;  // p95 - p05 of util at least: a real swing
inline constexpr double kSawtoothTroughMaxPercent = 25;  // p05 at most: troughs reach (near) idle
inline constexpr double kAcfPeakMin = 0.3;               // autocorrelation peak at least: periodic
inline constexpr double kMaxPeriodS = 30;                // longest period looked for (and <= half a window)
inline constexpr std::size_t kAcfMaxCells = 3000;        // autocorrelation over at most 300 s of a run (speed)
// Below sensor resolution: a flat middle level whose SM activity is a large share of util means
// full-chip bursts alternating with idle faster than the 200 ms sample (sawtooth p100: SM/util
// 0.93; tiny kernels: 0.0).
inline constexpr double kBurstSmRatio = 0.4;
// Without GPM: mean power at least this multiple of the idle floor means real work in the bursts
// (sawtooth p100: 5.9x; tiny kernels: 1.5x).
inline constexpr double kWorkPowerFactor = 2.0;
inline constexpr double kUtilSensorPeriodS = 0.2;  // NVML's utilization sample period (reference/h200.md)

// --- Pulse (multi-GPU) -----------------------------------------------------------------------
inline constexpr double kStragglerSmMarginPercent = 20;    // straggler's SM activity above the waiting GPU's by
inline constexpr double kStragglerUtilMarginPercent = 30;  // or its util below the waiting GPU's by
inline constexpr double kWaitPowerRatio = 0.6;             // no GPM: a busy GPU at <= 0.6x a busy peer's power waits

// --- Staircase (per-process) -----------------------------------------------------------------
inline constexpr double kMinProcessUtilPercent = 10;    // a process with less is not a contender
inline constexpr std::size_t kMinProcessPoints = 2;     // per-process samples needed (old traces: one per 5 s)
inline constexpr std::size_t kMinCorrelationPairs = 8;  // to measure anti-correlation between processes
inline constexpr double kTurnsCorrelation = -0.3;       // correlation at or below: taking turns

// --- Memory growth ---------------------------------------------------------------------------
inline constexpr double kGrowthMinBytes = 1024.0 * 1024 * 1024;   // net rise of at least 1 GiB...
inline constexpr double kGrowthMinRateBytesPerS = 1024.0 * 1024;  // ...at >= 1 MiB/s (slower leaks need longer traces)
inline constexpr double kGrowthMaxReleaseRatio = 0.25;            // released (falls) at most 25 % of what was added
inline constexpr double kGrowthMinR2 = 0.8;                       // a steady climb (steps included) fits a line

// --- Throttling ------------------------------------------------------------------------------
inline constexpr double kThrottleMinShare = 0.2;         // slowdown reasons active at least 20 % of the time
inline constexpr double kLoweredPowerLimitRatio = 0.95;  // enforced limit below 95 % of the default: lowered

// --- Severity --------------------------------------------------------------------------------
inline constexpr double kCriticalLostShare = 0.6;       // sawtooth: GPU idle >= 60 % of the time
inline constexpr double kCriticalPlateauSmPercent = 5;  // plateau: SM activity below: the chip does ~nothing
inline constexpr double kCriticalWaitShare = 0.5;       // pulse: waiting >= half of the time
inline constexpr double kCriticalLossShare = 0.6;       // staircase: a process loses >= 60 %
inline constexpr double kCriticalExhaustionS = 3600;    // memory growth: out of memory within an hour
inline constexpr double kCriticalThrottleShare = 0.5;   // thermal/HW slowdown half of the time

// --- Confidence ------------------------------------------------------------------------------
inline constexpr double kBaseConfidence = 0.9;
inline constexpr double kNoGpmFactor = 0.7;      // SM/tensor/DRAM activity not seen
inline constexpr double kShortSpanS = 10;        // spans shorter than this...
inline constexpr double kShortSpanFactor = 0.8;  // ...lower confidence
inline constexpr double kGuessFactor = 0.5;      // decided on a weak proxy (power instead of GPM)

}  // namespace gpudoc::diagnose::th
