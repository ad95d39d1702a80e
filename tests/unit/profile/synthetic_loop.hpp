// Synthetic record sets for the profile analysis: a training-style loop simulated on a host and a
// GPU timeline, with the knobs that produce each idle cause (launch cost, host work with no CUDA
// call, a sync or .item() each step, allocations, pageable copies, changing shapes).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "profile/records.hpp"

namespace gpudoc::profile::testing {

struct Loop {
  int steps = 20;
  int kernels = 50;
  std::uint64_t kernel_ns = 2'000;       // each kernel's GPU time
  std::uint64_t launch_ns = 12'000;      // the host's time per launch (Python + cudaLaunchKernel)
  std::uint64_t host_work_ns = 0;        // per step, before its first launch, no CUDA call (data loading)
  bool item_each_step = false;           // a DtoH copy and a stream synchronize at the end of each step
  int event_sync_after = 0;              // > 0: an event synchronize after this many kernels of each step
  bool malloc_each_step = false;         // a cudaMalloc at the start of each step
  bool pageable_copy_each_step = false;  // a synchronous HtoD copy from pageable memory each step
  bool dynamic_shapes = false;           // the grid of the kernels changes from step to step
  bool nvtx = true;                      // each step inside an NVTX range "train_step"
  std::string kernel_name = "_ZN2at6native18elementwise_kernelILi128ELi4EEEviT_";
  // Sampling (gpudoc profile --sample): steps come in cycles of `traced_steps` traced and
  // `untraced_steps` not; a traced launch costs the host `tracing_ns` more, and only traced steps
  // leave kernel and API records (NVTX ranges are recorded throughout). 0: traced throughout.
  int traced_steps = 0, untraced_steps = 0;
  std::uint64_t tracing_ns = 0;
};

inline RecordSet make_loop(const Loop& l) {
  RecordSet set;
  std::uint64_t host = 1'000'000, gpu_free = 0;
  std::uint32_t corr = 1;
  auto api = [&](const char* name, std::uint64_t start, std::uint64_t end, std::uint32_t c) {
    ApiRecord a;
    a.start_ns = start, a.end_ns = end, a.correlation = c, a.name = name;
    set.api_calls.push_back(a);
  };
  const int cycle = l.traced_steps + l.untraced_steps;
  bool was_traced = false;
  for (int s = 0; s < l.steps; ++s) {
    const bool traced = cycle == 0 || s % cycle < l.traced_steps;
    if (cycle > 0 && traced != was_traced) {
      if (traced)
        set.windows.push_back({host, UINT64_MAX});  // the O line, as the library writes it
      else
        set.windows.back().end_ns = host;  // the F line
    }
    was_traced = traced;
    const std::size_t kernels_before = set.kernels.size(), calls_before = set.api_calls.size();
    const std::uint64_t launch_ns = l.launch_ns + (traced && cycle > 0 ? l.tracing_ns : 0);
    const std::uint64_t range_start = host;
    host += l.host_work_ns;
    if (l.malloc_each_step) {
      // like cudaFree (and cudaMalloc when the pool must grow), it waits for the GPU first
      const std::uint64_t end = std::max(host, gpu_free) + 20'000;
      api("cudaMalloc_v3020", host, end, corr++);
      host = end;
    }
    if (l.pageable_copy_each_step) {
      const std::uint64_t start = std::max(host + 3'000, gpu_free);
      set.copies.push_back({start, start + 30'000, 0, 7, corr, false, 1, 1, 3, 1 << 20, 0});
      api("cudaMemcpy_v3020", host, start + 31'000, corr++);
      gpu_free = start + 30'000;
      host = start + 31'000;
    }
    for (int k = 0; k < l.kernels; ++k) {
      KernelRecord kr;
      kr.correlation = corr;
      kr.name = k % 5 == 4 ? "_ZN2at6native13reduce_kernelILi512ELi1EEEvT_" : l.kernel_name;
      kr.start_ns = std::max(host + launch_ns - 2'000, gpu_free);
      kr.end_ns = kr.start_ns + l.kernel_ns;
      kr.grid[0] = l.dynamic_shapes ? 64 + (s * 7) % 13 : 64, kr.grid[1] = kr.grid[2] = 1;
      kr.block[0] = 128, kr.block[1] = kr.block[2] = 1;
      gpu_free = kr.end_ns;
      api("cudaLaunchKernel_v7000", host + launch_ns - 4'000, host + launch_ns - 1'000, corr++);
      set.kernels.push_back(kr);
      host += launch_ns;
      if (l.event_sync_after > 0 && k + 1 == l.event_sync_after) {
        api("cudaEventSynchronize_v3020", host, std::max(host, gpu_free) + 1'000, corr++);
        host = std::max(host, gpu_free) + 1'000;
      }
    }
    if (l.item_each_step) {
      const std::uint64_t start = std::max(host + 3'000, gpu_free);
      set.copies.push_back({start, start + 2'000, 0, 7, corr, false, 2, 3, 2, 4, 0});
      api("cudaMemcpyAsync_v3020", host, host + 4'000, corr++);
      api("cudaStreamSynchronize_v3020", host + 4'000, start + 3'000, corr++);
      gpu_free = start + 2'000;
      host = std::max(host + 5'000, start + 3'000) + 20'000;  // Python after .item()
    }
    if (l.nvtx) set.ranges.push_back({range_start, host, 1, "train_step", ""});
    if (!traced) {  // CUPTI recorded none of it
      set.kernels.resize(kernels_before);
      set.api_calls.resize(calls_before);
    }
  }
  set.complete = true;
  auto by_start = [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; };
  std::sort(set.kernels.begin(), set.kernels.end(), by_start);
  std::sort(set.copies.begin(), set.copies.end(), by_start);
  std::sort(set.api_calls.begin(), set.api_calls.end(), by_start);
  return set;
}

}  // namespace gpudoc::profile::testing
