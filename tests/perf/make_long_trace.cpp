// Writes a long synthetic trace at the sensors' native rates, through the real TraceWriter, for
// the memory and time benchmark of `gpudoc trace info` and `gpudoc diagnose`
// (tests/perf/trace_memory.py, docs/results/trace-memory.md).
//
//   make_long_trace --out "$(mktemp -d)/day.jsonl" [--gpus 8] [--hours 24] [--seed 1]
//
// Per GPU, as `gpudoc record` writes them with its default periods: the fast group (power,
// clocks, temperature, clock-event reasons) every 100 ms, GPM (8 metrics) every 200 ms, the
// driver's 200 ms utilization samples drained every 2 s (so they arrive late, as in a real
// recording), the slow group every second, energy every 30 s, one process line per second.
// Each GPU runs a different pattern that changes every hour (healthy, sawtooth, plateau, idle,
// a memory climb), with noise, so the diagnosis has real work to do. 8 GPUs x 24 h is about
// 15 million lines, 3 GB.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "telemetry/trace.hpp"

using namespace gpudoc;  // NOLINT: a tool
using gpu::Metric;

namespace {

struct Args {
  std::string out;
  int gpus = 8;
  double hours = 24;
  std::uint64_t seed = 1;
};

// A small deterministic generator (splitmix64): the same trace on every machine.
struct Rng {
  std::uint64_t s;
  double uniform() {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return static_cast<double>((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
  }
};

// What GPU g does at time t: utilization and SM activity in percent.
struct Load {
  double util, sm, tensor, dram;
};

Load load_at(int g, double t) {
  const int pattern = (g + static_cast<int>(t / 3600)) % 5;
  switch (pattern) {
    case 0: return {99, 92, 85, 20};                                                    // healthy
    case 1: return std::fmod(t, 2.0) < 1.0 ? Load{100, 95, 80, 25} : Load{0, 0, 0, 0};  // sawtooth, 2 s
    case 2: return {100, 30, 2, 10};                                                    // busy but idle
    case 3: return {0, 0, 0, 0};                                                        // idle
    default: return {97, 60, 5, 85};                                                    // memory-bound
  }
}

telemetry::TraceHeader make_header(int gpus) {
  telemetry::TraceHeader h;
  h.host = "perf-node";
  h.start_unix_ns = 1'780'000'000'000'000'000;
  h.system.backend = "nvml";
  h.system.driver_version = "580.159.03";
  h.system.cuda_driver_version = "13.0";
  for (int g = 0; g < gpus; ++g) {
    gpu::DeviceInfo d;
    d.index = g;
    d.name = "NVIDIA H200";
    d.uuid = "GPU-00000000-0000-0000-0000-00000000000" + std::to_string(g % 10);
    d.memory_total_bytes = 150754820096ULL;
    d.sm_clock_max_mhz = 1980;
    d.power_limit_default_watts = 700;
    d.temperature_slowdown_celsius = 89;
    h.gpus.push_back(d);
  }
  for (Metric m : gpu::all_metrics()) {
    const auto& mi = gpu::info(m);
    const auto& gi = gpu::info(mi.group);
    h.metrics.push_back({std::string(mi.name), std::string(mi.unit), std::string(gi.name), gi.default_period.count()});
  }
  h.command = {"python3", "train.py"};
  return h;
}

// One GPU's samples of one 100 ms tick k (k * 100 ms after the start).
void tick(int g, std::int64_t k, std::int64_t start_ns, Rng& rng, std::vector<gpu::MetricSample>& out,
          std::vector<gpu::MetricSample>& util_buffer) {
  const double t = static_cast<double>(k) / 10.0;
  const Load l = load_at(g, t);
  const auto at = [&](double offset_s) {
    return start_ns + k * 100'000'000 + static_cast<std::int64_t>((offset_s + rng.uniform() * 2e-4) * 1e9);
  };
  const double noise = rng.uniform() - 0.5;
  const std::int64_t fast = at(0.0001);
  const double power = std::round((90 + 6 * l.util + 20 * noise) * 1000) / 1000;
  out.push_back({Metric::kPowerWatts, power, fast});
  out.push_back({Metric::kSmClockMhz, l.util > 50 ? 1980.0 : 1755.0, fast});
  out.push_back({Metric::kMemoryClockMhz, 3201, fast});
  out.push_back({Metric::kGpuTemperatureCelsius, std::round(40 + l.util / 4 + noise), fast});
  out.push_back({Metric::kClockEventReasonsMask, l.util > 50 && power > 640 ? 4.0 : 0.0, fast});
  if (k % 2 == 0) {
    const std::int64_t gpm = at(0.0003);
    const double j = 1 + 0.02 * noise;
    out.push_back({Metric::kGpmSmActivityPercent, l.sm * j, gpm});
    out.push_back({Metric::kGpmSmOccupancyPercent, l.sm * 0.4 * j, gpm});
    out.push_back({Metric::kGpmTensorActivityPercent, l.tensor * j, gpm});
    out.push_back({Metric::kGpmDramActivityPercent, l.dram * j + 0.0003811465029798129, gpm});
    out.push_back({Metric::kGpmPcieRxBytesPerSecond, 450000 + 1e5 * rng.uniform(), gpm});
    out.push_back({Metric::kGpmPcieTxBytesPerSecond, 690000 + 1e5 * rng.uniform(), gpm});
    out.push_back({Metric::kGpmNvlinkRxBytesPerSecond, l.util * 1.2e9 * j, gpm});
    out.push_back({Metric::kGpmNvlinkTxBytesPerSecond, l.util * 1.1e9 * j, gpm});
    const std::int64_t u = at(0.0123);
    util_buffer.push_back({Metric::kGpuUtilizationPercent, l.util, u});
    util_buffer.push_back({Metric::kMemoryUtilizationPercent, std::round(l.dram), u});
  }
  if (k % 10 == 0) {
    const std::int64_t slow = at(0.0005);
    const double climb = (g == 7 ? std::fmod(t, 3600) * 2e6 : 0);
    out.push_back({Metric::kMemoryUsedBytes, std::round(2e10 + climb), slow});
    out.push_back({Metric::kMemoryTemperatureCelsius, 35, slow});
    out.push_back({Metric::kPcieLinkGeneration, 5, slow});
    out.push_back({Metric::kPcieLinkWidth, 16, slow});
    out.push_back({Metric::kPowerLimitWatts, 700, slow});
  }
  if (k % 300 == 0) out.push_back({Metric::kEnergyJoules, std::round(5687.813 + t * 400), at(0.0007)});
}

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--out")
      a.out = argv[i + 1];
    else if (k == "--gpus")
      a.gpus = std::atoi(argv[i + 1]);
    else if (k == "--hours")
      a.hours = std::atof(argv[i + 1]);
    else if (k == "--seed")
      a.seed = std::strtoull(argv[i + 1], nullptr, 10);
  }
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse_args(argc, argv);
  if (a.out.empty() || a.gpus < 1 || a.gpus > 64 || !(a.hours > 0)) {
    std::fprintf(stderr, "usage: make_long_trace --out FILE [--gpus 1..64] [--hours H] [--seed N]\n");
    return 2;
  }
  const telemetry::TraceHeader header = make_header(a.gpus);
  auto w = telemetry::TraceWriter::create(a.out, header);
  if (!w) {
    std::fprintf(stderr, "%s\n", w.error().message().c_str());
    return 1;
  }
  Rng rng{a.seed};
  const auto ticks = static_cast<std::int64_t>(a.hours * 36000);
  std::vector<std::vector<gpu::MetricSample>> util_buffers(static_cast<std::size_t>(a.gpus));
  std::vector<gpu::MetricSample> samples;
  (void)w->write_event({0, "process_start", std::nullopt, {{"pid", 4242}, {"command", header.command}}});
  for (std::int64_t k = 0; k < ticks; ++k) {
    for (int g = 0; g < a.gpus; ++g) {
      samples.clear();
      auto& util = util_buffers[static_cast<std::size_t>(g)];
      tick(g, k, header.start_unix_ns, rng, samples, util);
      if (auto st = w->write_samples(g, samples); !st) {
        std::fprintf(stderr, "%s\n", st.error().message().c_str());
        return 1;
      }
      // The driver's utilization buffer, drained every 2 s: its samples arrive late.
      if (k % 20 == 19) {
        (void)w->write_samples(g, util);
        util.clear();
      }
      if (k % 10 == 5) {
        gpu::ProcessSample p;
        p.pid = 4242;
        p.name = "python3";
        p.time_unix_ns = header.start_unix_ns + k * 100'000'000;
        p.sm_utilization_percent = load_at(g, static_cast<double>(k) / 10.0).util;
        p.memory_used_bytes = 20'000'000'000ULL;
        (void)w->write_processes(g, std::vector<gpu::ProcessSample>{p});
      }
    }
  }
  const double end_t = static_cast<double>(ticks) / 10.0;
  (void)w->write_event({end_t, "process_exit", std::nullopt, {{"pid", 4242}, {"exit_code", 0}}});
  telemetry::TraceSummary summary;
  summary.t = end_t;
  summary.reason = "command_exited";
  if (auto st = w->close(summary); !st) {
    std::fprintf(stderr, "%s\n", st.error().message().c_str());
    return 1;
  }
  std::printf("%s: %d GPUs, %.1f h, %llu sample lines\n", a.out.c_str(), a.gpus, a.hours,
              static_cast<unsigned long long>(w->sample_lines()));
  return 0;
}
