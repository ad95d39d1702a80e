// gpudoc::bench::cuda p2p — GPU-to-GPU copies and remote-read latency between two GPUs of one
// machine, with peer access enabled. Plain C++ interface over p2p.cu; no CUDA header is included.
//
//   auto can = cuda::can_access_peer(0, 1);                        // Result<bool>
//   auto t = cuda::run_p2p_copy(0, 1, /*bidirectional=*/false, {});
//   // t->seconds[i]: time of one copy (bidirectional: of one copy each way at once)
//   auto l = cuda::run_p2p_latency(0, 1, {});                      // GPU 0 reads GPU 1's memory
//   // l->seconds[i]: time of one dependent remote load
//
// Peer access is enabled for the duration of a call and disabled again on return when the call
// enabled it (it is this process's mapping, not a GPU setting). Not thread-safe (changes the
// calling thread's current device). Errors: every CUDA failure as a core::Error naming the call;
// kNotSupported when the pair has no peer access or without CUDA.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace gpudoc::bench::cuda {

// cudaDeviceCanAccessPeer(device, peer): whether `device` can map `peer`'s memory.
[[nodiscard]] core::Result<bool> can_access_peer(int device, int peer);

struct P2pCopyOptions {
  std::size_t buffer_bytes = std::size_t{256} << 20;  // bytes per copy (per direction)
  int warmup = 3;                                     // untimed copies before the samples
  int repetitions = 20;                               // samples
  int copies_per_sample = 5;                          // back-to-back copies between one pair of events
};

struct P2pCopyTiming {
  std::vector<double> seconds;     // per copy (bidirectional: per simultaneous pair of copies)
  std::size_t bytes_per_copy = 0;  // bytes moved by one copy in one direction
  bool verified = false;
  std::string verify_detail;  // what was checked, or the first mismatch
};

// cudaMemcpyPeerAsync of `buffer_bytes` from `src` to `dst`, issued on a stream of `src` (its copy
// engine pushes the data). bidirectional: at the same time the same copy from `dst` to `src` on a
// stream of `dst`; a sample then spans both directions (events on `src`, the other stream joined
// with cudaStreamWaitEvent). Verification, outside the timed region: the destination is poisoned,
// copied once more, and every 32-bit word compared with the source pattern on the GPU.
[[nodiscard]] core::Result<P2pCopyTiming> run_p2p_copy(int src, int dst, bool bidirectional,
                                                       const P2pCopyOptions& options);

struct P2pLatencyOptions {
  std::size_t buffer_bytes = std::size_t{2} << 20;  // the chain's memory on the owner GPU (fits its L2)
  std::size_t stride_bytes = 256;                   // distance between consecutive nodes of the chain
  int accesses = 4096;                              // dependent loads per sample
  int warmup = 2;                                   // untimed chase kernels
  int repetitions = 20;                             // samples
};

struct P2pLatencyTiming {
  std::vector<double> seconds;  // per dependent load, one entry per sample
  bool verified = false;        // the chase ended on the node the chain's arithmetic predicts
  std::string verify_detail;
};

// One thread on `reader` follows a pointer chain that lives in `owner`'s memory, each load
// depending on the previous one and bypassing the reader's caches (ld.global.cv): a sample is one
// kernel of `accesses` loads between two events, divided by `accesses`.
[[nodiscard]] core::Result<P2pLatencyTiming> run_p2p_latency(int reader, int owner, const P2pLatencyOptions& options);

}  // namespace gpudoc::bench::cuda
