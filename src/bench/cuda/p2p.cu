// GPU-to-GPU copies (copy engines, cudaMemcpyPeerAsync) and remote-read latency (a pointer chase
// through peer memory), behind cuda/p2p.hpp.
//
// Copy buffers hold 32-bit words equal to (index XOR a per-GPU salt), so a copy that landed from
// the wrong GPU, or not at all, is caught word by word.
#include <cstdint>
#include <string>

#include "bench/cuda/check.cuh"
#include "bench/cuda/multi_device.cuh"
#include "bench/cuda/p2p.hpp"
#include "bench/cuda/raii.cuh"

namespace gpudoc::bench::cuda {
namespace {

constexpr unsigned kThreads = 256;
constexpr unsigned kBlocks = 1024;

unsigned salt_of(int device) { return 0x9E3779B9u * static_cast<unsigned>(device + 1); }

__global__ void fill_pattern_kernel(unsigned* __restrict__ p, std::size_t n, unsigned salt) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = static_cast<unsigned>(i) ^ salt;
}

__global__ void count_mismatches_kernel(const unsigned* __restrict__ p, std::size_t n, unsigned salt,
                                        unsigned long long* __restrict__ bad, unsigned long long* __restrict__ first) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    if (p[i] != (static_cast<unsigned>(i) ^ salt)) {
      atomicAdd(bad, 1ull);
      atomicMin(first, static_cast<unsigned long long>(i));
    }
  }
}

// Node k of the chain (at base + k·stride) holds the address of node (k + 1) mod nodes.
__global__ void build_chain_kernel(char* base, std::size_t nodes, std::size_t stride) {
  for (std::size_t k = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; k < nodes;
       k += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    auto* node = reinterpret_cast<unsigned long long*>(base + k * stride);
    *node = reinterpret_cast<unsigned long long>(base + ((k + 1) % nodes) * stride);
  }
}

// One thread, `accesses` dependent loads. ld.global.cv ("cache volatile": fetch again, keep
// nothing in the reader's caches) so every load crosses the link; the end address is stored so
// the loads cannot be removed and the host can check where the chase ended.
__global__ void chase_kernel(const unsigned long long* start, int accesses, unsigned long long* out) {
  const unsigned long long* p = start;
  for (int i = 0; i < accesses; ++i) {
    unsigned long long next = 0;
    asm volatile("ld.global.cv.u64 %0, [%1];" : "=l"(next) : "l"(p) : "memory");
    p = reinterpret_cast<const unsigned long long*>(next);
  }
  *out = reinterpret_cast<unsigned long long>(p);
}

// Peer access from `device` to `peer`, disabled again on destruction when this guard enabled it.
struct PeerAccess {
  int device = -1;
  int peer = -1;
  bool enabled_here = false;
  PeerAccess() = default;
  PeerAccess(const PeerAccess&) = delete;
  PeerAccess& operator=(const PeerAccess&) = delete;
  ~PeerAccess() {
    if (enabled_here) {
      (void)cudaSetDevice(device);
      (void)cudaDeviceDisablePeerAccess(peer);
      (void)cudaGetLastError();
    }
  }
};

core::Status enable_peer(PeerAccess& g, int device, int peer) {
  int can = 0;
  GPUDOC_CUDA_TRY(cudaDeviceCanAccessPeer(&can, device, peer));
  if (can == 0)
    return core::Error(core::ErrorKind::kNotSupported, "GPU " + std::to_string(device) + " cannot access GPU " +
                                                           std::to_string(peer) +
                                                           "'s memory (cudaDeviceCanAccessPeer: 0)");
  GPUDOC_CUDA_TRY(cudaSetDevice(device));
  const cudaError_t e = cudaDeviceEnablePeerAccess(peer, 0);
  if (e == cudaErrorPeerAccessAlreadyEnabled) {
    (void)cudaGetLastError();  // someone in this process enabled it already: leave it to them
    return core::ok_status();
  }
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return cuda_error("cudaDeviceEnablePeerAccess", e);
  }
  g.device = device;
  g.peer = peer;
  g.enabled_here = true;
  return core::ok_status();
}

core::Status fill(GpuBuffer& b, std::size_t words, unsigned salt) {
  GPUDOC_CUDA_TRY(cudaSetDevice(b.device));
  fill_pattern_kernel<<<kBlocks, kThreads>>>(static_cast<unsigned*>(b.ptr), words, salt);
  GPUDOC_CUDA_TRY(cudaGetLastError());
  GPUDOC_CUDA_TRY(cudaDeviceSynchronize());
  return core::ok_status();
}

// Counts words of `b` that differ from the pattern of `salt`; "" when none, else the first one.
core::Result<std::string> check_pattern(GpuBuffer& b, std::size_t words, unsigned salt) {
  GPUDOC_CUDA_TRY(cudaSetDevice(b.device));
  DeviceBuffer counters;
  GPUDOC_CUDA_TRY(cudaMalloc(&counters.ptr, 2 * sizeof(unsigned long long)));
  auto* c = static_cast<unsigned long long*>(counters.ptr);
  const unsigned long long init[2] = {0, ~0ull};
  GPUDOC_CUDA_TRY(cudaMemcpy(c, init, sizeof init, cudaMemcpyHostToDevice));
  count_mismatches_kernel<<<kBlocks, kThreads>>>(static_cast<const unsigned*>(b.ptr), words, salt, c, c + 1);
  GPUDOC_CUDA_TRY(cudaGetLastError());
  unsigned long long got[2] = {0, 0};
  GPUDOC_CUDA_TRY(cudaMemcpy(got, c, sizeof got, cudaMemcpyDeviceToHost));
  if (got[0] == 0) return std::string();
  return std::to_string(got[0]) + " of " + std::to_string(words) + " words on GPU " + std::to_string(b.device) +
         " wrong, first at word " + std::to_string(got[1]);
}

}  // namespace

core::Result<bool> can_access_peer(int device, int peer) {
  int can = 0;
  GPUDOC_CUDA_TRY(cudaDeviceCanAccessPeer(&can, device, peer));
  return can != 0;
}

core::Result<P2pCopyTiming> run_p2p_copy(int src, int dst, bool bidirectional, const P2pCopyOptions& options) {
  if (src == dst || options.repetitions < 1 || options.copies_per_sample < 1 || options.warmup < 0 ||
      options.buffer_bytes < (std::size_t{1} << 20))
    return core::Error(core::ErrorKind::kUsage,
                       "run_p2p_copy: two different GPUs, repetitions and copies >= 1, buffer >= 1 MiB");
  const std::size_t bytes = options.buffer_bytes / 4 * 4;
  const std::size_t words = bytes / 4;
  if (words > (std::size_t{1} << 32))
    return core::Error(core::ErrorKind::kUsage,
                       "run_p2p_copy: buffers above 16 GiB are not supported (32-bit pattern)");

  PeerAccess forward;
  PeerAccess backward;
  if (auto st = enable_peer(forward, src, dst); !st) return st.error();
  if (bidirectional)
    if (auto st = enable_peer(backward, dst, src); !st) return st.error();

  // a: src -> dst; b (bidirectional): dst -> src.
  GpuBuffer a_from;
  GpuBuffer a_to;
  GpuBuffer b_from;
  GpuBuffer b_to;
  if (auto st = allocate(a_from, src, bytes); !st) return st.error();
  if (auto st = allocate(a_to, dst, bytes); !st) return st.error();
  if (bidirectional) {
    if (auto st = allocate(b_from, dst, bytes); !st) return st.error();
    if (auto st = allocate(b_to, src, bytes); !st) return st.error();
  }
  if (auto st = fill(a_from, words, salt_of(src)); !st) return st.error();
  if (bidirectional)
    if (auto st = fill(b_from, words, salt_of(dst)); !st) return st.error();

  Stream stream_a;
  Stream stream_b;
  Event start;
  Event stop;
  Event b_done;
  GPUDOC_CUDA_TRY(cudaSetDevice(src));
  GPUDOC_CUDA_TRY(cudaStreamCreateWithFlags(&stream_a.s, cudaStreamNonBlocking));
  GPUDOC_CUDA_TRY(cudaEventCreate(&start.e));
  GPUDOC_CUDA_TRY(cudaEventCreate(&stop.e));
  if (bidirectional) {
    GPUDOC_CUDA_TRY(cudaSetDevice(dst));
    GPUDOC_CUDA_TRY(cudaStreamCreateWithFlags(&stream_b.s, cudaStreamNonBlocking));
    GPUDOC_CUDA_TRY(cudaEventCreateWithFlags(&b_done.e, cudaEventDisableTiming));
  }

  auto issue = [&](int copies) -> core::Status {
    for (int k = 0; k < copies; ++k) {
      GPUDOC_CUDA_TRY(cudaMemcpyPeerAsync(a_to.ptr, dst, a_from.ptr, src, bytes, stream_a.s));
      if (bidirectional) GPUDOC_CUDA_TRY(cudaMemcpyPeerAsync(b_to.ptr, src, b_from.ptr, dst, bytes, stream_b.s));
    }
    return core::ok_status();
  };
  auto sync_both = [&]() -> core::Status {
    GPUDOC_CUDA_TRY(cudaStreamSynchronize(stream_a.s));
    if (bidirectional) GPUDOC_CUDA_TRY(cudaStreamSynchronize(stream_b.s));
    return core::ok_status();
  };

  if (auto st = issue(options.warmup); !st) return st.error();
  if (auto st = sync_both(); !st) return st.error();

  P2pCopyTiming t;
  t.bytes_per_copy = bytes;
  for (int r = 0; r < options.repetitions; ++r) {
    GPUDOC_CUDA_TRY(cudaSetDevice(src));
    GPUDOC_CUDA_TRY(cudaEventRecord(start.e, stream_a.s));
    // The other direction starts when this one does, and the stop event waits for both.
    if (bidirectional) GPUDOC_CUDA_TRY(cudaStreamWaitEvent(stream_b.s, start.e, 0));
    if (auto st = issue(options.copies_per_sample); !st) return st.error();
    if (bidirectional) {
      GPUDOC_CUDA_TRY(cudaSetDevice(dst));
      GPUDOC_CUDA_TRY(cudaEventRecord(b_done.e, stream_b.s));
      GPUDOC_CUDA_TRY(cudaStreamWaitEvent(stream_a.s, b_done.e, 0));
      GPUDOC_CUDA_TRY(cudaSetDevice(src));
    }
    GPUDOC_CUDA_TRY(cudaEventRecord(stop.e, stream_a.s));
    GPUDOC_CUDA_TRY(cudaEventSynchronize(stop.e));
    float ms = 0;
    GPUDOC_CUDA_TRY(cudaEventElapsedTime(&ms, start.e, stop.e));
    t.seconds.push_back(static_cast<double>(ms) / 1e3 / options.copies_per_sample);
  }
  if (auto st = sync_both(); !st) return st.error();

  // Verification, outside the timed region: poison each destination, copy once more, compare
  // every word with the source GPU's pattern.
  GPUDOC_CUDA_TRY(cudaSetDevice(dst));
  GPUDOC_CUDA_TRY(cudaMemset(a_to.ptr, 0xFF, bytes));
  GPUDOC_CUDA_TRY(cudaDeviceSynchronize());
  if (bidirectional) {
    GPUDOC_CUDA_TRY(cudaSetDevice(src));
    GPUDOC_CUDA_TRY(cudaMemset(b_to.ptr, 0xFF, bytes));
    GPUDOC_CUDA_TRY(cudaDeviceSynchronize());
  }
  if (auto st = issue(1); !st) return st.error();
  if (auto st = sync_both(); !st) return st.error();
  auto a_check = check_pattern(a_to, words, salt_of(src));
  if (!a_check) return a_check.error();
  std::string problem = *a_check;
  if (bidirectional && problem.empty()) {
    auto b_check = check_pattern(b_to, words, salt_of(dst));
    if (!b_check) return b_check.error();
    problem = *b_check;
  }
  t.verified = problem.empty();
  t.verify_detail = t.verified ? std::string("every word of the destination") + (bidirectional ? "s" : "") +
                                     " matches the source after poisoning and one more copy"
                               : problem;
  return t;
}

core::Result<P2pLatencyTiming> run_p2p_latency(int reader, int owner, const P2pLatencyOptions& options) {
  if (reader == owner || options.repetitions < 1 || options.accesses < 1 || options.warmup < 0 ||
      options.stride_bytes < 8 || options.stride_bytes % 8 != 0 || options.buffer_bytes < 2 * options.stride_bytes)
    return core::Error(core::ErrorKind::kUsage,
                       "run_p2p_latency: two different GPUs, repetitions and accesses >= 1, stride a multiple of 8, "
                       "buffer >= 2 strides");
  PeerAccess access;
  if (auto st = enable_peer(access, reader, owner); !st) return st.error();

  const std::size_t nodes = options.buffer_bytes / options.stride_bytes;
  GpuBuffer chain;
  if (auto st = allocate(chain, owner, nodes * options.stride_bytes); !st) return st.error();
  auto* base = static_cast<char*>(chain.ptr);
  build_chain_kernel<<<kBlocks, kThreads>>>(base, nodes, options.stride_bytes);
  GPUDOC_CUDA_TRY(cudaGetLastError());
  GPUDOC_CUDA_TRY(cudaDeviceSynchronize());

  GpuBuffer out_buf;
  if (auto st = allocate(out_buf, reader, sizeof(unsigned long long)); !st) return st.error();
  auto* out = static_cast<unsigned long long*>(out_buf.ptr);
  Stream stream;
  Event start;
  Event stop;
  GPUDOC_CUDA_TRY(cudaSetDevice(reader));
  GPUDOC_CUDA_TRY(cudaStreamCreateWithFlags(&stream.s, cudaStreamNonBlocking));
  GPUDOC_CUDA_TRY(cudaEventCreate(&start.e));
  GPUDOC_CUDA_TRY(cudaEventCreate(&stop.e));
  const auto* first = reinterpret_cast<const unsigned long long*>(base);

  for (int i = 0; i < options.warmup; ++i) {
    chase_kernel<<<1, 1, 0, stream.s>>>(first, options.accesses, out);
    GPUDOC_CUDA_TRY(cudaGetLastError());
  }
  GPUDOC_CUDA_TRY(cudaStreamSynchronize(stream.s));

  P2pLatencyTiming t;
  for (int r = 0; r < options.repetitions; ++r) {
    GPUDOC_CUDA_TRY(cudaEventRecord(start.e, stream.s));
    chase_kernel<<<1, 1, 0, stream.s>>>(first, options.accesses, out);
    GPUDOC_CUDA_TRY(cudaGetLastError());
    GPUDOC_CUDA_TRY(cudaEventRecord(stop.e, stream.s));
    GPUDOC_CUDA_TRY(cudaEventSynchronize(stop.e));
    float ms = 0;
    GPUDOC_CUDA_TRY(cudaEventElapsedTime(&ms, start.e, stop.e));
    t.seconds.push_back(static_cast<double>(ms) / 1e3 / options.accesses);
  }

  // Verification, outside the timed region: the chase must end on node (accesses mod nodes).
  GPUDOC_CUDA_TRY(cudaMemsetAsync(out, 0, sizeof(unsigned long long), stream.s));
  chase_kernel<<<1, 1, 0, stream.s>>>(first, options.accesses, out);
  GPUDOC_CUDA_TRY(cudaGetLastError());
  unsigned long long got = 0;
  GPUDOC_CUDA_TRY(cudaMemcpyAsync(&got, out, sizeof got, cudaMemcpyDeviceToHost, stream.s));
  GPUDOC_CUDA_TRY(cudaStreamSynchronize(stream.s));
  const auto want = reinterpret_cast<unsigned long long>(base + (static_cast<std::size_t>(options.accesses) % nodes) *
                                                                    options.stride_bytes);
  t.verified = got == want;
  t.verify_detail =
      t.verified
          ? "the chase of " + std::to_string(options.accesses) + " remote loads ended on the node the chain predicts"
          : "the chase ended at address " + std::to_string(got) + ", expected " + std::to_string(want);
  return t;
}

}  // namespace gpudoc::bench::cuda
