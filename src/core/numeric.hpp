// gpudoc::core numeric — the statistics every capability shares: the median of samples (bench,
// baseline gate, health, diagnosis) and the correlation of paired series (how two GPUs' waveforms
// move together; whether the host's CPU time moved with a benchmark figure).
//
//   core::median({3.0, 1.0, 2.0});            // 2
//   core::correlation(figure, cpu_time, 3);   // Pearson r, or nullopt
//
// Pure, thread-safe; never throw.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

namespace gpudoc::core {

// The middle value of `values` (any order); the mean of the two middle values for an even count;
// 0 for an empty vector (callers that must tell "no samples" apart check emptiness first).
[[nodiscard]] double median(std::vector<double> values);

// Pearson correlation of a and b over indices where both are finite; nullopt with fewer than
// min_pairs such pairs or no variance in either.
[[nodiscard]] std::optional<double> correlation(std::span<const double> a, std::span<const double> b,
                                                std::size_t min_pairs);

}  // namespace gpudoc::core
