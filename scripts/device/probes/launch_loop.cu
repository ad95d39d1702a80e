// Is launch.throughput's spread the host's or gpudoc's? The same measurement as gpudoc's
// launch.throughput (empty kernel, <<<1,1>>>, back to back on one non-blocking stream, CUDA events
// around each sample) in a program with nothing else in it: no NVML sampler thread, no other
// benchmark before it. Each sample also carries the host's own time for the launch calls
// (steady_clock) and the CPU it ran on, so a level shift can be told apart from a CPU move.
//
//   nvcc -O2 -std=c++17 -cudart static -o launch_loop scripts/device/probes/launch_loop.cu
//   ./launch_loop [samples=50] [launches_per_sample=30000] [pin=1]  > launch_loop.json
//
// Output: one JSON object; per sample the GPU-timed and host-timed microseconds per launch.
#include <cuda_runtime.h>
#include <pthread.h>
#include <sched.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void empty_kernel() {}

#define CHECK(call)                                                                         \
  do {                                                                                      \
    cudaError_t e_ = (call);                                                                \
    if (e_ != cudaSuccess) {                                                                \
      std::fprintf(stderr, "launch_loop: %s: %s\n", #call, cudaGetErrorString(e_));         \
      return 3;                                                                             \
    }                                                                                       \
  } while (0)

int main(int argc, char** argv) {
  const int samples = argc > 1 ? std::atoi(argv[1]) : 50;
  const int launches = argc > 2 ? std::atoi(argv[2]) : 30000;
  const bool pin = argc > 3 ? std::atoi(argv[3]) != 0 : true;
  if (samples < 1 || launches < 1) {
    std::fprintf(stderr, "usage: launch_loop [samples>=1] [launches_per_sample>=1] [pin 0|1]\n");
    return 2;
  }
  if (pin) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    (void)pthread_setaffinity_np(pthread_self(), sizeof one, &one);
  }
  CHECK(cudaSetDevice(0));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  for (int w = 0; w < 3; ++w) {  // warm-up samples, as gpudoc's
    for (int i = 0; i < launches; ++i) empty_kernel<<<1, 1, 0, s>>>();
    CHECK(cudaStreamSynchronize(s));
  }
  std::vector<double> gpu_us, host_us;
  std::vector<int> cpus;
  for (int r = 0; r < samples; ++r) {
    CHECK(cudaEventRecord(a, s));
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < launches; ++i) empty_kernel<<<1, 1, 0, s>>>();
    const auto t1 = std::chrono::steady_clock::now();
    CHECK(cudaEventRecord(b, s));
    CHECK(cudaEventSynchronize(b));
    CHECK(cudaGetLastError());
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    gpu_us.push_back(ms * 1e3 / launches);
    host_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / launches);
    cpus.push_back(sched_getcpu());
  }
  auto stats = [](const std::vector<double>& v, double& mean, double& cv) {
    double sum = 0;
    for (double x : v) sum += x;
    mean = sum / v.size();
    double var = 0;
    for (double x : v) var += (x - mean) * (x - mean);
    cv = mean > 0 ? std::sqrt(var / v.size()) / mean : 0;
  };
  double gm, gcv, hm, hcv;
  stats(gpu_us, gm, gcv);
  stats(host_us, hm, hcv);
  std::printf("{\"samples\": %d, \"launches_per_sample\": %d, \"pinned\": %s, \"gpu_us_mean\": %.4f, \"gpu_cv\": %.5f, "
              "\"host_us_mean\": %.4f, \"host_cv\": %.5f,\n \"per_sample\": [",
              samples, launches, pin ? "true" : "false", gm, gcv, hm, hcv);
  for (int r = 0; r < samples; ++r)
    std::printf("%s\n  {\"gpu_us\": %.4f, \"host_us\": %.4f, \"cpu\": %d}", r ? "," : "", gpu_us[r], host_us[r], cpus[r]);
  std::printf("]}\n");
  return 0;
}
