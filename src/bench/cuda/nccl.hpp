// gpudoc::bench::cuda nccl — one NCCL collective timed over a schedule of sizes across every GPU
// of the machine, from this one process and thread (ncclCommInitAll; each operation launched for
// all GPUs inside ncclGroupStart/ncclGroupEnd). Plain C++ interface over nccl.cu; no CUDA or
// NCCL header is included.
//
//   const auto& lib = nccl::shared_nccl_library();                 // dlopen'ed libnccl.so.2
//   cuda::CollectiveOptions opt{.gpus = 2, .sizes = bench::size_schedule(8, 1u << 30, 2)};
//   auto t = cuda::run_collective(lib.value()->api(), Collective::kAllReduce, opt);
//   // t->points[k].seconds[i]: time of one collective at sizes[k], one entry per sample
//
// Not thread-safe. Errors: CUDA and NCCL failures as core::Errors naming the call;
// kNotSupported without CUDA.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "bench/multi_gpu.hpp"
#include "bench/nccl_api.hpp"
#include "core/result.hpp"

namespace gpudoc::bench::cuda {

struct CollectiveOptions {
  int gpus = 2;                    // ranks: CUDA devices 0 .. gpus-1, one rank each
  std::vector<std::size_t> sizes;  // nominal sizes in bytes (nccl-tests' "size"), ascending
  int warmup = 5;                  // untimed collectives per size
  int iterations = 20;             // collectives back to back between one pair of events
  int repetitions = 20;            // samples per size
};

struct CollectivePoint {
  std::size_t bytes = 0;        // S as nccl-tests counts it (bench::collective_counts)
  std::size_t count = 0;        // the count argument of each NCCL call (float32 elements)
  std::vector<double> seconds;  // per collective, one entry per sample
  bool verified = false;
  std::string verify_detail;
};

struct CollectiveTiming {
  int ranks = 0;
  double init_seconds = 0;              // ncclCommInitAll, wall clock
  std::vector<CollectivePoint> points;  // one per size whose count is at least 1 element per rank
};

// float32, sum, out of place. A sample: on each GPU an event before and after `iterations`
// grouped collectives; the sample is the longest of the GPUs' event times / iterations.
// Verification at every size, outside the timed region: the receive buffers are poisoned before
// the size's first collective and, after the timed ones, every element on every GPU is compared
// with the closed-form result of the known inputs (input element i of rank r = (r + 1) + i mod 7,
// so every sum is an exact small integer in float32).
[[nodiscard]] core::Result<CollectiveTiming> run_collective(const nccl::NcclApi& api, Collective kind,
                                                            const CollectiveOptions& options);

}  // namespace gpudoc::bench::cuda
