// gpudoc::core numeric — statistics on paired series shared by the diagnosis (how two GPUs'
// waveforms move together) and the benchmarks (whether the host's CPU time moved with a figure).
//
//   core::correlation(figure, cpu_time, 3);   // Pearson r, or nullopt
//
// Pure, thread-safe; never throw.
#pragma once

#include <cstddef>
#include <optional>
#include <span>

namespace gpudoc::core {

// Pearson correlation of a and b over indices where both are finite; nullopt with fewer than
// min_pairs such pairs or no variance in either.
[[nodiscard]] std::optional<double> correlation(std::span<const double> a, std::span<const double> b,
                                                std::size_t min_pairs);

}  // namespace gpudoc::core
