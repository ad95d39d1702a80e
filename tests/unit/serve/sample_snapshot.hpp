// Snapshots for the exposition's tests: one small GPU, and a hostile one.
#pragma once

#include <string>

#include "serve/exposition.hpp"

namespace gpudoc::serve::testing {

inline void set(GpuSnapshot& g, gpu::Metric m, double v) { g.latest[gpu::index(m)] = v; }

inline ProcessSnapshot process(std::uint32_t pid, std::string name, std::optional<std::uint64_t> used_bytes,
                               std::optional<double> sm_percent = std::nullopt) {
  ProcessSnapshot p;
  p.pid = pid;
  p.name = std::move(name);
  p.memory_used_bytes = used_bytes;
  p.sm_utilization_percent = sm_percent;
  return p;
}

// One H200 with a few metrics, one process, one finding, the sampler's counters.
inline Snapshot small_snapshot() {
  Snapshot s;
  GpuSnapshot g;
  g.index = 0;
  g.uuid = "GPU-1234";
  g.name = "NVIDIA H200";
  g.pci_bus_id = "00000000:18:00.0";
  set(g, gpu::Metric::kGpuUtilizationPercent, 97);
  set(g, gpu::Metric::kPowerWatts, 412.5);
  set(g, gpu::Metric::kClockEventReasonsMask, static_cast<double>(gpu::kClockEventSwPowerCap));
  set(g, gpu::Metric::kMemoryUsedBytes, 3.0 * 1024 * 1024 * 1024 + 512 * 1024);
  set(g, gpu::Metric::kGpmSmActivityPercent, 42.5);
  set(g, gpu::Metric::kEnergyJoules, 123456.789);
  g.processes.push_back({.pid = 4242,
                         .name = "python3",
                         .container_id = "5b6ec8ad5e1c",
                         .pod_uid = "0c4f2a8e-9d5b-4c61-8f0e-2b7d1a3c5e9f",
                         .slurm_job_id = "4213",
                         .sm_utilization_percent = 95,
                         .memory_utilization_percent = std::nullopt,
                         .memory_used_bytes = 1024});
  s.gpus.push_back(g);
  s.findings.push_back({.id = "sawtooth", .severity = findings::Severity::kWarning, .gpu = 0, .gpu_time_lost_s = 8.5});
  s.health = HealthSnapshot{.time_unix_ns = 1764547200000000000,
                            .status = "fail",
                            .checks = {{.check = "ecc_uncorrectable", .status = "fail", .gpu = 0},
                                       {.check = "driver_version", .status = "pass", .gpu = std::nullopt}}};
  s.baselines.push_back({.name = "resnet \"nightly\"", .verdict = "regression", .time_unix_ns = 1764547260000000000});
  s.xids.push_back({.gpu = 0, .xid = 79, .count = 2, .last_unix_ns = 1764547000000000000});
  AccountSeries a;
  a.labels = {{"gpu", "0"}, {"uuid", "GPU-1234"}, {"name", "NVIDIA H200"}, {"namespace", "ml"}, {"pod", "train-0"}};
  a.observed_s = 120;
  a.useful_s = 80;
  a.unexplained_s = 31.5;
  a.lost_s = {{"sawtooth", 8.5}};
  a.energy_j = 48000;
  a.useful_energy_j = 40000;
  a.unexplained_energy_j = 6000;
  a.lost_energy_j = {{"sawtooth", 2000}};
  s.accounts.push_back(a);
  s.prices.push_back({.gpu = 0,
                      .uuid = "GPU-1234",
                      .name = "NVIDIA H200",
                      .currency = "USD",
                      .gpu_hour = 3.72,
                      .kwh = 0.14,
                      .pue = 1.3,
                      .co2_g_per_kwh = std::nullopt});
  std::array<double, gpu::kMetricGroupCount> periods{};  // energy and the rest: off
  periods[gpu::index(gpu::MetricGroup::kFast)] = 0.1;
  periods[gpu::index(gpu::MetricGroup::kGpm)] = 1;
  s.self = {.sampler_running = true,
            .group_periods_s = periods,
            .gpus = {{.gpu = 0, .reads = 10, .samples = 50, .errors = 1, .lost = false, .unresponsive = false}},
            .dropped_records = 0,
            .scrapes = 3,
            .last_render_seconds = std::nullopt,
            .last_diagnosis_seconds = std::nullopt};
  s.hostname = "node7";
  s.driver_version = "580.159.03";
  s.version = "0.9.0";
  return s;
}

// Eight GPUs with every metric, processes with hostile names, findings.
inline Snapshot full_snapshot() {
  Snapshot s = small_snapshot();
  for (gpu::Metric m : gpu::all_metrics()) set(s.gpus[0], m, 1);
  set(s.gpus[0], gpu::Metric::kClockEventReasonsMask, 0x44);
  s.gpus[0].processes.push_back(process(7, "we\"ird\\na\nme", std::nullopt, 3));
  GpuSnapshot base = s.gpus[0];
  for (int i = 1; i < 8; ++i) {
    GpuSnapshot g = base;
    g.index = i;
    g.uuid = "GPU-" + std::to_string(i);
    s.gpus.push_back(g);
    s.self.gpus.push_back({.gpu = i, .reads = 1, .samples = 2, .errors = 0, .lost = false, .unresponsive = true});
  }
  s.findings.push_back({.id = "straggler", .severity = findings::Severity::kCritical, .gpu = 3, .gpu_time_lost_s = 1});
  s.self.last_render_seconds = 0.0002;
  s.self.last_diagnosis_seconds = 0.01;
  return s;
}

}  // namespace gpudoc::serve::testing
