// gpudoc::bench::cuda pcie — host <-> device copy bandwidth over the GPU's host link (PCIe), from
// pinned (page-locked) or pageable host memory, one direction or both at once. Plain C++ interface
// over pcie.cu; no CUDA header is included.
//
//   cuda::PcieOptions opt;                       // 256 MiB per transfer
//   auto t = cuda::run_pcie(bench::PcieDirection::kHostToDevice, cuda::HostMemory::kPinned, opt);
//   // t->seconds[i]: sample i, `transfers_per_sample` transfers (per direction) between two events
//
// Not thread-safe (current device). Errors: every CUDA failure as a core::Error naming the call;
// kNotSupported without CUDA.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/formulas.hpp"
#include "core/result.hpp"

namespace gpudoc::bench::cuda {

enum class HostMemory {
  kPinned,    // cudaHostAlloc: the copy engine reads/writes it directly (DMA)
  kPageable,  // ordinary memory (aligned_alloc, touched): the driver stages it through pinned buffers
};
[[nodiscard]] const char* to_string(HostMemory memory) noexcept;  // "pinned", "pageable"

struct PcieOptions {
  int device = 0;
  std::size_t bytes = std::size_t{256} << 20;  // per transfer, per direction
  int warmup = 2;                              // untimed transfers (per direction) before the samples
  int repetitions = 20;                        // samples
  int transfers_per_sample = 4;                // back-to-back transfers (per direction) between two events
};

struct PcieTiming {
  std::vector<double> seconds;         // per sample
  std::uint64_t bytes_per_sample = 0;  // bytes crossing the link in one sample (both directions summed)
  bool verified = false;
  std::string verify_detail;  // what was checked, or the first mismatch
};

// cudaMemcpyAsync on non-blocking streams. Bidirectional: host-to-device on one stream and
// device-to-host on another, each issued by its own host thread (a pageable copy blocks the thread
// that issues it), both released together after the start event; the stop event is recorded once
// both streams finished. Verification, outside the timed region: the destination(s) are poisoned,
// one more transfer runs, and every 32-bit word is compared with the source pattern.
[[nodiscard]] core::Result<PcieTiming> run_pcie(PcieDirection direction, HostMemory memory, const PcieOptions& options);

}  // namespace gpudoc::bench::cuda
