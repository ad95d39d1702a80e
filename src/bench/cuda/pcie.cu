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
      return core::Error(core::ErrorKind::kEnvironment,
                         "aligned_alloc: cannot allocate " + std::to_string(bytes) + " bytes of host memory");
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
         std::to_string(first) + " (found " + std::to_string(p[first]) + ", expected " +
         std::to_string(pattern(first, salt)) + ")";
}

// The copies of one run: streams, buffers and events for one direction or both.
class PcieCopies {
 public:
  PcieCopies(PcieDirection direction, HostMemory memory, const PcieOptions& o)
      : h2d_(direction != PcieDirection::kDeviceToHost),
        d2h_(direction != PcieDirection::kHostToDevice),
        memory_(memory),
        o_(o),
        words_(o.bytes / 4) {}

  // Streams, events, the counters; the sources filled with their pattern and every destination
  // page faulted in, so that no sample pays for first touch.
  core::Status prepare() {
    GPUDOC_CUDA_TRY(cudaStreamCreateWithFlags(&up_.s, cudaStreamNonBlocking));
    GPUDOC_CUDA_TRY(cudaStreamCreateWithFlags(&down_.s, cudaStreamNonBlocking));
    GPUDOC_CUDA_TRY(cudaMalloc(&counters_.ptr, 2 * sizeof(unsigned long long)));
    if (h2d_) {
      if (auto st = alloc_host(host_in_, o_.bytes, memory_); !st) return st.error();
      auto* w = static_cast<std::uint32_t*>(host_in_.ptr);
      for (std::size_t i = 0; i < words_; ++i) w[i] = pattern(i, kSaltHostToDevice);  // also faults every page in
      GPUDOC_CUDA_TRY(cudaMalloc(&dev_in_.ptr, o_.bytes));
    }
    if (d2h_) {
      if (auto st = alloc_host(host_out_, o_.bytes, memory_); !st) return st.error();
      std::memset(host_out_.ptr, 0, o_.bytes);  // fault every page in before timing
      GPUDOC_CUDA_TRY(cudaMalloc(&dev_out_.ptr, o_.bytes));
      fill_pattern<<<1024, 256, 0, down_.s>>>(static_cast<std::uint32_t*>(dev_out_.ptr), words_, kSaltDeviceToHost);
      GPUDOC_CUDA_TRY(cudaGetLastError());
      GPUDOC_CUDA_TRY(cudaStreamSynchronize(down_.s));
    }
    GPUDOC_CUDA_TRY(cudaEventCreate(&start_.e));
    GPUDOC_CUDA_TRY(cudaEventCreate(&stop_.e));
    GPUDOC_CUDA_TRY(cudaEventCreate(&down_done_.e));
    return core::ok_status();
  }

  // One sample: `count` transfers per direction between the start and stop events, in seconds.
  core::Result<double> sample(int count) {
    if (!(h2d_ && d2h_)) {
      const cudaStream_t s = h2d_ ? up_.s : down_.s;
      GPUDOC_CUDA_TRY(cudaEventRecord(start_.e, s));
      if (const cudaError_t e = issue(h2d_, count); e != cudaSuccess) return copy_error(h2d_, e);
      GPUDOC_CUDA_TRY(cudaEventRecord(stop_.e, s));
    } else if (auto st = both_directions(count); !st) {
      return st.error();
    }
    GPUDOC_CUDA_TRY(cudaEventSynchronize(stop_.e));
    float ms = 0;
    GPUDOC_CUDA_TRY(cudaEventElapsedTime(&ms, start_.e, stop_.e));
    return static_cast<double>(ms) / 1e3;
  }

  // Verification, outside the timed region: poison the destination(s), transfer once more, compare
  // every word with the source pattern (on the GPU for device memory, on the host for host memory).
  core::Status verify(PcieTiming& t) {
    if (h2d_) GPUDOC_CUDA_TRY(cudaMemset(dev_in_.ptr, 0xFF, o_.bytes));
    if (d2h_) std::memset(host_out_.ptr, 0xFF, o_.bytes);
    GPUDOC_CUDA_TRY(cudaDeviceSynchronize());
    if (auto v = sample(1); !v) return v.error();
    GPUDOC_CUDA_TRY(cudaDeviceSynchronize());
    std::string problems;
    if (h2d_) {
      const unsigned long long init[2] = {0, ~0ull};
      GPUDOC_CUDA_TRY(cudaMemcpy(counters_.ptr, init, sizeof init, cudaMemcpyHostToDevice));
      auto* c = static_cast<unsigned long long*>(counters_.ptr);
      count_mismatches<<<1024, 256>>>(static_cast<const std::uint32_t*>(dev_in_.ptr), words_, kSaltHostToDevice, c,
                                      c + 1);
      GPUDOC_CUDA_TRY(cudaGetLastError());
      unsigned long long got[2] = {0, 0};
      GPUDOC_CUDA_TRY(cudaMemcpy(got, counters_.ptr, sizeof got, cudaMemcpyDeviceToHost));
      if (got[0] != 0)
        problems += std::to_string(got[0]) + " of " + std::to_string(words_) +
                    " words wrong in device memory, first at word " + std::to_string(got[1]);
    }
    if (d2h_) {
      const std::string host = check_host(static_cast<const std::uint32_t*>(host_out_.ptr), words_, kSaltDeviceToHost);
      if (!host.empty()) problems += (problems.empty() ? "" : "; ") + host;
    }
    t.verified = problems.empty();
    t.verify_detail = t.verified ? std::string("every 32-bit word of the poisoned destination") +
                                       (h2d_ && d2h_ ? "s" : "") + " equals the source pattern after one more transfer"
                                 : problems;
    return core::ok_status();
  }

 private:
  cudaError_t issue(bool to_device, int count) const {
    for (int i = 0; i < count; ++i) {
      const cudaError_t e =
          to_device ? cudaMemcpyAsync(dev_in_.ptr, host_in_.ptr, o_.bytes, cudaMemcpyHostToDevice, up_.s)
                    : cudaMemcpyAsync(host_out_.ptr, dev_out_.ptr, o_.bytes, cudaMemcpyDeviceToHost, down_.s);
      if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
  }

  static core::Error copy_error(bool to_device, cudaError_t e) {
    (void)cudaGetLastError();
    return cuda_error(to_device ? "cudaMemcpyAsync (host to device)" : "cudaMemcpyAsync (device to host)", e);
  }

  // Both directions, each from its own thread, released together once the start event is in; the
  // stop event is recorded once both streams finished.
  core::Status both_directions(int count) {
    std::atomic<bool> go{false};
    cudaError_t e_up = cudaSuccess;
    cudaError_t e_down = cudaSuccess;
    auto worker = [&](bool to_device, cudaError_t* e) {
      *e = cudaSetDevice(o_.device);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      if (*e == cudaSuccess) *e = issue(to_device, count);
    };
    std::thread t_up(worker, true, &e_up);
    std::thread t_down(worker, false, &e_down);
    const cudaError_t e_start = cudaEventRecord(start_.e, up_.s);
    const cudaError_t e_wait = e_start == cudaSuccess ? cudaStreamWaitEvent(down_.s, start_.e, 0) : e_start;
    go.store(true, std::memory_order_release);
    t_up.join();
    t_down.join();
    GPUDOC_CUDA_TRY(e_start);
    GPUDOC_CUDA_TRY(e_wait);
    if (e_up != cudaSuccess) return copy_error(true, e_up);
    if (e_down != cudaSuccess) return copy_error(false, e_down);
    GPUDOC_CUDA_TRY(cudaEventRecord(down_done_.e, down_.s));
    GPUDOC_CUDA_TRY(cudaStreamWaitEvent(up_.s, down_done_.e, 0));
    GPUDOC_CUDA_TRY(cudaEventRecord(stop_.e, up_.s));
    return core::ok_status();
  }

  const bool h2d_;
  const bool d2h_;
  const HostMemory memory_;
  const PcieOptions& o_;
  const std::size_t words_;
  Stream up_;             // host to device
  Stream down_;           // device to host
  HostBuffer host_in_;    // H2D source
  HostBuffer host_out_;   // D2H destination
  DeviceBuffer dev_in_;   // H2D destination
  DeviceBuffer dev_out_;  // D2H source
  DeviceBuffer counters_;
  Event start_;
  Event stop_;
  Event down_done_;
};

}  // namespace

const char* to_string(HostMemory memory) noexcept { return memory == HostMemory::kPinned ? "pinned" : "pageable"; }

core::Result<PcieTiming> run_pcie(PcieDirection direction, HostMemory memory, const PcieOptions& o) {
  if (o.repetitions < 1 || o.transfers_per_sample < 1 || o.warmup < 0 || o.bytes < (std::size_t{1} << 20) ||
      o.bytes % 4096 != 0)
    return core::Error(core::ErrorKind::kUsage,
                       "run_pcie: repetitions and transfers must be >= 1; bytes >= 1 MiB and a multiple of 4096");
  GPUDOC_CUDA_TRY(cudaSetDevice(o.device));
  PcieCopies copies(direction, memory, o);
  if (auto st = copies.prepare(); !st) return st.error();
  if (o.warmup > 0) {
    auto w = copies.sample(o.warmup);
    if (!w) return w.error();
  }
  PcieTiming t;
  t.bytes_per_sample = pcie_bytes_per_sample(direction, o.bytes, o.transfers_per_sample);
  for (int r = 0; r < o.repetitions; ++r) {
    auto sec = copies.sample(o.transfers_per_sample);
    if (!sec) return sec.error();
    t.seconds.push_back(*sec);
  }
  if (auto st = copies.verify(t); !st) return st.error();
  return t;
}

}  // namespace gpudoc::bench::cuda
