// Helpers shared by the trace tests: a full header, a temporary file, reading a file back.
#pragma once

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"
#include "telemetry/trace.hpp"

namespace gpudoc::telemetry::testing {

inline constexpr std::int64_t kStart = 1'780'000'000'000'000'000;

// A path `<a private folder>/STEM.jsonl` (mkdtemp: never a guessable name in $TMPDIR), removed
// with its folder. The file is not created.
struct TempFile : gpudoc::testing::TempFile {
  explicit TempFile(const std::string& stem = "trace") : gpudoc::testing::TempFile(stem + ".jsonl") {}
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::vector<std::string> lines_of(const std::string& content) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < content.size()) {
    auto nl = content.find('\n', pos);
    if (nl == std::string::npos) nl = content.size();
    out.push_back(content.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return out;
}

inline gpu::DeviceInfo full_device(int index) {
  gpu::DeviceInfo d;
  d.index = index;
  d.name = "NVIDIA H200";
  d.uuid = "GPU-0000000" + std::to_string(index);
  d.pci_bus_id = "00000000:1" + std::to_string(index) + ":00.0";
  d.memory_total_bytes = 150'754'820'096ULL;
  d.sm_clock_max_mhz = 1980;
  d.memory_clock_max_mhz = 3201;
  d.pcie_link_generation_max = 5;
  d.pcie_link_width_max = 16;
  d.power_limit_default_watts = 700;
  d.temperature_slowdown_celsius = 87;
  d.temperature_shutdown_celsius = 92;
  d.temperature_gpu_max_celsius = 85.5;
  d.temperature_memory_max_celsius = 95;
  d.compute_capability_major = 9;
  d.compute_capability_minor = 0;
  d.mig_enabled = index == 1;
  if (index == 1) {
    gpu::MigInstance m;
    m.gpu_instance_id = 1;
    m.compute_instance_id = 0;
    m.uuid = "MIG-abc";
    m.memory_total_bytes = 18ULL << 30;
    m.multiprocessor_count = 16;
    d.mig_instances.push_back(m);
    gpu::MigInstance bare;  // optional fields absent
    bare.gpu_instance_id = 2;
    d.mig_instances.push_back(bare);
  }
  return d;
}

inline TraceHeader full_header(std::size_t gpus = 2) {
  TraceHeader h;
  h.gpudoc_version = "0.1.0";
  h.host = "node7";
  h.start_unix_ns = kStart;
  h.system = {"nvml", "580.159.03", "13.0", "12.580.159.03"};
  for (std::size_t i = 0; i < gpus; ++i) h.gpus.push_back(full_device(static_cast<int>(i)));
  for (gpu::Metric m : gpu::all_metrics()) {
    const auto& mi = gpu::info(m);
    const auto& gi = gpu::info(mi.group);
    h.metrics.push_back({std::string(mi.name), std::string(mi.unit), std::string(gi.name), gi.default_period.count()});
  }
  h.command = {"python3", "train.py", "--lr", "3e-4"};
  h.extra["site"] = "lab";
  h.extra["tags"] = {"a", "b"};
  return h;
}

// t seconds after kStart, in Unix nanoseconds.
inline std::int64_t at(double t) { return kStart + static_cast<std::int64_t>(t * 1e9 + (t >= 0 ? 0.5 : -0.5)); }

// A minimal valid header line for hand-written traces, with `gpus` GPUs.
inline std::string header_line(int gpus = 1, const std::string& extra = "") {
  std::string g;
  for (int i = 0; i < gpus; ++i) g += (i ? "," : "") + std::string("{\"index\":") + std::to_string(i) + "}";
  return "{\"type\":\"header\",\"format\":\"gpudoc-trace\",\"version\":1,\"start_unix_ns\":1780000000000000000,"
         "\"gpus\":[" +
         g +
         "],\"metrics\":[{\"name\":\"power_watts\",\"unit\":\"W\",\"group\":\"fast\","
         "\"period_ms\":100}]" +
         extra + "}\n";
}

}  // namespace gpudoc::telemetry::testing
