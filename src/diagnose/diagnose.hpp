// gpudoc::diagnose — what a GPU's waveform means: from a Trace (recorded, imported from an
// nvidia-smi CSV, or just sampled live) to findings with evidence, confidence and next steps.
// Pure logic: no I/O, no GPU. docs/findings.md lists the findings; docs/methodology.md the method.
//
//   auto t = telemetry::read_telemetry_file("run.jsonl");
//   diagnose::Diagnosis d = diagnose::diagnose(*t, diagnose::Options{});
//   for (const findings::Finding& f : d.findings) ...
//   nlohmann::json j = diagnose::to_json(d);   // {"findings": [...], "gpus": [...], ...}
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "findings/finding.hpp"
#include "telemetry/trace.hpp"

namespace gpudoc::diagnose {

struct Options {
  double window_s = 60;          // long traces are analysed in windows of this length
  double skip_start_s = -1;      // seconds ignored at the start (start-up); < 0: detected
};

// What one GPU did over the analysed span, for the report's header line and charts.
struct GpuSummary {
  int gpu = 0;                   // position in the trace's GPU list
  std::string name;              // "NVIDIA H200"
  double analysed_from_s = 0;
  double analysed_to_s = 0;
  std::optional<double> mean_utilization_percent;
  std::optional<double> mean_sm_activity_percent;      // GPM
  std::optional<double> mean_tensor_activity_percent;  // GPM
  std::optional<double> mean_dram_activity_percent;    // GPM
  std::optional<double> mean_memory_utilization_percent;
  std::optional<double> mean_power_watts;
  std::optional<double> peak_memory_used_bytes;
  std::string primary;           // id of the main finding for this GPU ("healthy", "sawtooth", ...)
};

// A change of pattern in a long trace: from `from` to `to` at t_s on one GPU.
struct PatternChange {
  int gpu = 0;
  double t_s = 0;
  std::string from;
  std::string to;
};

struct Diagnosis {
  std::string source;                         // file name or "live"
  std::string input_format;                   // "gpudoc-trace" | "nvidia-smi-csv" | "live"
  double duration_s = 0;
  std::vector<GpuSummary> gpus;
  std::vector<findings::Finding> findings;    // most severe first
  std::vector<PatternChange> changes;
  std::vector<std::string> unseen;            // signals the input lacked ("GPM SM activity", ...)
  std::vector<std::string> notes;             // how it was analysed ("skipped 5.2 s of start-up ...")
};

[[nodiscard]] Diagnosis diagnose(const telemetry::Trace& trace, const Options& options);

[[nodiscard]] nlohmann::json to_json(const Diagnosis& d);

// The highest severity among the findings; nullopt when there are none.
[[nodiscard]] std::optional<findings::Severity> max_severity(const Diagnosis& d);

}  // namespace gpudoc::diagnose
