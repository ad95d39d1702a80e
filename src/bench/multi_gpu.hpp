// gpudoc::bench multi-GPU arithmetic — the pure parts of the p2p and nccl benchmarks: which GPU
// pairs are measured, the message-size schedule, nccl-tests' size convention and bus-bandwidth
// factors, the NVLink datasheet figure, and the text of a pair matrix or a size curve.
//
//   auto pairs = bench::ordered_pairs(4);                       // 12 (src, dst) pairs
//   auto sizes = bench::size_schedule(8, 1u << 30, 2);          // 8 B, 16 B, ... 1 GiB
//   auto c = bench::collective_counts(Collective::kAllGather, 1u << 30, 8, 4);
//   double bus = c.bytes / seconds / 1e9 * bench::bus_bandwidth_factor(Collective::kAllGather, 8);
//
// Pure functions, thread-safe. C++17 and std headers only (the .cu files include it).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpudoc::bench {

// ---- GPU pairs ----------------------------------------------------------------------------------

struct GpuPair {
  int first = 0;   // p2p.bandwidth: source; p2p.latency: the GPU that reads
  int second = 0;  // p2p.bandwidth: destination; p2p.latency: the GPU whose memory is read
  bool operator==(const GpuPair& o) const { return first == o.first && second == o.second; }
};

// Every ordered pair (i, j), i != j, of `gpus` devices, row-major: (0,1), (0,2), ..., (1,0), ...
// n·(n−1) pairs; none for n < 2.
[[nodiscard]] std::vector<GpuPair> ordered_pairs(int gpus);
// Every unordered pair {i, j}, i < j: n·(n−1)/2 pairs.
[[nodiscard]] std::vector<GpuPair> unordered_pairs(int gpus);

// ---- Message sizes ------------------------------------------------------------------------------

// min_bytes, min_bytes·factor, min_bytes·factor², ... up to max_bytes, and max_bytes itself even
// when the steps jump over it (so the headline size is always measured). Empty when
// min_bytes == 0, factor < 2 or min_bytes > max_bytes.
[[nodiscard]] std::vector<std::size_t> size_schedule(std::size_t min_bytes, std::size_t max_bytes, std::size_t factor);

// ---- Collectives, as nccl-tests measures them ---------------------------------------------------

enum class Collective { kAllReduce, kAllGather, kReduceScatter };
[[nodiscard]] const char* to_string(Collective c) noexcept;  // "all_reduce", ...

// What one NCCL call moves for a nominal size, with nccl-tests' conventions
// (src/all_reduce.cu, all_gather.cu, reduce_scatter.cu: *GetCollByteCount and *GetBw):
//   all_reduce:     count = size / elem;            send = recv = count elements; S = count·elem
//   all_gather:     count = size / (elem·n) (sendcount per rank); recv = n·count; S = n·count·elem
//   reduce_scatter: count = size / (elem·n) (recvcount per rank); send = n·count; S = n·count·elem
// S (`bytes`) is the size nccl-tests prints and divides by the time (algbw = S / t): the whole
// buffer of all_reduce, the whole gathered output of all_gather, the whole input of
// reduce_scatter. count is 0 when the size is below one element per rank.
struct CollectiveCounts {
  std::size_t count = 0;       // the count argument of the NCCL call (elements)
  std::size_t send_elems = 0;  // per rank
  std::size_t recv_elems = 0;  // per rank
  std::size_t bytes = 0;       // S
};
[[nodiscard]] CollectiveCounts collective_counts(Collective c, std::size_t size_bytes, int ranks,
                                                 std::size_t elem_bytes);

// busbw = algbw · factor (nccl-tests doc/PERFORMANCE.md): all_reduce 2(n−1)/n; all_gather and
// reduce_scatter (n−1)/n. 0 for n < 1.
[[nodiscard]] double bus_bandwidth_factor(Collective c, int ranks);

// ---- The datasheet figure beside which p2p and nccl results are reported -----------------------

struct LinkDatasheet {
  std::string link;                   // "NVLink 4 (18 links)"
  double per_direction_gb_per_s = 0;  // 450
  double bidirectional_gb_per_s = 0;  // 900
  std::string source;                 // where the figure comes from
};
// The NVLink figure for a GPU by its CUDA name; nullopt when gpudoc does not know it.
[[nodiscard]] std::optional<LinkDatasheet> nvlink_datasheet(const std::string& gpu_name);

// ---- Text ---------------------------------------------------------------------------------------

// A square matrix of per-pair figures, rows labelled by `row_label` ("src"), columns by
// `column_label` ("dst"); nullopt cells print as "—" (the diagonal, pairs without peer access):
//
//   src\dst     0      1
//        0      —  389.2
//        1  389.5      —
[[nodiscard]] std::string render_pair_matrix(const std::vector<std::vector<std::optional<double>>>& m,
                                             const std::string& row_label, const std::string& column_label,
                                             int decimals);

struct CurvePoint {
  std::size_t bytes = 0;  // S
  double time_us = 0;     // median time of one collective
  double algbw_gb_per_s = 0;
  double busbw_gb_per_s = 0;
  bool verified = false;
};
// The size curve as a table: size, time (us), algbw, busbw (GB/s), verified.
[[nodiscard]] std::string render_curve(const std::vector<CurvePoint>& points);

// "8 B", "4 KiB", "1 GiB", "96 MiB" (binary units; sizes that are not whole units keep bytes).
[[nodiscard]] std::string format_bytes(std::size_t bytes);

}  // namespace gpudoc::bench
