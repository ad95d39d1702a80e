// Host <-> device copy bandwidth, behind cuda/pcie.hpp.
//
// Sources hold 32-bit words of a pattern of their index (a salted multiplicative hash, so a chunk
// landing at the wrong offset is caught as surely as a missing one); every destination word is
// checked after a poisoned run.
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "bench/cuda/check.cuh"
#include "bench/cuda/pcie.hpp"
#include "bench/cuda/raii.cuh"

namespace gpudoc::bench::cuda {
namespace {

constexpr std::uint32_t kSaltHostToDevice = 0x13579BDFu;
constexpr std::uint32_t kSaltDeviceToHost = 0x2468ACE0u;

__host__ __device__ std::uint32_t pattern(std::size_t i, std::uint32_t salt) {
  return (static_cast<std::uint32_t>(i) * 2654435761u) ^ salt;
}

__global__ void fill_pattern(std::uint32_t* __restrict__ p, std::size_t n, std::uint32_t salt) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = pattern(i, salt);
}

// Counts words that differ from the pattern and keeps the lowest such index.
__global__ void count_mismatches(const std::uint32_t* __restrict__ p, std::size_t n, std::uint32_t salt,
                                 unsigned long long* bad, unsigned long long* first_bad) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    if (p[i] != pattern(i, salt)) {
      atomicAdd(bad, 1ull);
      atomicMin(first_bad, static_cast<unsigned long long>(i));
    }
  }
}

struct HostBuffer {
  void* ptr = nullptr;
  bool pinned = false;
  HostBuffer() = default;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  ~HostBuffer() {
    if (ptr == nullptr) return;
    if (pinned)
      (void)cudaFreeHost(ptr);
    else
      std::free(ptr);
  }
};

core::Status alloc_host(HostBuffer& h, std::size_t bytes, HostMemory memory) {
  if (memory == HostMemory::kPinned) {
    GPUDOC_CUDA_TRY(cudaHostAlloc(&h.ptr, bytes, cudaHostAllocPortable));
    h.pinned = true;
  } else {
    h.ptr = std::aligned_alloc(4096, bytes);  // bytes is a multiple of 4096 (checked by the caller)
    if (h.ptr == nullptr)
      return core::Error(core::ErrorKind::kEnvironment, "aligned_alloc: cannot allocate " + std::to_string(bytes) + " bytes of host memory");
  }
  return core::ok_status();
}

// Host-side check of every word; "" when all match.
std::string check_host(const std::uint32_t* p, std::size_t n, std::uint32_t salt) {
  std::size_t bad = 0;
  std::size_t first = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (p[i] != pattern(i, salt)) {
      if (bad++ == 0) first = i;
    }
  if (bad == 0) return std::string();
  return std::to_string(bad) + " of " + std::to_string(n) + " words wrong in host memory, first at word " +
         std::to_string(first) + " (found " + std::to_string(p[first]) + ", expected " + std::to_string(pattern(first, salt)) + ")";
}

}  // namespace

const char* to_string(HostMemory memory) noexcept { return memory == HostMemory::kPinned ? "pinned" : "pageable"; }

core::Result<PcieTiming> run_pcie(PcieDirection direction, HostMemory memory, const PcieOptions& o) {
  if (o.repetitions < 1 || o.transfers_per_sample < 1 || o.warmup < 0 || o.bytes < (std::size_t{1} << 20) ||
      o.bytes % 4096 != 0)
    return core::Error(core::ErrorKind::kUsage,
                       "run_pcie: repetitions and transfers must be >= 1; bytes >= 1 MiB and a multiple of 4096");
  const bool h2d = direction != PcieDirection::kDeviceToHost;
  const bool d2h = direction != PcieDirection::kHostToDevice;
  const std::size_t words = o.bytes / 4;
  GPUDOC_CUDA_TRY(cudaSetDevice(o.device));

  Stream up;    // host to device
  Stream down;  // device to host
  GPUDOC_CUDA_TRY(cudaStreamCreateWithFlags(&up.s, cudaStreamNonBlocking));
  GPUDOC_CUDA_TRY(cudaStreamCreateWithFlags(&down.s, cudaStreamNonBlocking));
  HostBuffer host_in;   // H2D source
  HostBuffer host_out;  // D2H destination
  DeviceBuffer dev_in;  // H2D destination
  DeviceBuffer dev_out; // D2H source
  DeviceBuffer counters;
  GPUDOC_CUDA_TRY(cudaMalloc(&counters.ptr, 2 * sizeof(unsigned long long)));
  if (h2d) {
    if (auto st = alloc_host(host_in, o.bytes, memory); !st) return st.error();
    auto* w = static_cast<std::uint32_t*>(host_in.ptr);
    for (std::size_t i = 0; i < words; ++i) w[i] = pattern(i, kSaltHostToDevice);  // also faults every page in
    GPUDOC_CUDA_TRY(cudaMalloc(&dev_in.ptr, o.bytes));
  }
  if (d2h) {
    if (auto st = alloc_host(host_out, o.bytes, memory); !st) return st.error();
    std::memset(host_out.ptr, 0, o.bytes);  // fault every page in before timing
    GPUDOC_CUDA_TRY(cudaMalloc(&dev_out.ptr, o.bytes));
    fill_pattern<<<1024, 256, 0, down.s>>>(static_cast<std::uint32_t*>(dev_out.ptr), words, kSaltDeviceToHost);
    GPUDOC_CUDA_TRY(cudaGetLastError());
    GPUDOC_CUDA_TRY(cudaStreamSynchronize(down.s));
  }

  const int device = o.device;
  auto issue = [&](bool to_device, int count) -> cudaError_t {
    for (int i = 0; i < count; ++i) {
      const cudaError_t e = to_device
                                ? cudaMemcpyAsync(dev_in.ptr, host_in.ptr, o.bytes, cudaMemcpyHostToDevice, up.s)
                                : cudaMemcpyAsync(host_out.ptr, dev_out.ptr, o.bytes, cudaMemcpyDeviceToHost, down.s);
      if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
  };
  auto copy_error = [](bool to_device, cudaError_t e) {
    (void)cudaGetLastError();
    return cuda_error(to_device ? "cudaMemcpyAsync (host to device)" : "cudaMemcpyAsync (device to host)", e);
  };
  Event start;
  Event stop;
  Event down_done;
  GPUDOC_CUDA_TRY(cudaEventCreate(&start.e));
  GPUDOC_CUDA_TRY(cudaEventCreate(&stop.e));
  GPUDOC_CUDA_TRY(cudaEventCreate(&down_done.e));
  // One sample: `count` transfers per direction between the start and stop events, in seconds.
  auto sample = [&](int count) -> core::Result<double> {
    if (!(h2d && d2h)) {
      const cudaStream_t s = h2d ? up.s : down.s;
      GPUDOC_CUDA_TRY(cudaEventRecord(start.e, s));
      if (const cudaError_t e = issue(h2d, count); e != cudaSuccess) return copy_error(h2d, e);
      GPUDOC_CUDA_TRY(cudaEventRecord(stop.e, s));
    } else {
      // Both directions, each from its own thread, released together once the start event is in.
      std::atomic<bool> go{false};
      cudaError_t e_up = cudaSuccess;
      cudaError_t e_down = cudaSuccess;
      auto worker = [&](bool to_device, cudaError_t* e) {
        *e = cudaSetDevice(device);
        while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
        if (*e == cudaSuccess) *e = issue(to_device, count);
      };
      std::thread t_up(worker, true, &e_up);
      std::thread t_down(worker, false, &e_down);
      const cudaError_t e_start = cudaEventRecord(start.e, up.s);
      const cudaError_t e_wait = e_start == cudaSuccess ? cudaStreamWaitEvent(down.s, start.e, 0) : e_start;
      go.store(true, std::memory_order_release);
      t_up.join();
      t_down.join();
      GPUDOC_CUDA_TRY(e_start);
      GPUDOC_CUDA_TRY(e_wait);
      if (e_up != cudaSuccess) return copy_error(true, e_up);
      if (e_down != cudaSuccess) return copy_error(false, e_down);
      GPUDOC_CUDA_TRY(cudaEventRecord(down_done.e, down.s));
      GPUDOC_CUDA_TRY(cudaStreamWaitEvent(up.s, down_done.e, 0));
      GPUDOC_CUDA_TRY(cudaEventRecord(stop.e, up.s));
    }
    GPUDOC_CUDA_TRY(cudaEventSynchronize(stop.e));
    float ms = 0;
    GPUDOC_CUDA_TRY(cudaEventElapsedTime(&ms, start.e, stop.e));
    return static_cast<double>(ms) / 1e3;
  };

  if (o.warmup > 0) {
    auto w = sample(o.warmup);
    if (!w) return w.error();
  }
  PcieTiming t;
  t.bytes_per_sample = pcie_bytes_per_sample(direction, o.bytes, o.transfers_per_sample);
  for (int r = 0; r < o.repetitions; ++r) {
    auto sec = sample(o.transfers_per_sample);
    if (!sec) return sec.error();
    t.seconds.push_back(*sec);
  }

  // Verification, outside the timed region: poison the destination(s), transfer once more, compare
  // every word with the source pattern (on the GPU for device memory, on the host for host memory).
  if (h2d) GPUDOC_CUDA_TRY(cudaMemset(dev_in.ptr, 0xFF, o.bytes));
  if (d2h) std::memset(host_out.ptr, 0xFF, o.bytes);
  GPUDOC_CUDA_TRY(cudaDeviceSynchronize());
  if (auto v = sample(1); !v) return v.error();
  GPUDOC_CUDA_TRY(cudaDeviceSynchronize());
  std::string problems;
  if (h2d) {
    const unsigned long long init[2] = {0, ~0ull};
    GPUDOC_CUDA_TRY(cudaMemcpy(counters.ptr, init, sizeof init, cudaMemcpyHostToDevice));
    auto* c = static_cast<unsigned long long*>(counters.ptr);
    count_mismatches<<<1024, 256>>>(static_cast<const std::uint32_t*>(dev_in.ptr), words, kSaltHostToDevice, c, c + 1);
    GPUDOC_CUDA_TRY(cudaGetLastError());
    unsigned long long got[2] = {0, 0};
    GPUDOC_CUDA_TRY(cudaMemcpy(got, counters.ptr, sizeof got, cudaMemcpyDeviceToHost));
    if (got[0] != 0)
      problems += std::to_string(got[0]) + " of " + std::to_string(words) + " words wrong in device memory, first at word " +
                  std::to_string(got[1]);
  }
  if (d2h) {
    const std::string host = check_host(static_cast<const std::uint32_t*>(host_out.ptr), words, kSaltDeviceToHost);
    if (!host.empty()) problems += (problems.empty() ? "" : "; ") + host;
  }
  t.verified = problems.empty();
  t.verify_detail = t.verified ? std::string("every 32-bit word of the poisoned destination") + (h2d && d2h ? "s" : "") +
                                     " equals the source pattern after one more transfer"
                               : problems;
  return t;
}

}  // namespace gpudoc::bench::cuda
