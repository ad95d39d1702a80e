// The CPU one scrape of `gpudoc serve`'s /metrics costs to render: 8 GPUs with every metric of the
// catalog and 4 processes each (with container and pod labels), two findings, the sampler's
// counters; both formats, with and without dcgm-exporter's names. The target (docs/results/serve.md): <= 1 ms of
// CPU per scrape. Google Benchmark's "CPU" column is the figure (the calling thread's CPU time).
//
//   build/tests/perf/bench_serve_exposition [--benchmark_repetitions=5]
#include <benchmark/benchmark.h>

#include <string>

#include "serve/exposition.hpp"

namespace gpudoc::serve {
namespace {

Snapshot eight_gpus() {
  Snapshot s;
  for (int i = 0; i < 8; ++i) {
    GpuSnapshot g;
    g.index = i;
    g.uuid = "GPU-6f1c2a9e-3b7d-4e21-9c55-0a8b7d6e5f4" + std::to_string(i);
    g.name = "NVIDIA H200";
    g.pci_bus_id = "00000000:" + std::to_string(18 + i) + ":00.0";
    for (gpu::Metric m : gpu::all_metrics()) g.latest[gpu::index(m)] = 100.25 + i + static_cast<double>(m);
    g.latest[gpu::index(gpu::Metric::kClockEventReasonsMask)] = 0x4;
    g.latest[gpu::index(gpu::Metric::kMemoryUsedBytes)] = 81604378624.0;
    g.latest[gpu::index(gpu::Metric::kEnergyJoules)] = 98765432.125;
    for (int p = 0; p < 4; ++p) {
      ProcessSnapshot ps;
      ps.pid = static_cast<std::uint32_t>(100000 + i * 10 + p);
      ps.name = p == 3 ? "python3 \"train.py\"" : "python3";
      ps.container_id = "5b6ec8ad5e1cd3a0e1ae4a0b0b4c4e3bd9a2f0e4d36e1f8cf4bb8a1f7a0e2c9" + std::to_string(i % 10);
      ps.pod_uid = "0c4f2a8e-9d5b-4c61-8f0e-2b7d1a3c5e9" + std::to_string(i % 10);
      ps.slurm_job_id = std::to_string(421300 + i);
      ps.sm_utilization_percent = 80 + p;
      ps.memory_utilization_percent = 30 + p;
      ps.memory_used_bytes = 20ull << 30;
      g.processes.push_back(ps);
    }
    s.gpus.push_back(std::move(g));
    s.self.gpus.push_back(
        {.gpu = i, .reads = 123456, .samples = 987654, .errors = 0, .lost = false, .unresponsive = false});
  }
  s.findings.push_back({.id = "sawtooth", .severity = findings::Severity::kWarning, .gpu = 2, .gpu_time_lost_s = 8.5});
  s.findings.push_back({.id = "straggler", .severity = findings::Severity::kCritical, .gpu = 5, .gpu_time_lost_s = 3});
  s.self.sampler_running = true;
  s.self.scrapes = 1000;
  s.self.last_render_seconds = 0.0001;
  s.hostname = "node7";
  s.driver_version = "580.159.03";
  s.version = "0.9.0";
  return s;
}

void render_scrape(benchmark::State& state, Format format, bool dcgm) {
  const Snapshot s = eight_gpus();
  std::string out;  // the server keeps one buffer, as here
  for (auto _ : state) {
    render_to(out, s, {.format = format, .dcgm_compatible = dcgm});
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["bytes"] = static_cast<double>(out.size());
}

BENCHMARK_CAPTURE(render_scrape, prometheus_8gpu_4proc, Format::kPrometheus, false);
BENCHMARK_CAPTURE(render_scrape, openmetrics_8gpu_4proc, Format::kOpenMetrics, false);
BENCHMARK_CAPTURE(render_scrape, prometheus_dcgm_8gpu_4proc, Format::kPrometheus, true);

// A fresh buffer every scrape (no reuse): the allocation's share.
void render_scrape_fresh_buffer(benchmark::State& state) {
  const Snapshot s = eight_gpus();
  for (auto _ : state) {
    std::string out = render(s, {.dcgm_compatible = true});
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(render_scrape_fresh_buffer);

}  // namespace
}  // namespace gpudoc::serve

BENCHMARK_MAIN();
