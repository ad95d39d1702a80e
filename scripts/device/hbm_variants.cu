// Experiment: which device-to-device copy kernel reaches the H200's copy ceiling (issue 4: gpudoc's
// hbm.copy must reach PyTorch's dst.copy_(src), which is cudaMemcpyAsync device to device).
// Not part of gpudoc: it times copy-kernel variants side by side, interleaved over rounds, on 1 GiB
// buffers after a timed warm-up, and prints one JSON line per variant and round.
//   nvcc -O3 -arch=sm_90 -std=c++17 scripts/device/hbm_variants.cu -o .device/bin/hbm_variants
//   .device/bin/hbm_variants [ROUNDS]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#define CHECK(x)                                                                          \
  do {                                                                                    \
    cudaError_t e_ = (x);                                                                 \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

enum Hint { kPlain, kStream, kStoreStream, kGlobal };

template <Hint H>
__device__ __forceinline__ uint4 ld(const uint4* p) {
  if constexpr (H == kStream) return __ldcs(p);
  if constexpr (H == kGlobal) return __ldcg(p);
  return *p;
}
template <Hint H>
__device__ __forceinline__ void st(uint4* p, uint4 v) {
  if constexpr (H == kStream || H == kStoreStream) __stcs(p, v);
  else if constexpr (H == kGlobal) __stcg(p, v);
  else *p = v;
}

// Persistent grid: chunks of grid*U vectors, U coalesced loads in flight per thread, then U stores.
template <Hint H, int U>
__global__ void copy_persistent(const uint4* __restrict__ s, uint4* __restrict__ d, size_t n) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  const size_t chunk = stride * U;
  const size_t full = n / chunk * chunk;
  for (size_t base = size_t(blockIdx.x) * blockDim.x * U + threadIdx.x; base < full; base += chunk) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = ld<H>(s + base + size_t(u) * blockDim.x);
#pragma unroll
    for (int u = 0; u < U; ++u) st<H>(d + base + size_t(u) * blockDim.x, v[u]);
  }
  for (size_t i = full + size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) st<H>(d + i, ld<H>(s + i));
}

// One block per blockDim*U vectors (no loop): the shape of PyTorch's elementwise kernels.
template <Hint H, int U>
__global__ void copy_oneshot(const uint4* __restrict__ s, uint4* __restrict__ d, size_t n) {
  const size_t base = size_t(blockIdx.x) * blockDim.x * U + threadIdx.x;
  uint4 v[U];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const size_t i = base + size_t(u) * blockDim.x;
    if (i < n) v[u] = ld<H>(s + i);
  }
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const size_t i = base + size_t(u) * blockDim.x;
    if (i < n) st<H>(d + i, v[u]);
  }
}

struct Variant {
  std::string name;
  std::function<void(const uint4*, uint4*, size_t)> launch;
};

template <typename K>
int occupancy_grid(K kernel, int threads) {
  int dev = 0, sms = 0, per_sm = 0;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0));
  return sms * std::max(per_sm, 1);
}

template <Hint H, int U>
Variant persistent(const char* name, int threads, int grid_factor = 1) {
  const int grid = occupancy_grid(copy_persistent<H, U>, threads) * grid_factor;
  return {std::string(name) + " grid=" + std::to_string(grid) + "x" + std::to_string(threads),
          [grid, threads](const uint4* s, uint4* d, size_t n) { copy_persistent<H, U><<<grid, threads>>>(s, d, n); }};
}
template <Hint H, int U>
Variant oneshot(const char* name, int threads) {
  return {std::string(name) + " blocks of " + std::to_string(threads),
          [threads](const uint4* s, uint4* d, size_t n) {
            const size_t per_block = size_t(threads) * U;
            copy_oneshot<H, U><<<unsigned((n + per_block - 1) / per_block), threads>>>(s, d, n);
          }};
}

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 3;
  const size_t bytes = size_t(1) << 30;
  const size_t n = bytes / 16;
  uint4 *s = nullptr, *d = nullptr;
  CHECK(cudaMalloc(&s, bytes));
  CHECK(cudaMalloc(&d, bytes));
  CHECK(cudaMemset(s, 1, bytes));
  std::vector<Variant> vs = {
      persistent<kStream, 4>("persistent ldcs/stcs u4 (gpudoc today)", 256),
      persistent<kPlain, 4>("persistent plain u4", 256),
      persistent<kPlain, 8>("persistent plain u8", 256),
      persistent<kStoreStream, 4>("persistent ld/stcs u4", 256),
      persistent<kGlobal, 4>("persistent ldcg/stcg u4", 256),
      persistent<kPlain, 4>("persistent plain u4", 512),
      persistent<kPlain, 2>("persistent plain u2", 256, 2),
      oneshot<kPlain, 1>("oneshot plain u1", 256),
      oneshot<kPlain, 4>("oneshot plain u4", 256),
      oneshot<kStream, 4>("oneshot ldcs/stcs u4", 256),
      oneshot<kPlain, 2>("oneshot plain u2", 512),
      {"cudaMemcpyAsync D2D", [bytes](const uint4* s, uint4* d, size_t) {
         CHECK(cudaMemcpyAsync(d, s, bytes, cudaMemcpyDeviceToDevice));
       }},
  };
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  // Warm-up by time: clocks rise from idle only after some hundreds of milliseconds of load.
  {
    float ms = 0;
    CHECK(cudaEventRecord(a));
    while (ms < 1500) {
      for (int i = 0; i < 20; ++i) vs[1].launch(s, d, n);
      CHECK(cudaEventRecord(b));
      CHECK(cudaEventSynchronize(b));
      CHECK(cudaEventElapsedTime(&ms, a, b));
    }
  }
  constexpr int kReps = 15, kPer = 10;
  for (int r = 0; r < rounds; ++r) {
    for (auto& v : vs) {
      for (int i = 0; i < 5; ++i) v.launch(s, d, n);
      std::vector<double> gbs;
      for (int rep = 0; rep < kReps; ++rep) {
        CHECK(cudaEventRecord(a));
        for (int i = 0; i < kPer; ++i) v.launch(s, d, n);
        CHECK(cudaEventRecord(b));
        CHECK(cudaEventSynchronize(b));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, a, b));
        gbs.push_back(2.0 * double(bytes) * kPer / (ms * 1e-3) / 1e9);
      }
      CHECK(cudaGetLastError());
      std::sort(gbs.begin(), gbs.end());
      std::printf("{\"round\": %d, \"variant\": \"%s\", \"median_gbs\": %.1f, \"min_gbs\": %.1f, \"max_gbs\": %.1f}\n", r,
                  v.name.c_str(), gbs[kReps / 2], gbs.front(), gbs.back());
      std::fflush(stdout);
    }
  }
  return 0;
}
