// gpudoc::bench details — the terminal sections some results carry beyond their table row: the
// per-pair matrix of the p2p.* benchmarks (params["matrix"]) and the size curve of the nccl.*
// benchmarks (params["curve"]).
//
//   for (const auto& o : report.outcomes)
//     if (o.result) out += bench::details_text(*o.result);   // "" for results without either
//
// Pure, thread-safe.
#pragma once

#include <string>

#include "bench/registry.hpp"

namespace gpudoc::bench {

// A titled block ("p2p.bandwidth: GB/s per pair, src rows, dst columns" + the matrix, or
// "nccl.all_reduce: ..." + the curve table) ending in a blank line; "" when the result has no
// matrix or curve, or they are malformed.
[[nodiscard]] std::string details_text(const BenchResult& r);

}  // namespace gpudoc::bench
