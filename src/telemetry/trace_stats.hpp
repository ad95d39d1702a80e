// gpudoc::telemetry trace statistics — what `gpudoc trace info` says about a telemetry file,
// computed while the file streams by: a day of 8 GPUs (3 GB) is summarised in a few MB. Per GPU
// and metric: the sample count, the mean interval, gaps against the recorded period and
// min/mean/max; per GPU the process records; the events by kind; what the reader dropped.
//
//   auto s = telemetry::trace_stats_of_file("run.jsonl");   // Result<TraceStats>
//   for (const auto& m : s->gpus[0].metrics) fmt::print("{} {}\n", gpu::info(m.metric).name, m.gaps);
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "telemetry/input.hpp"
#include "telemetry/trace.hpp"

namespace gpudoc::telemetry {

// A gap is an interval longer than this many periods: a missed read or two is jitter, three is
// the sampler (or the machine) stalling.
inline constexpr double kGapPeriods = 3.0;

struct MetricStats {
  gpu::Metric metric{};
  std::size_t samples = 0;
  double period_s = 0;  // the header's period, or the catalog default when absent
  bool period_from_header = false;
  std::optional<double> mean_interval_s;  // (last t - first t) / (samples - 1)
  std::size_t gaps = 0;                   // intervals between consecutive times over kGapPeriods periods
  double longest_gap_s = 0;               // 0 when there is none
  double min = 0, mean = 0, max = 0;
};

struct GpuTraceStats {
  std::vector<MetricStats> metrics;  // catalog order, metrics with samples only
  std::size_t process_records = 0;
  std::size_t process_ids = 0;  // distinct pids
};

struct TraceStats {
  InputFormat format = InputFormat::kGpudocTrace;
  TraceHeader header;
  std::vector<GpuTraceStats> gpus;            // same order as header.gpus
  std::map<std::string, std::size_t> events;  // kind -> count
  std::optional<TraceSummary> end;
  double duration_s = 0;
  std::vector<std::string> warnings;  // Trace::warnings
};

// Reads the file once, as a stream (intervals and gaps are those of each series in time order,
// whatever the order of its lines). Memory: the gaps found and the distinct pids, not the samples.
// Errors: as read_telemetry_file.
[[nodiscard]] core::Result<TraceStats> trace_stats_of_file(const std::string& path);
// The same for a trace in memory.
[[nodiscard]] TraceStats trace_stats(const Trace& trace);

}  // namespace gpudoc::telemetry
