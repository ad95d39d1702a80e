// Device-memory bandwidth kernels and their timing loop, behind cuda/hbm.hpp.
//
// Buffers hold 32-bit words whose value is their index, so a copy or a write can be checked at any
// sampled position and a full read has a closed-form XOR checksum.
#include <cstdint>
#include <string>
#include <vector>

#include "bench/cuda/check.cuh"
#include "bench/cuda/hbm.hpp"
#include "bench/cuda/raii.cuh"

namespace gpudoc::bench::cuda {
namespace {

constexpr int kThreads = 256;
constexpr std::size_t kVerifySamples = 1 << 16;
// 16-byte vectors per thread per iteration. All of an iteration's loads are issued before any of its
// stores (or its XOR), so each thread has kUnroll * 16 bytes in flight, not 16.
constexpr int kUnroll = 4;

// Loads and stores with the streaming (evict-first, ".cs") hint: every byte is touched once per
// pass over a buffer many times the L2, so keeping lines in cache buys nothing.
__device__ __forceinline__ uint4 load_stream(const uint4* p) { return __ldcs(p); }
__device__ __forceinline__ void store_stream(uint4* p, uint4 v) { __stcs(p, v); }

__device__ __forceinline__ uint4 index_vector(std::size_t i) {
  const auto w = static_cast<unsigned>(4 * i);
  return make_uint4(w, w + 1, w + 2, w + 3);
}

// Work split shared by the read and write kernels: the buffer is cut into chunks of grid * kUnroll vectors;
// in a full chunk, thread t of block b owns vectors chunk + b * blockDim * kUnroll + u * blockDim + t
// (u < kUnroll: each of the kUnroll accesses is coalesced across the warp), with no bounds check.
// The vectors after the last full chunk (fewer than one chunk) go grid-stride, one at a time.
struct Split {
  std::size_t first;       // this thread's first vector in chunk 0
  std::size_t chunk;       // vectors per chunk
  std::size_t full_end;    // end of the last full chunk
  std::size_t tail_first;  // this thread's first tail vector
  std::size_t stride;      // grid size, for the tail
};
__device__ __forceinline__ Split split(std::size_t n) {
  Split p;
  p.stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  p.chunk = p.stride * kUnroll;
  p.first = static_cast<std::size_t>(blockIdx.x) * blockDim.x * kUnroll + threadIdx.x;
  p.full_end = n / p.chunk * p.chunk;
  p.tail_first = p.full_end + static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  return p;
}

__global__ void fill_index_kernel(uint4* __restrict__ dst, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const auto w = static_cast<unsigned>(4 * i);
    dst[i] = make_uint4(w, w + 1, w + 2, w + 3);
  }
}

// Copy: one 16-byte vector per thread and one block per 256 vectors, no loop. On an H200 this
// shape copies faster than the persistent grid-stride loop of the read and write kernels (with or
// without streaming hints, 2 to 8 vectors in flight per thread, 256 or 512 threads) and than
// cudaMemcpyAsync (the variants compared: docs/methodology.md, docs/results/bench-h200.md).
__global__ void copy_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst, std::size_t n) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[i];
}

// Reads every vector and folds it into one XOR per thread, then one atomicXor per thread: the
// result is used, so the loads cannot be removed, and it is the checksum the host verifies.
__global__ void read_kernel(const uint4* __restrict__ src, std::size_t n, unsigned* __restrict__ checksum) {
  const Split p = split(n);
  unsigned acc = 0;
  for (std::size_t base = p.first; base < p.full_end; base += p.chunk) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = load_stream(src + base + static_cast<std::size_t>(u) * blockDim.x);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  for (std::size_t i = p.tail_first; i < n; i += p.stride) {
    const uint4 v = load_stream(src + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  atomicXor(checksum, acc);
}

__global__ void write_kernel(uint4* __restrict__ dst, std::size_t n) {
  const Split p = split(n);
  for (std::size_t base = p.first; base < p.full_end; base += p.chunk) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::size_t i = base + static_cast<std::size_t>(u) * blockDim.x;
      store_stream(dst + i, index_vector(i));
    }
  }
  for (std::size_t i = p.tail_first; i < n; i += p.stride) store_stream(dst + i, index_vector(i));
}

// Word index of sample i of `samples` spread evenly over `words` (first and last included).
__host__ __device__ std::size_t sample_index(std::size_t i, std::size_t samples, std::size_t words) {
  return samples <= 1 ? 0
                      : static_cast<std::size_t>((static_cast<unsigned long long>(i) * (words - 1)) / (samples - 1));
}

__global__ void gather_kernel(const unsigned* __restrict__ words, std::size_t n_words, unsigned* __restrict__ out,
                              std::size_t samples) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < samples) out[i] = words[sample_index(i, samples, n_words)];
}

// XOR of 0..m (the closed form of the read checksum of an index-valued buffer).
unsigned xor_upto(unsigned long long m) {
  switch (m % 4) {
    case 0: return static_cast<unsigned>(m);
    case 1: return 1;
    case 2: return static_cast<unsigned>(m + 1);
    default: return 0;
  }
}

// Checks sampled words of `buf` equal their index.
core::Result<std::string> verify_index_pattern(const void* buf, std::size_t bytes) {
  const std::size_t words = bytes / 4;
  DeviceBuffer out;
  GPUDOC_CUDA_TRY(cudaMalloc(&out.ptr, kVerifySamples * sizeof(unsigned)));
  gather_kernel<<<static_cast<unsigned>((kVerifySamples + kThreads - 1) / kThreads), kThreads>>>(
      static_cast<const unsigned*>(buf), words, static_cast<unsigned*>(out.ptr), kVerifySamples);
  GPUDOC_CUDA_TRY(cudaGetLastError());
  std::vector<unsigned> host(kVerifySamples);
  GPUDOC_CUDA_TRY(cudaMemcpy(host.data(), out.ptr, kVerifySamples * sizeof(unsigned), cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < kVerifySamples; ++i) {
    const std::size_t w = sample_index(i, kVerifySamples, words);
    if (host[i] != static_cast<unsigned>(w))
      return std::string("MISMATCH at word ") + std::to_string(w) + ": expected " +
             std::to_string(static_cast<unsigned>(w)) + ", found " + std::to_string(host[i]);
  }
  return std::string();
}

}  // namespace

core::Result<HbmTiming> run_hbm(HbmKernel kernel, const HbmOptions& options) {
  if (options.repetitions < 1 || options.launches_per_sample < 1 || options.buffer_bytes < (1u << 20))
    return core::Error(core::ErrorKind::kUsage, "run_hbm: repetitions and launches must be >= 1, buffer >= 1 MiB");
  GPUDOC_CUDA_TRY(cudaSetDevice(options.device));
  const std::size_t bytes = options.buffer_bytes / 16 * 16;
  const std::size_t n = bytes / 16;
  if (bytes / 4 > (std::size_t{1} << 32))
    return core::Error(core::ErrorKind::kUsage,
                       "run_hbm: buffers above 16 GiB are not supported (32-bit word pattern)");

  HbmTiming t;
  int blocks_per_sm = 0;
  int sms = 0;
  GPUDOC_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, options.device));
  switch (kernel) {
    case HbmKernel::kCopy: break;  // one block per kThreads vectors, not a resident grid
    case HbmKernel::kRead:
      GPUDOC_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, read_kernel, kThreads, 0));
      break;
    case HbmKernel::kWrite:
      GPUDOC_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, write_kernel, kThreads, 0));
      break;
  }
  t.blocks = kernel == HbmKernel::kCopy ? static_cast<int>((n + kThreads - 1) / kThreads)
                                        : sms * (blocks_per_sm > 0 ? blocks_per_sm : 1);
  t.threads_per_block = kThreads;
  t.bytes_per_launch = kernel == HbmKernel::kCopy ? 2 * bytes : bytes;

  DeviceBuffer src;
  DeviceBuffer dst;
  DeviceBuffer checksum;
  GPUDOC_CUDA_TRY(cudaMalloc(&src.ptr, bytes));
  if (kernel == HbmKernel::kCopy) GPUDOC_CUDA_TRY(cudaMalloc(&dst.ptr, bytes));
  GPUDOC_CUDA_TRY(cudaMalloc(&checksum.ptr, sizeof(unsigned)));
  auto* s = static_cast<uint4*>(src.ptr);
  auto* d = static_cast<uint4*>(dst.ptr);
  auto* sum = static_cast<unsigned*>(checksum.ptr);
  const auto grid = static_cast<unsigned>(t.blocks);
  if (kernel != HbmKernel::kWrite) {
    fill_index_kernel<<<grid, kThreads>>>(s, n);
    GPUDOC_CUDA_TRY(cudaGetLastError());
  }
  auto launch = [&]() -> core::Status {
    switch (kernel) {
      case HbmKernel::kCopy: copy_kernel<<<grid, kThreads>>>(s, d, n); break;  // grid: one block per kThreads vectors
      case HbmKernel::kRead: read_kernel<<<grid, kThreads>>>(s, n, sum); break;
      case HbmKernel::kWrite: write_kernel<<<grid, kThreads>>>(s, n); break;
    }
    GPUDOC_CUDA_TRY(cudaGetLastError());
    return core::ok_status();
  };

  Event start;
  Event stop;
  GPUDOC_CUDA_TRY(cudaEventCreate(&start.e));
  GPUDOC_CUDA_TRY(cudaEventCreate(&stop.e));

  // Warm-up by time as well as by count: an idle H200 sits at a low SM clock and needs some hundreds
  // of milliseconds of load to reach its boost clock; 10 launches (~5 ms) once left a whole copy run
  // at 345 MHz.
  GPUDOC_CUDA_TRY(cudaEventRecord(start.e));
  for (float warm_ms = 0; t.warmup_launches < options.warmup || warm_ms < options.warmup_seconds * 1e3;) {
    for (int i = 0; i < 10; ++i)
      if (auto st = launch(); !st) return st.error();
    t.warmup_launches += 10;
    GPUDOC_CUDA_TRY(cudaEventRecord(stop.e));
    GPUDOC_CUDA_TRY(cudaEventSynchronize(stop.e));
    GPUDOC_CUDA_TRY(cudaEventElapsedTime(&warm_ms, start.e, stop.e));
    t.warmup_seconds = static_cast<double>(warm_ms) / 1e3;
  }
  for (int r = 0; r < options.repetitions; ++r) {
    GPUDOC_CUDA_TRY(cudaEventRecord(start.e));
    for (int i = 0; i < options.launches_per_sample; ++i)
      if (auto st = launch(); !st) return st.error();
    GPUDOC_CUDA_TRY(cudaEventRecord(stop.e));
    GPUDOC_CUDA_TRY(cudaEventSynchronize(stop.e));
    float ms = 0;
    GPUDOC_CUDA_TRY(cudaEventElapsedTime(&ms, start.e, stop.e));
    t.seconds.push_back(static_cast<double>(ms) / 1e3 / options.launches_per_sample);
  }

  // Verification, outside the timed region: poison the output, run once more, check it.
  switch (kernel) {
    case HbmKernel::kCopy:
    case HbmKernel::kWrite: {
      void* out = kernel == HbmKernel::kCopy ? dst.ptr : src.ptr;
      GPUDOC_CUDA_TRY(cudaMemset(out, 0xFF, bytes));
      if (auto st = launch(); !st) return st.error();
      GPUDOC_CUDA_TRY(cudaDeviceSynchronize());
      auto v = verify_index_pattern(out, bytes);
      if (!v) return v.error();
      t.verified = v->empty();
      t.verify_detail =
          t.verified ? std::to_string(kVerifySamples) + " sampled words equal their index after poisoning" : *v;
      break;
    }
    case HbmKernel::kRead: {
      GPUDOC_CUDA_TRY(cudaMemset(sum, 0, sizeof(unsigned)));
      if (auto st = launch(); !st) return st.error();
      unsigned got = 0;
      GPUDOC_CUDA_TRY(cudaMemcpy(&got, sum, sizeof got, cudaMemcpyDeviceToHost));
      const unsigned want = xor_upto(bytes / 4 - 1);
      t.verified = got == want;
      t.verify_detail = t.verified ? "XOR checksum of every word matches the closed form"
                                   : "XOR checksum " + std::to_string(got) + ", expected " + std::to_string(want);
      break;
    }
  }
  return t;
}

}  // namespace gpudoc::bench::cuda
