// gpudoc::bench::cuda hbm — device-memory bandwidth kernels (copy, read-only, write-only) and
// their timing loop. Plain C++ interface over hbm.cu; no CUDA header is included.
//
//   cuda::HbmOptions opt{.device = 0, .buffer_bytes = 1ull << 30, .repetitions = 20};
//   auto t = cuda::run_hbm(cuda::HbmKernel::kCopy, opt);
//   // t->seconds[i]: one sample = one launch's share of `launches_per_sample` timed launches
//
// Not thread-safe (uses the calling thread's current device). Errors: every CUDA failure as a
// core::Error naming the call; kNotSupported without CUDA.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace gpudoc::bench::cuda {

enum class HbmKernel { kCopy, kRead, kWrite };

struct HbmOptions {
  int device = 0;
  std::size_t buffer_bytes = std::size_t{1} << 30;  // per buffer; copy uses two (source + destination)
  int warmup = 3;                                   // untimed launches before the samples, at least
  double warmup_seconds = 0.5;                      // ... and untimed launches for at least this long
  int repetitions = 20;                             // samples
  int launches_per_sample = 5;                      // launches between one pair of events
};

struct HbmTiming {
  std::vector<double> seconds;       // per launch, one entry per sample
  std::size_t bytes_per_launch = 0;  // bytes moved by one launch (copy: read + write)
  int blocks = 0;
  int threads_per_block = 0;
  int warmup_launches = 0;    // untimed launches actually run
  double warmup_seconds = 0;  // how long they took
  bool verified = false;
  std::string verify_detail;  // what was checked, or the first mismatch
};

[[nodiscard]] core::Result<HbmTiming> run_hbm(HbmKernel kernel, const HbmOptions& options);

}  // namespace gpudoc::bench::cuda
