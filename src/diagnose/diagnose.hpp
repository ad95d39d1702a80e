// gpudoc::diagnose — what a GPU's waveform means: from a Trace (recorded, imported from an
// nvidia-smi CSV, or just sampled live) to findings with evidence, confidence and next steps.
// Pure logic: no I/O, no GPU. docs/findings.md lists the findings; docs/methodology.md the method.
//
//   auto t = telemetry::read_telemetry_file("run.jsonl", diagnose::read_options());
//   if (auto ok = diagnose::check_diagnosable(*t, "run.jsonl"); !ok) ...   // kBadInput
//   diagnose::Diagnosis d = diagnose::diagnose(*t, diagnose::Options{});
//   for (const findings::Finding& f : d.findings) ...
//   nlohmann::json j = diagnose::to_json(d);   // {"findings": [...], "gpus": [...], ...}
//
// Memory follows the samples, not the time they span: each GPU's series are put on the analysis
// grid as steps (one per sample), one GPU at a time, and windows without data cost nothing.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "findings/finding.hpp"
#include "telemetry/trace.hpp"

namespace gpudoc::diagnose {

struct Options {
  double window_s = 60;      // long traces are analysed in windows of this length (at least one
                             // grid cell, 0.1 s); <= 0: one window
  double skip_start_s = -1;  // seconds ignored at the start (start-up); < 0: detected
};

// The shortest window that can conclude anything: 20 cells of the 0.1 s analysis grid.
inline constexpr double kMinWindowS = 2.0;

// What diagnose(), and the views of a diagnosis (terminal, HTML), read of a trace: the metrics
// they use and the per-process samples. Reading only these keeps a day-long trace small.
[[nodiscard]] telemetry::ReadOptions read_options();

// The longest time without any sample one trace may hold and still be diagnosed as one recording.
inline constexpr double kMaxSilenceS = 7 * 86400.0;
// Whether `trace` reads as one recording: no stretch of more than kMaxSilenceS without a sample
// of any metric of any GPU (a longer one is two recordings joined, or a clock that jumped).
// Errors: kBadInput naming `name` and the silent stretch.
[[nodiscard]] core::Status check_diagnosable(const telemetry::Trace& trace, std::string_view name);

// What one GPU did over the analysed span, for the report's header line and charts.
struct GpuSummary {
  int gpu = 0;       // position in the trace's GPU list
  std::string name;  // "NVIDIA H200"
  double analysed_from_s = 0;
  double analysed_to_s = 0;
  std::optional<double> mean_utilization_percent;
  std::optional<double> mean_sm_activity_percent;      // GPM
  std::optional<double> mean_tensor_activity_percent;  // GPM
  std::optional<double> mean_dram_activity_percent;    // GPM
  std::optional<double> mean_memory_utilization_percent;
  std::optional<double> mean_power_watts;
  std::optional<double> peak_memory_used_bytes;
  std::string primary;  // id of the main finding for this GPU ("healthy", "sawtooth", ...)
};

// A change of pattern in a long trace: from `from` to `to` at t_s on one GPU.
struct PatternChange {
  int gpu = 0;
  double t_s = 0;
  std::string from;
  std::string to;
};

struct Diagnosis {
  std::string source;        // file name or "live"
  std::string input_format;  // "gpudoc-trace" | "nvidia-smi-csv" | "live"
  double duration_s = 0;
  std::vector<GpuSummary> gpus;
  std::vector<findings::Finding> findings;  // most severe first
  std::vector<PatternChange> changes;
  std::vector<std::string> unseen;    // signals the input lacked ("GPM SM activity", ...)
  std::vector<std::string> notes;     // how it was analysed ("skipped 5.2 s of start-up ...")
  std::vector<std::string> warnings;  // what the reader dropped from the input (Trace::warnings)
};

[[nodiscard]] Diagnosis diagnose(const telemetry::Trace& trace, const Options& options);

[[nodiscard]] nlohmann::json to_json(const Diagnosis& d);

// The highest severity among the findings; nullopt when there are none.
[[nodiscard]] std::optional<findings::Severity> max_severity(const Diagnosis& d);

}  // namespace gpudoc::diagnose
