// Speed of diagnosis: one hour of 8-GPU telemetry at native rates (utilization 200 ms, fast group
// 100 ms, GPM 200 ms, slow group 1 s), synthesised in memory, diagnosed on one core. The issue's
// bar is < 1 s. Prints the median of 5 runs (and min/max) as JSON on stdout.
//
//   diagnose_speed [--hours H] [--gpus N] [--runs R]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "diagnose/diagnose.hpp"

using namespace gpudoc;
using gpu::Metric;

namespace {

void fill(telemetry::Series& s, double t1, double period, double (*f)(double, int), int g) {
  for (double t = 0; t < t1; t += period) {
    s.t.push_back(t);
    s.v.push_back(f(t, g));
  }
}

// A mix of patterns so every code path runs: sawtooth on even GPUs, busy on odd ones.
double util(double t, int g) { return g % 2 == 0 ? (std::fmod(t, 1.0) < 0.5 ? 100 : 0) : 99; }
double sm(double t, int g) { return util(t, g) * 0.95; }
double dram(double, int) { return 17; }
double power(double t, int g) { return 150 + 5 * util(t, g); }
double mem(double t, int) { return 2e10 + 1e3 * t; }
double mask(double t, int g) { return util(t, g) > 50 ? 4 : 0; }
double clk(double t, int g) { return util(t, g) > 50 ? 1500 : 1980; }
double temp(double, int) { return 55; }
double slow(double, int) { return 700; }

}  // namespace

int main(int argc, char** argv) {
  double hours = 1;
  int gpus = 8, runs = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--hours")
      hours = std::atof(argv[i + 1]);
    else if (a == "--gpus")
      gpus = std::atoi(argv[i + 1]);
    else if (a == "--runs")
      runs = std::max(1, std::atoi(argv[i + 1]));
  }
  const double t1 = hours * 3600;
  telemetry::Trace tr;
  tr.gpus.resize(static_cast<std::size_t>(gpus));
  std::size_t values = 0;
  for (int g = 0; g < gpus; ++g) {
    gpu::DeviceInfo d;
    d.index = g;
    d.memory_total_bytes = 150754820096ULL;
    d.sm_clock_max_mhz = 1980;
    tr.header.gpus.push_back(d);
    auto& G = tr.gpus[static_cast<std::size_t>(g)];
    fill(G.metric(Metric::kGpuUtilizationPercent), t1, 0.2, util, g);
    fill(G.metric(Metric::kMemoryUtilizationPercent), t1, 0.2, dram, g);
    for (Metric m : {Metric::kPowerWatts, Metric::kSmClockMhz, Metric::kMemoryClockMhz, Metric::kGpuTemperatureCelsius,
                     Metric::kClockEventReasonsMask, Metric::kMemoryUsedBytes})
      fill(G.metric(m), t1, 0.1,
           m == Metric::kPowerWatts              ? power
           : m == Metric::kMemoryUsedBytes       ? mem
           : m == Metric::kClockEventReasonsMask ? mask
           : m == Metric::kSmClockMhz            ? clk
                                                 : temp,
           g);
    for (Metric m :
         {Metric::kGpmSmActivityPercent, Metric::kGpmSmOccupancyPercent, Metric::kGpmTensorActivityPercent,
          Metric::kGpmDramActivityPercent, Metric::kGpmPcieRxBytesPerSecond, Metric::kGpmPcieTxBytesPerSecond,
          Metric::kGpmNvlinkRxBytesPerSecond, Metric::kGpmNvlinkTxBytesPerSecond})
      fill(G.metric(m), t1, 0.2, m == Metric::kGpmDramActivityPercent ? dram : sm, g);
    for (Metric m : {Metric::kMemoryTemperatureCelsius, Metric::kPcieLinkGeneration, Metric::kPcieLinkWidth,
                     Metric::kPowerLimitWatts})
      fill(G.metric(m), t1, 1.0, slow, g);
    for (const auto& s : G.metrics) values += s.size();
  }
  tr.duration_s = t1;

  std::vector<double> secs;
  std::size_t nfind = 0;
  for (int r = 0; r < runs; ++r) {
    const auto a = std::chrono::steady_clock::now();
    const auto d = diagnose::diagnose(tr, diagnose::Options{});
    const auto b = std::chrono::steady_clock::now();
    secs.push_back(std::chrono::duration<double>(b - a).count());
    nfind = d.findings.size();
  }
  std::sort(secs.begin(), secs.end());
  std::printf(
      "{\"hours\": %.2f, \"gpus\": %d, \"values\": %zu, \"findings\": %zu, \"runs\": %d, "
      "\"median_s\": %.4f, \"min_s\": %.4f, \"max_s\": %.4f}\n",
      hours, gpus, values, nfind, runs, secs[secs.size() / 2], secs.front(), secs.back());
  return secs[secs.size() / 2] < 1.0 ? 0 : 1;
}
