#include "gpu/backend.hpp"

#include <fmt/format.h>

#include <array>
#include <utility>

namespace gpudoc::gpu {

const char* to_string(ComputeMode m) noexcept {
  switch (m) {
    case ComputeMode::kDefault: return "default";
    case ComputeMode::kExclusiveThread: return "exclusive_thread";
    case ComputeMode::kProhibited: return "prohibited";
    case ComputeMode::kExclusiveProcess: return "exclusive_process";
  }
  return "unknown";
}

std::vector<MetricSample> error_counter_samples(const HealthFacts& f, std::int64_t time_unix_ns) {
  std::vector<MetricSample> out;
  const auto add = [&](Metric m, const auto& v) {
    if (v) out.push_back({m, static_cast<double>(*v), time_unix_ns});
  };
  add(Metric::kEccCorrectedVolatileErrors, f.ecc_volatile_corrected);
  add(Metric::kEccUncorrectedVolatileErrors, f.ecc_volatile_uncorrected);
  add(Metric::kEccCorrectedAggregateErrors, f.ecc_aggregate_corrected);
  add(Metric::kEccUncorrectedAggregateErrors, f.ecc_aggregate_uncorrected);
  add(Metric::kRemappedRowsCorrectable, f.remapped_rows_corrected);
  add(Metric::kRemappedRowsUncorrectable, f.remapped_rows_uncorrected);
  add(Metric::kRowRemapPending, f.remap_pending);
  add(Metric::kRowRemapFailure, f.remap_failed);
  add(Metric::kPcieReplayErrors, f.pcie_replay_errors);
  const std::array<std::pair<Metric, std::optional<std::uint64_t> NvlinkFacts::*>, 4> links = {{
      {Metric::kNvlinkCrcFlitErrors, &NvlinkFacts::crc_flit_errors},
      {Metric::kNvlinkCrcDataErrors, &NvlinkFacts::crc_data_errors},
      {Metric::kNvlinkReplayErrors, &NvlinkFacts::replay_errors},
      {Metric::kNvlinkRecoveryErrors, &NvlinkFacts::recovery_errors},
  }};
  for (const auto& [metric, field] : links) {
    std::optional<std::uint64_t> sum;
    for (const auto& l : f.nvlinks)
      if (const auto& v = l.*field) sum = sum.value_or(0) + *v;
    add(metric, sum);
  }
  return out;
}

core::Result<HealthFacts> Backend::health_facts(int gpu) {
  return core::Error(core::ErrorKind::kNotSupported,
                     fmt::format("GPU {}: the {} backend has no health facts", gpu, name()));
}

}  // namespace gpudoc::gpu
