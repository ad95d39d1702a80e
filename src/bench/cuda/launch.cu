// Launch-cost kernels and timing loops, behind cuda/launch.hpp.
#include <sched.h>

#include <string>

#include "bench/cuda/check.cuh"
#include "bench/cuda/launch.hpp"
#include "bench/cuda/raii.cuh"
#include "bench/host_cpu.hpp"

namespace gpudoc::bench::cuda {
namespace {

__global__ void empty_kernel() {}

// The verification twin of empty_kernel: launched the same way, it counts that every launch ran.
__global__ void count_kernel(unsigned long long* counter) { atomicAdd(counter, 1ull); }

struct Graph {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  ~Graph() {
    if (exec != nullptr) (void)cudaGraphExecDestroy(exec);
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
  }
};

// Captures `nodes` launches (empty kernels, or counting kernels when counter is set) into g.
core::Status capture(cudaStream_t s, int nodes, unsigned long long* counter, Graph& g) {
  GPUDOC_CUDA_TRY(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < nodes; ++i) {
    if (counter != nullptr)
      count_kernel<<<1, 1, 0, s>>>(counter);
    else
      empty_kernel<<<1, 1, 0, s>>>();
  }
  const cudaError_t launch_error = cudaGetLastError();
  cudaGraph_t graph = nullptr;
  const cudaError_t end_error = cudaStreamEndCapture(s, &graph);
  g.graph = graph;
  GPUDOC_CUDA_TRY(launch_error);
  GPUDOC_CUDA_TRY(end_error);
  GPUDOC_CUDA_TRY(cudaGraphInstantiate(&g.exec, g.graph, 0));
  return core::ok_status();
}

}  // namespace

core::Result<LaunchTiming> run_launch(LaunchKind kind, const LaunchOptions& options) {
  if (options.repetitions < 1 || options.launches < 1 || options.graph_nodes < 1)
    return core::Error(core::ErrorKind::kUsage, "run_launch: repetitions, launches and graph nodes must be >= 1");
  GPUDOC_CUDA_TRY(cudaSetDevice(options.device));
  Stream stream;
  GPUDOC_CUDA_TRY(cudaStreamCreateWithFlags(&stream.s, cudaStreamNonBlocking));
  const cudaStream_t s = stream.s;
  Event start;
  Event stop;
  GPUDOC_CUDA_TRY(cudaEventCreate(&start.e));
  GPUDOC_CUDA_TRY(cudaEventCreate(&stop.e));
  DeviceBuffer counter_buf;
  GPUDOC_CUDA_TRY(cudaMalloc(&counter_buf.ptr, sizeof(unsigned long long)));
  auto* counter = static_cast<unsigned long long*>(counter_buf.ptr);

  // How many kernels one sample launches, and how it launches them.
  const int per_sample = kind == LaunchKind::kThroughput  ? options.launches
                         : kind == LaunchKind::kGraphNode ? options.graph_nodes
                                                          : 1;
  Graph graph;
  Graph count_graph;
  if (kind == LaunchKind::kGraphNode) {
    if (auto st = capture(s, options.graph_nodes, nullptr, graph); !st) return st.error();
    if (auto st = capture(s, options.graph_nodes, counter, count_graph); !st) return st.error();
  }
  auto launch_sample = [&](bool counting) -> core::Status {
    if (kind == LaunchKind::kGraphNode) {
      GPUDOC_CUDA_TRY(cudaGraphLaunch(counting ? count_graph.exec : graph.exec, s));
      return core::ok_status();
    }
    for (int i = 0; i < per_sample; ++i) {
      if (counting)
        count_kernel<<<1, 1, 0, s>>>(counter);
      else
        empty_kernel<<<1, 1, 0, s>>>();
    }
    GPUDOC_CUDA_TRY(cudaGetLastError());
    return core::ok_status();
  };

  for (int i = 0; i < options.warmup; ++i)
    if (auto st = launch_sample(false); !st) return st.error();
  GPUDOC_CUDA_TRY(cudaStreamSynchronize(s));

  LaunchTiming t;
  // Host accounting where a sample is long (kLatency's one launch would be dwarfed by reading
  // /proc/stat): the marks sit outside the event pair.
  const bool account = kind != LaunchKind::kLatency;
  t.host_cpu = account ? sched_getcpu() : -1;
  bool have_steal = account;
  for (int r = 0; r < options.repetitions; ++r) {
    HostMark before;
    if (account) before = mark_host(t.host_cpu);
    GPUDOC_CUDA_TRY(cudaEventRecord(start.e, s));
    if (auto st = launch_sample(false); !st) return st.error();
    GPUDOC_CUDA_TRY(cudaEventRecord(stop.e, s));
    if (account) {
      const HostMark after = mark_host(t.host_cpu);
      const double wall = after.wall_seconds - before.wall_seconds;
      t.issue_seconds.push_back(wall / per_sample);
      t.thread_cpu_seconds.push_back((after.thread_cpu_seconds - before.thread_cpu_seconds) / per_sample);
      const auto steal = steal_seconds(before, after);
      have_steal = have_steal && steal.has_value() && wall > 0;
      if (have_steal) t.steal_share.push_back(*steal / wall);
    }
    GPUDOC_CUDA_TRY(cudaEventSynchronize(stop.e));
    float ms = 0;
    GPUDOC_CUDA_TRY(cudaEventElapsedTime(&ms, start.e, stop.e));
    t.seconds.push_back(static_cast<double>(ms) / 1e3 / per_sample);
  }

  if (!have_steal) t.steal_share.clear();
  // Verification, outside the timed region: the same launches with the counting kernel.
  GPUDOC_CUDA_TRY(cudaMemsetAsync(counter, 0, sizeof(unsigned long long), s));
  if (auto st = launch_sample(true); !st) return st.error();
  unsigned long long got = 0;
  GPUDOC_CUDA_TRY(cudaMemcpyAsync(&got, counter, sizeof got, cudaMemcpyDeviceToHost, s));
  GPUDOC_CUDA_TRY(cudaStreamSynchronize(s));
  t.verified = got == static_cast<unsigned long long>(per_sample);
  t.verify_detail = std::to_string(got) + " of " + std::to_string(per_sample) + " counting launches ran";
  return t;
}

}  // namespace gpudoc::bench::cuda
