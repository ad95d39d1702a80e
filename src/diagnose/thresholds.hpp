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
// A util or SM sample at or above 1 % saw a kernel run: an idle H200 reads exactly 0 (reference
// workloads' idle, memory-growth and pre-start phases: 0.00 mean), a starved training loop's 200 ms
// samples read 3-40 %. A CUDA context or memory alone is not work: a job that holds GiBs and never
// computes is idle (memory is start-up only where work follows).
inline constexpr double kWorkLevelPercent = 1;
// Work recurs: an active reading with at least 4 more within 5 s (readings 0.15 s apart or more:
// an nvidia-smi log every 100 ms repeats each 200 ms reading). Set-up blips (2-3 readings: a
// context, weight init) and a leftover kernel are not the start of work; a starved loop's bursts
// every 0.5 s and a 3 s sawtooth's 0.9 s bursts are.
inline constexpr std::size_t kRecurringSamples = 5;
inline constexpr double kRecurringWindowS = 5.0;
inline constexpr double kDistinctReadingS = 0.15;
// Steady work: util/SM >= 5 % for 0.5 s. Where it follows the first work within 5 s, the work
// before it is set-up (weights, cuDNN autotuning: 1-2 s at 1-5 % util) and is skipped too.
inline constexpr double kActiveUtilPercent = 5;
inline constexpr double kOnsetMinS = 0.5;
inline constexpr double kOnsetSearchS = 5;
inline constexpr double kWarmupS = 1.0;         // skipped after the first activity: warm-up burst
inline constexpr double kAttachedStartS = 1.0;  // active within 1 s of the first sample: no start-up to skip
inline constexpr double kTailS = 1.0;           // skipped before a process_exit event: teardown
// Inactivity of at most 10 s after the last work, at the end of the trace, is teardown (Python
// and torchrun exit, NCCL teardown, freeing memory: 1.5-2.6 s on the tune jobs), not an idle phase.
inline constexpr double kTeardownMaxS = 10;

// --- Idle / busy levels ----------------------------------------------------------------------
// Mean util (or SM activity) below 1 %: idle. A loop that works 3 % of the time is starved, not
// idle (inference at 150 requests/s: 3.2 %; ResNet-18 fed by 4 workers: 4.7 %; idle: 0.00).
inline constexpr double kIdleUtilPercent = 1;
inline constexpr double kBusyUtilPercent = 85;  // mean util at or above: "fully busy" (gemm reads 99)

// --- Healthy vs plateau vs memory-bound (GPM) ------------------------------------------------
// At its power limit a board delivers what its power allows: a steady level of at least 50 % util
// with the board drawing >= 75 % of its enforced limit is healthy (power-bound), not a fast
// sawtooth (inference server near capacity: util 60 %, 560 of 700 W, power cap 95 % of the time).
inline constexpr double kPowerBoundMinUtilPercent = 50;
inline constexpr double kPowerBoundRatio = 0.75;
// ...or the software power cap holds the clocks half of the span or more (the board is at its
// limit whatever the averaged power reads).
inline constexpr double kPowerCapBoundShare = 0.5;
// Without GPM, a busy GPU's power says whether its chip works or waits: at or above half the
// board's limit it works (kWaitPowerLimitRatio: a kernel spinning in a wait draws 126-290 W of 700
// at 99-100 % utilization, real work at that utilization 450-690 W); without a known limit, against
// the trace's own idle floor (an H200 idles at ~80 W: spinning 1.6-3.6x the floor, real work
// 5.6-8.6x): at or above 4x it works. Without either, saturation cannot be shown: not `healthy`.
inline constexpr double kSaturatedFloorFactor = 4.0;
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
// A period of at least this many utilization samples is read from the curve (period and duty),
// whatever the bursts' own level; shorter ones alias and are averaged by the sensor.
inline constexpr double kResolvedPeriodSamples = 3;
inline constexpr double kAcfPeakMin = 0.3;         // autocorrelation peak at least: periodic
inline constexpr double kMaxPeriodS = 30;          // longest period looked for (and <= half a window)
inline constexpr std::size_t kAcfMaxCells = 3000;  // autocorrelation over at most 300 s of a run (speed)
// Below sensor resolution: a flat middle level whose SM activity is a large share of util means
// full-chip bursts alternating with idle faster than the 200 ms sample (sawtooth p100: SM/util
// 0.93; tiny kernels: 0.0).
// (A loop starved by its host reads 0.62-0.86 on the real jobs: its bursts fill the chip; batch-1
// inference of a 24-layer MLP, launch-bound, 0.47: its kernels do not.)
inline constexpr double kBurstSmRatio = 0.6;
// Waiting on host<->device copies: GPM PCIe traffic (rx + tx) per unit of busy share at or above
// 15 GB/s. A loop that copies a 200 MB batch from pageable memory each step, and a ZeRO-offload
// step (gradients to the host, weights back), move 37-39 GB/s per busy share; every other real job
// and workload at most 8 (a starved loader's pinned batches 7.8, launch-bound inference 0.6, GEMM 0).
inline constexpr double kCopyBoundPcieBytesPerBusyS = 15e9;
// Below kBurstSmRatio, kernels that use under a fifth of the chip for their busy time are tiny (a
// launch loop of elementwise kernels reads 0.00): launch-bound. From 0.2 up they are small but real,
// and the gaps between them may be launches or host work: both are named, and the profiler decides.
inline constexpr double kTinyKernelSmRatio = 0.2;
// Without GPM: mean power at least this multiple of the idle floor means real work in the bursts
// (sawtooth p100: 5.9x; tiny kernels: 1.5x).
inline constexpr double kWorkPowerFactor = 2.0;
inline constexpr double kUtilSensorPeriodS = 0.2;  // NVML's utilization sample period (reference/h200.md)
// A swing whose peaks stay below 80 % never saturates: the bursts are shorter than the sensor's
// sample, so it is below resolution and the duty cycle is the mean busy level (a starved LM loop:
// util wandering 0-55 %, mean 27 %; real 1 s bursts read 95-100 %).
inline constexpr double kSaturatedPercent = 80;
// Without GPM, a GPU busy less than 10 % of the time waits for its host whatever runs in the
// bursts: a sawtooth, not a launch-bound plateau (tiny kernels hold util at 19-27 %).
inline constexpr double kNoGpmStarvedUtilPercent = 10;

// --- Pulse (multi-GPU) -----------------------------------------------------------------------
inline constexpr double kStragglerSmMarginPercent = 20;    // straggler's SM activity above the waiting GPU's by
inline constexpr double kStragglerUtilMarginPercent = 30;  // or its util below the waiting GPU's by
inline constexpr double kWaitPowerRatio = 0.6;             // no GPM: a busy GPU at <= 0.6x a busy peer's power waits
// Pulses are found second by second: in 1 s bins, a GPU waits while its util is >= 50 % and its
// SM activity < 0.6x util (an NCCL kernel spinning: util 99 %, SM 18 %), or, without GPM, its
// power <= 50 % of the board's limit (spinning, or spinning between short steps: 126-290 W of
// 700; real work at that util: 450-690 W). A peer
// whose util is 30 points lower (its host is late) or SM 20 points higher (it computes longer) at
// the same time is the straggler. A pulse needs 3 such bins and 10 % of the window.
inline constexpr double kPulseBinS = 1.0;
inline constexpr double kWaitUtilPercent = 50;
inline constexpr double kWaitPowerLimitRatio = 0.5;
inline constexpr std::size_t kPulseMinBins = 3;
inline constexpr double kPulseMinShare = 0.1;

// --- Staircase (per-process) -----------------------------------------------------------------
inline constexpr double kMinProcessUtilPercent = 10;    // a process with less is not a contender
inline constexpr std::size_t kMinProcessPoints = 2;     // per-process samples needed (old traces: one per 5 s)
inline constexpr std::size_t kMinCorrelationPairs = 8;  // to measure anti-correlation between processes
inline constexpr double kTurnsCorrelation = -0.3;       // correlation at or below: taking turns
inline constexpr double kMaxTurnsSamplePeriodS = 0.5;   // per-process samples coarser: mode unknown

// --- Memory growth ---------------------------------------------------------------------------
inline constexpr double kGrowthMinBytes = 1024.0 * 1024 * 1024;   // net rise of at least 1 GiB...
inline constexpr double kGrowthMinRateBytesPerS = 1024.0 * 1024;  // ...at >= 1 MiB/s (slower leaks need longer traces)
inline constexpr double kGrowthMaxReleaseRatio = 0.25;            // released (falls) at most 25 % of what was added
inline constexpr double kGrowthMinR2 = 0.8;                       // a steady climb (steps included) fits a line
// A fall after the highest point within the last 10 % of the span (or 5 s) is the process
// releasing its memory at exit: the growth during the run is judged up to that point.
inline constexpr double kReleaseTailShare = 0.1;
inline constexpr double kReleaseTailS = 5;

// --- Throttling ------------------------------------------------------------------------------
inline constexpr double kThrottleMinShare = 0.2;  // slowdown reasons active at least 20 % of the time
// ...and the clock really held down: the mean SM clock while a reason is set at least 3 % below
// the maximum (the power-cap bit flickers at 1965 of 1980 MHz: 0.8 %, no clock lost).
inline constexpr double kThrottleMinClockLoss = 0.03;
inline constexpr double kLoweredPowerLimitRatio = 0.95;  // enforced limit below 95 % of the default: lowered

// --- Severity --------------------------------------------------------------------------------
// By the share of GPU time lost (sawtooth, pulse, staircase): below 30 % info (a checkpoint every
// few seconds, ~10-20 %: say the loss, do not fail a CI gate on it), from 30 % warning, from 60 %
// critical (most of the GPU lost).
inline constexpr double kWarningLostShare = 0.3;
inline constexpr double kCriticalLostShare = 0.6;
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
