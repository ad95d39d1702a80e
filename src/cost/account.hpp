// gpudoc::cost account — what every second and every joule of one GPU's run went to, in whole
// microseconds and whole millijoules that add up exactly (docs/methodology.md, "Cost accounting").
//
// A GPU is paid for from the run's start to its end whether it works or waits. That time is split
// into three kinds of parts:
//   - useful: the GPU was busy (a kernel ran: the busy share the sensor read) and no claim took it;
//   - each claim's loss: a finding (or a named span such as the start-up) says this much of its
//     window was lost; where claims overlap, each microsecond is counted once (the rule below);
//   - unexplained: what is left: the GPU was not busy, or nothing was read, and no claim names why.
// useful + claims + unexplained == end - start, exactly. The run's energy (energy.hpp) is split over
// the same parts, each part weighted by the power drawn while it lasted, and the parts add up to it
// exactly.
//
// The rule for overlaps: claims are taken one after another, in the order (rank, then the larger
// share of its window claimed, then the order given); each takes its loss first from the time of
// its window in which the GPU was not busy and no earlier claim took, spread in proportion over
// that time, and only the rest from busy time (a GPU that spins in a collective reads busy), never
// more than is left. So an overlapped second goes to the claim that comes first.
//
//   cost::GpuRun run{.gpu = 0, .start = 0, .end = cost::micros(60)};
//   run.busy = {{0, cost::micros(60), 0.5}};                            // busy half the time
//   run.claims.push_back({.cause = "sawtooth", .from = 0, .to = cost::micros(60), .lost = cost::micros(30)});
//   cost::GpuAccount a = cost::account(run);    // useful 30 s, sawtooth 30 s, unexplained 0
//
// Pure: no I/O. Thread-safe (no state).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace gpudoc::cost {

using Micros = std::int64_t;       // time, microseconds
using Millijoules = std::int64_t;  // energy, millijoules (the NVML energy counter's unit)

inline constexpr double kMicrosPerSecond = 1e6;
inline constexpr double kMillijoulesPerKwh = 3.6e9;
inline constexpr double kMicrosPerHour = 3.6e9;
// Seconds beyond which a time is not taken (the trace reader's own limit is 1e8 s).
inline constexpr double kMaxSeconds = 1e9;

// Seconds to whole microseconds (rounded to nearest; clamped to ±kMaxSeconds; NaN is 0).
[[nodiscard]] Micros micros(double seconds);
[[nodiscard]] inline double seconds(Micros us) { return static_cast<double>(us) / kMicrosPerSecond; }

// The busy share (0..1) of the GPU over [from, to). Time no step covers: not known.
struct BusyStep {
  Micros from = 0;
  Micros to = 0;
  double share = 0;
};

// The power over [from, to), linear from w0 (at from) to w1 (at to), in watts. Time no piece
// covers: not known.
struct PowerPiece {
  Micros from = 0;
  Micros to = 0;
  double w0 = 0;
  double w1 = 0;
};

struct Claim {
  std::size_t source = 0;  // the caller's index (its finding), handed back
  std::string cause{};     // a finding id, "startup", "teardown"
  int rank = 0;            // lower is taken first where claims overlap
  Micros from = 0;         // its window
  Micros to = 0;
  Micros lost = 0;             // what it says the window lost (at most the window)
  bool not_busy_only = false;  // instead: exactly the not-busy time of its window (idle, start-up)
};

struct GpuRun {
  int gpu = 0;
  Micros start = 0;  // the run on this GPU; its GPU time is end - start
  Micros end = 0;
  std::vector<BusyStep> busy{};          // sorted by from, not overlapping
  std::vector<PowerPiece> power{};       // sorted by from, not overlapping: the energy split's weights
  std::optional<Millijoules> energy{};   // the run's energy (energy.hpp); nullopt: not known
  std::optional<Micros> energy_until{};  // the energy covers up to here (a GPU that dropped out); nullopt: end
  std::vector<Claim> claims{};
};

struct Share {
  Micros time = 0;
  Millijoules energy = 0;  // 0 when the run's energy is not known
};

struct ClaimShare {
  std::size_t source = 0;
  std::string cause{};
  Micros stated = 0;  // what the claim said it lost, within the run (not_busy_only: its window)
  Share got{};        // what it was given
};

struct GpuAccount {
  int gpu = 0;
  Micros gpu_time = 0;  // end - start
  Share useful{};
  Share unexplained{};
  Micros unknown = 0;                   // of unexplained: time without a busy reading
  std::vector<ClaimShare> claims{};     // one per claim, in the order given
  std::optional<Millijoules> energy{};  // the run's energy, as given
  // useful.time + every claims[i].got.time + unexplained.time == gpu_time; with energy, the same
  // for .energy and *energy.
};

// Errors are impossible: bad input is taken as it can be (end < start is an empty run, a busy
// share outside 0..1 is clamped, claims outside the run get nothing, a negative energy is 0).
[[nodiscard]] GpuAccount account(const GpuRun& run);

// `total` (>= 0) in whole parts proportional to `weights` (negative or NaN weights count as 0):
// every part >= 0, and they add up to total exactly (cumulative rounding). All weights 0: equal
// parts. Empty weights: empty result.
[[nodiscard]] std::vector<std::int64_t> apportion(std::int64_t total, std::span<const double> weights);

// The joules of `power` over [from, to) and how much of that time it covers.
struct PowerIntegral {
  double joules = 0;
  Micros known = 0;
};
[[nodiscard]] PowerIntegral integrate(std::span<const PowerPiece> power, Micros from, Micros to);

}  // namespace gpudoc::cost
