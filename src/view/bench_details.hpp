// gpudoc::view bench details — the terminal sections some results carry beyond their table row: the
// per-pair matrix of the p2p.* benchmarks (params["matrix"]), the size curve of the nccl.*
// benchmarks (params["curve"]), and why a figure spread (params["host_spread"]).
//
//   for (const auto& o : report.outcomes)
//     if (o.result) out += view::details_text(*o.result);   // "" for results without either
//   for (...) spread += view::spread_text(*o.result);        // "" unless the host explains a spread
//
// Pure, thread-safe.
#pragma once

#include <string>

#include "bench/registry.hpp"

namespace gpudoc::view {

// A titled block ("p2p.bandwidth: GB/s per pair, src rows, dst columns" + the matrix, or
// "nccl.all_reduce: ..." + the curve table) ending in a blank line; "" when the result has no
// matrix or curve, or they are malformed.
[[nodiscard]] std::string details_text(const bench::BenchResult& r);

// One line, "launch.throughput: CV 7.36 %: slower CPU: ...\n", for a result whose params carry
// host_spread (the launch benchmarks' verdict on a CV above 2 %: steal, or a slower vCPU); "" otherwise.
[[nodiscard]] std::string spread_text(const bench::BenchResult& r);

}  // namespace gpudoc::view
