// NCCL collectives over every GPU of the machine from one thread, behind cuda/nccl.hpp.
#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "bench/cuda/check.cuh"
#include "bench/cuda/multi_device.cuh"
#include "bench/cuda/nccl.hpp"
#include "bench/cuda/raii.cuh"

// Evaluates an NCCL call; on failure returns its core::Error (named `what`) from the function.
#define GPUDOC_NCCL_TRY(api, call, what)                                        \
  do {                                                                          \
    const ::gpudoc::bench::nccl::ncclResult_t gpudoc_nccl_rc_ = (call);         \
    if (gpudoc_nccl_rc_ != ::gpudoc::bench::nccl::ncclSuccess)                  \
      return ::gpudoc::bench::nccl::nccl_error((api), gpudoc_nccl_rc_, (what)); \
  } while (0)

namespace gpudoc::bench::cuda {
namespace {

constexpr unsigned kThreads = 256;
constexpr unsigned kBlocks = 1024;

// Input element i of rank r. Every all-reduce / reduce-scatter sum of these over 8 ranks stays an
// exact small integer in float32.
__host__ __device__ inline float input_value(int rank, std::size_t i) {
  return static_cast<float>(rank + 1) + static_cast<float>(i % 7);
}

__global__ void fill_input_kernel(float* __restrict__ p, std::size_t n, int rank) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = input_value(rank, i);
}

// Output element k on `rank` after the collective (count = the NCCL call's count argument).
__device__ inline float expected_value(int kind, int rank, int ranks, std::size_t count, std::size_t k) {
  const float tri = static_cast<float>(ranks * (ranks + 1) / 2);  // sum over s of (s + 1)
  switch (kind) {
    case 0:  // all_reduce: sum over ranks of input(s, k)
      return tri + static_cast<float>(ranks) * static_cast<float>(k % 7);
    case 1:  // all_gather: block s is rank s's input
      return input_value(static_cast<int>(k / count), k % count);
    default:  // reduce_scatter: block `rank` of the sum
      return tri + static_cast<float>(ranks) * static_cast<float>((static_cast<std::size_t>(rank) * count + k) % 7);
  }
}

__global__ void check_output_kernel(const float* __restrict__ p, std::size_t n, int kind, int rank, int ranks,
                                    std::size_t count, unsigned long long* __restrict__ bad,
                                    unsigned long long* __restrict__ first) {
  for (std::size_t k = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; k < n;
       k += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    if (p[k] != expected_value(kind, rank, ranks, count, k)) {  // NaN (the poison) never compares equal
      atomicAdd(bad, 1ull);
      atomicMin(first, static_cast<unsigned long long>(k));
    }
  }
}

int kind_index(Collective c) {
  switch (c) {
    case Collective::kAllReduce: return 0;
    case Collective::kAllGather: return 1;
    case Collective::kReduceScatter: return 2;
  }
  return 0;
}

// The communicators, one per GPU. Destroyed on success; aborted when the run failed part-way
// (ncclCommDestroy could wait forever on an operation that will never complete).
struct Comms {
  const nccl::NcclApi* api = nullptr;
  std::vector<nccl::ncclComm_t> comms;
  bool failed = true;
  Comms() = default;
  Comms(const Comms&) = delete;
  Comms& operator=(const Comms&) = delete;
  ~Comms() {
    for (nccl::ncclComm_t c : comms) {
      if (c == nullptr) continue;
      (void)(failed ? api->ncclCommAbort(c) : api->ncclCommDestroy(c));
    }
  }
};

struct PerGpu {
  GpuBuffer send;
  GpuBuffer recv;
  GpuBuffer counters;  // mismatch count, first mismatching element
  Stream stream;
  Event start;
  Event stop;
};

constexpr std::size_t kElem = sizeof(float);

// The element counts of the largest size, which every buffer is allocated for. Errors: kUsage.
core::Result<CollectiveCounts> check_options(Collective kind, const CollectiveOptions& options) {
  const int n = options.gpus;
  if (n < 1 || options.sizes.empty() || options.iterations < 1 || options.repetitions < 1 || options.warmup < 0)
    return core::Error(core::ErrorKind::kUsage,
                       "run_collective: at least one GPU and one size, iterations and repetitions >= 1");
  int visible = 0;
  GPUDOC_CUDA_TRY(cudaGetDeviceCount(&visible));
  if (n > visible)
    return core::Error(core::ErrorKind::kUsage, "run_collective: " + std::to_string(n) + " GPUs asked for, " +
                                                    std::to_string(visible) + " visible");
  const std::size_t top = *std::max_element(options.sizes.begin(), options.sizes.end());
  const CollectiveCounts most = collective_counts(kind, top, n, kElem);
  if (most.count == 0)
    return core::Error(core::ErrorKind::kUsage, "run_collective: the largest size is below one element per rank");
  return most;
}

// Buffers, stream and events on each GPU; the send buffers filled with each rank's input.
core::Status prepare_gpus(std::vector<PerGpu>& gpus, const CollectiveCounts& most) {
  for (int g = 0; g < static_cast<int>(gpus.size()); ++g) {
    PerGpu& d = gpus[static_cast<std::size_t>(g)];
    if (auto st = allocate(d.send, g, most.send_elems * kElem); !st) return st.error();
    if (auto st = allocate(d.recv, g, most.recv_elems * kElem); !st) return st.error();
    if (auto st = allocate(d.counters, g, 2 * sizeof(unsigned long long)); !st) return st.error();
    GPUDOC_CUDA_TRY(cudaStreamCreateWithFlags(&d.stream.s, cudaStreamNonBlocking));
    GPUDOC_CUDA_TRY(cudaEventCreate(&d.start.e));
    GPUDOC_CUDA_TRY(cudaEventCreate(&d.stop.e));
    fill_input_kernel<<<kBlocks, kThreads, 0, d.stream.s>>>(static_cast<float*>(d.send.ptr), most.send_elems, g);
    GPUDOC_CUDA_TRY(cudaGetLastError());
    GPUDOC_CUDA_TRY(cudaStreamSynchronize(d.stream.s));
  }
  return core::ok_status();
}

// One collective over every GPU: launching, waiting, timing and checking one message size.
class CollectiveRun {
 public:
  CollectiveRun(const nccl::NcclApi& api, Collective kind, const CollectiveOptions& options, std::vector<PerGpu>& gpus,
                const Comms& comms)
      : api_(api), kind_(kind), options_(options), n_(options.gpus), gpus_(gpus), comms_(comms) {}

  // The samples of one size: the receive buffers poisoned, the warm-up, then `repetitions` timings
  // of `iterations` back-to-back collectives; each sample is the slowest GPU's time per collective.
  core::Status time(const CollectiveCounts& cc, CollectivePoint& p) const {
    for (int g = 0; g < n_; ++g) {
      PerGpu& d = gpus_[static_cast<std::size_t>(g)];
      GPUDOC_CUDA_TRY(cudaSetDevice(g));
      GPUDOC_CUDA_TRY(cudaMemsetAsync(d.recv.ptr, 0xFF, cc.recv_elems * kElem, d.stream.s));  // NaN poison
    }
    for (int i = 0; i < options_.warmup; ++i)
      if (auto st = launch(cc.count); !st) return st.error();
    if (auto st = sync_all(); !st) return st.error();
    for (int r = 0; r < options_.repetitions; ++r) {
      if (auto st = record_all(&PerGpu::start); !st) return st.error();
      for (int i = 0; i < options_.iterations; ++i)
        if (auto st = launch(cc.count); !st) return st.error();
      if (auto st = record_all(&PerGpu::stop); !st) return st.error();
      double longest = 0;
      for (int g = 0; g < n_; ++g) {
        PerGpu& d = gpus_[static_cast<std::size_t>(g)];
        GPUDOC_CUDA_TRY(cudaEventSynchronize(d.stop.e));
        float ms = 0;
        GPUDOC_CUDA_TRY(cudaEventElapsedTime(&ms, d.start.e, d.stop.e));
        longest = std::max(longest, static_cast<double>(ms) / 1e3);
      }
      p.seconds.push_back(longest / options_.iterations);
    }
    return sync_all();
  }

  // Verification, outside the timed region: every output element on every GPU.
  core::Status verify(const CollectiveCounts& cc, CollectivePoint& p) const {
    std::string problem;
    for (int g = 0; g < n_ && problem.empty(); ++g) {
      PerGpu& d = gpus_[static_cast<std::size_t>(g)];
      auto* c = static_cast<unsigned long long*>(d.counters.ptr);
      GPUDOC_CUDA_TRY(cudaSetDevice(g));
      GPUDOC_CUDA_TRY(cudaMemsetAsync(c, 0, sizeof(unsigned long long), d.stream.s));
      GPUDOC_CUDA_TRY(cudaMemsetAsync(c + 1, 0xFF, sizeof(unsigned long long), d.stream.s));
      check_output_kernel<<<kBlocks, kThreads, 0, d.stream.s>>>(static_cast<const float*>(d.recv.ptr), cc.recv_elems,
                                                                kind_index(kind_), g, n_, cc.count, c, c + 1);
      GPUDOC_CUDA_TRY(cudaGetLastError());
      unsigned long long got[2] = {0, 0};
      GPUDOC_CUDA_TRY(cudaMemcpyAsync(got, c, sizeof got, cudaMemcpyDeviceToHost, d.stream.s));
      GPUDOC_CUDA_TRY(cudaStreamSynchronize(d.stream.s));
      if (got[0] != 0)
        problem = std::to_string(got[0]) + " of " + std::to_string(cc.recv_elems) + " output elements wrong on GPU " +
                  std::to_string(g) + ", first at element " + std::to_string(got[1]);
    }
    p.verified = problem.empty();
    p.verify_detail = p.verified ? "every output element on every GPU equals the closed-form result" : problem;
    return core::ok_status();
  }

 private:
  // One collective on every GPU, launched together (one thread drives every GPU: without the
  // group, the first GPU's call would wait forever for the others).
  core::Status launch(std::size_t count) const {
    GPUDOC_NCCL_TRY(api_, api_.ncclGroupStart(), "ncclGroupStart");
    nccl::ncclResult_t rc = nccl::ncclSuccess;
    int failed_gpu = -1;
    for (int g = 0; g < n_ && rc == nccl::ncclSuccess; ++g) {
      PerGpu& d = gpus_[static_cast<std::size_t>(g)];
      nccl::ncclComm_t c = comms_.comms[static_cast<std::size_t>(g)];
      switch (kind_) {
        case Collective::kAllReduce:
          rc = api_.ncclAllReduce(d.send.ptr, d.recv.ptr, count, nccl::ncclFloat32, nccl::ncclSum, c, d.stream.s);
          break;
        case Collective::kAllGather:
          rc = api_.ncclAllGather(d.send.ptr, d.recv.ptr, count, nccl::ncclFloat32, c, d.stream.s);
          break;
        case Collective::kReduceScatter:
          rc = api_.ncclReduceScatter(d.send.ptr, d.recv.ptr, count, nccl::ncclFloat32, nccl::ncclSum, c, d.stream.s);
          break;
      }
      if (rc != nccl::ncclSuccess) failed_gpu = g;
    }
    const nccl::ncclResult_t end_rc = api_.ncclGroupEnd();  // always closes the group
    if (rc != nccl::ncclSuccess)
      return nccl::nccl_error(api_, rc,
                              std::string("nccl") +
                                  (kind_ == Collective::kAllReduce   ? "AllReduce"
                                   : kind_ == Collective::kAllGather ? "AllGather"
                                                                     : "ReduceScatter") +
                                  " on GPU " + std::to_string(failed_gpu));
    if (end_rc != nccl::ncclSuccess) return nccl::nccl_error(api_, end_rc, "ncclGroupEnd");
    return core::ok_status();
  }

  // Waits for every GPU's stream and asks each communicator for an asynchronous error.
  core::Status sync_all() const {
    for (int g = 0; g < n_; ++g) {
      GPUDOC_CUDA_TRY(cudaSetDevice(g));
      GPUDOC_CUDA_TRY(cudaStreamSynchronize(gpus_[static_cast<std::size_t>(g)].stream.s));
      nccl::ncclResult_t async = nccl::ncclSuccess;
      GPUDOC_NCCL_TRY(api_, api_.ncclCommGetAsyncError(comms_.comms[static_cast<std::size_t>(g)], &async),
                      "ncclCommGetAsyncError");
      if (async != nccl::ncclSuccess)
        return nccl::nccl_error(api_, async, "asynchronous NCCL error on GPU " + std::to_string(g));
    }
    return core::ok_status();
  }

  // Records each GPU's `which` event (start or stop) on its stream.
  core::Status record_all(Event PerGpu::*which) const {
    for (int g = 0; g < n_; ++g) {
      PerGpu& d = gpus_[static_cast<std::size_t>(g)];
      GPUDOC_CUDA_TRY(cudaSetDevice(g));
      GPUDOC_CUDA_TRY(cudaEventRecord((d.*which).e, d.stream.s));
    }
    return core::ok_status();
  }

  const nccl::NcclApi& api_;
  Collective kind_;
  const CollectiveOptions& options_;
  int n_;
  std::vector<PerGpu>& gpus_;
  const Comms& comms_;
};

}  // namespace

core::Result<CollectiveTiming> run_collective(const nccl::NcclApi& api, Collective kind,
                                              const CollectiveOptions& options) {
  auto most = check_options(kind, options);
  if (!most) return most.error();
  const int n = options.gpus;
  CollectiveTiming t;
  t.ranks = n;
  std::vector<PerGpu> gpus(static_cast<std::size_t>(n));
  if (auto st = prepare_gpus(gpus, *most); !st) return st.error();

  Comms comms;
  comms.api = &api;
  comms.comms.assign(static_cast<std::size_t>(n), nullptr);
  std::vector<int> devlist(static_cast<std::size_t>(n));
  for (int g = 0; g < n; ++g) devlist[static_cast<std::size_t>(g)] = g;
  const auto init_start = std::chrono::steady_clock::now();
  GPUDOC_NCCL_TRY(api, api.ncclCommInitAll(comms.comms.data(), n, devlist.data()), "ncclCommInitAll");
  t.init_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - init_start).count();

  const CollectiveRun run(api, kind, options, gpus, comms);
  for (const std::size_t size : options.sizes) {
    const CollectiveCounts cc = collective_counts(kind, size, n, kElem);
    if (cc.count == 0) continue;  // below one element per rank
    if (!t.points.empty() && t.points.back().bytes == cc.bytes) continue;
    CollectivePoint p;
    p.bytes = cc.bytes;
    p.count = cc.count;
    if (auto st = run.time(cc, p); !st) return st.error();
    if (auto st = run.verify(cc, p); !st) return st.error();
    t.points.push_back(std::move(p));
  }
  comms.failed = false;
  return t;
}

}  // namespace gpudoc::bench::cuda
