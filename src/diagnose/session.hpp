// gpudoc::diagnose session — the I/O around the pure diagnosis (diagnose.hpp): a trace file read
// and diagnosed, or live GPUs sampled (optionally while a command runs) into a trace built in
// memory (telemetry::TraceBuilder through the recorder: the trace a file of the same records
// reads back as) and diagnosed. `diagnose --live`, `diagnose -- CMD` and `doctor` run it; a file
// is written only when asked (LiveRun::output, or keep_trace in a private folder).
#pragma once

#include <cstdio>

#include <array>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "diagnose/diagnose.hpp"
#include "telemetry/backend_source.hpp"
#include "telemetry/sampler.hpp"
#include "telemetry/trace.hpp"

namespace gpudoc::diagnose {

struct Diagnosed {
  telemetry::Trace trace;
  Diagnosis diagnosis;
};

// Diagnoses a trace already read; `name` is where it came from (for messages), `source_name` what
// the diagnosis calls it (default: name). Errors: kBadInput when it is not one recording
// (check_diagnosable).
[[nodiscard]] core::Result<Diagnosed> diagnose_trace(telemetry::Trace&& trace, const std::string& name,
                                                     const Options& options, const std::string& source_name = "");

// Reads and diagnoses one file (gpudoc trace or nvidia-smi CSV), keeping only what the diagnosis
// and its views read. Errors: the reader's (kBadInput with file and line, kIo), diagnose_trace's.
[[nodiscard]] core::Result<Diagnosed> diagnose_file(const std::string& path, const Options& options,
                                                    const std::string& source_name = "");

// diagnose_file for each of `paths`, in order. With `dir` (doctor's bundled traces), each path is a
// file name in it, and the name is what the diagnosis calls it. Errors: the first file's that fails.
[[nodiscard]] core::Result<std::vector<Diagnosed>> diagnose_files(const std::vector<std::string>& paths,
                                                                  const Options& options,
                                                                  const std::filesystem::path& dir = {});

// The sampler's periods for a short live look: the recorder's, with utilization drained every
// second (not every 10 s as in a long recording) so that the look ends with its last seconds in it.
[[nodiscard]] std::array<std::chrono::milliseconds, gpu::kMetricGroupCount> live_periods();

struct LiveRun {
  double duration_s = 0;                  // 0: until the command exits (or a stop request)
  std::vector<std::string> command{};     // record while this runs
  std::string output{};                   // also write the trace here; empty: no file (unless keep_trace)
  bool keep_trace = false;                // without output: write it in a private folder and say where
  bool command_stdout_to_stderr = false;  // the caller prints a document on stdout
  telemetry::SamplerConfig sampler{};
  // When set, what the run does is said here: the backend's banner, what is sampled for how long
  // or while which command runs, and, on a terminal and without a command, a progress line about
  // once a second. Everything from the command line or the backend is shown terminal-safe.
  std::FILE* narrate = nullptr;
};

struct LiveResult {
  Diagnosed diagnosed;
  std::optional<int> command_exit_code;
  std::string trace_path;  // the file written (output, or keep_trace's); empty: none
  std::string end_reason;
};

// Samples the GPUs of `live` into a trace built in memory, then diagnoses it. `stop_requests`
// counts stop signals (core/stop_signals.hpp). Errors: kBadInput (the command cannot run), kIo,
// the sampler's.
[[nodiscard]] core::Result<LiveResult> record_and_diagnose(const telemetry::Live& live, const LiveRun& run,
                                                           const Options& options, std::atomic<int>& stop_requests);

}  // namespace gpudoc::diagnose
