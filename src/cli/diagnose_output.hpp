// What `gpudoc diagnose` and `gpudoc doctor` share: diagnosing trace files, sampling live GPUs
// (optionally while a command runs) into a trace in memory and diagnosing it, and printing the result as
// text, JSON and an HTML page, with the exit code the threshold decides.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/common.hpp"
#include "core/result.hpp"
#include "diagnose/diagnose.hpp"
#include "findings/finding.hpp"
#include "telemetry/backend_source.hpp"
#include "telemetry/trace.hpp"

namespace gpudoc::cli {

struct Diagnosed {
  telemetry::Trace trace;
  diagnose::Diagnosis diagnosis;
};

struct OutputFlags {
  bool json = false;
  std::string html;                      // write the page here when not empty
  std::string min_severity = "warning";  // exit 1 when a finding is at or above it
  double window_s = 60;
};

// --json, --html, --min-severity, --window.
void add_output_flags(CLI::App& cmd, OutputFlags& out);
// One line per diagnose finding of the catalog, for --help.
[[nodiscard]] std::string findings_help();

// Checks the flags before any work is done (an --html without web assets fails before a live run).
// Errors: kUsage (bad --min-severity, --window not a number of seconds from 2 to 1e6),
// kEnvironment (no web assets for --html).
[[nodiscard]] core::Status check_output_flags(const OutputFlags& f);

// Reads and diagnoses one file (gpudoc trace or nvidia-smi CSV), keeping only what the diagnosis
// and its views read. Errors: the reader's (kBadInput with file and line, kIo); kBadInput when the
// file is not one recording (diagnose::check_diagnosable).
[[nodiscard]] core::Result<Diagnosed> diagnose_file(const std::string& path, const OutputFlags& f,
                                                    const std::string& source_name = "");

struct LiveRun {
  double duration_s = 0;                  // 0: until the command exits (or Ctrl-C)
  std::vector<std::string> command;       // record while this runs
  std::string output;                     // also write the trace here; empty: no file (unless keep_trace)
  bool keep_trace = false;                // without output: write it in a private folder and say where
  bool command_stdout_to_stderr = false;  // --json: stdout carries only gpudoc's document
  SamplerFlags sampler;
};

struct LiveResult {
  Diagnosed diagnosed;
  std::optional<int> command_exit_code;
  std::string trace_path;  // the file written (output, or keep_trace's); empty: none
  std::string end_reason;
};

// Samples the GPUs of `live` (the backend chosen for the run) into a trace built in memory
// (telemetry::TraceBuilder: the trace a file of the same records reads back as), then diagnoses it.
// A file is written only when asked: run.output, or with run.keep_trace one in a private folder
// (core::PrivateDir) that is kept. Errors: kBadInput (the command cannot run), kIo, the sampler's.
[[nodiscard]] core::Result<LiveResult> record_and_diagnose(const telemetry::Live& live, const LiveRun& run,
                                                           const OutputFlags& f, bool quiet);

struct PrintContext {
  std::string banner;                               // text report and page, e.g. the replay notice
  nlohmann::json extra = nlohmann::json::object();  // added to the JSON document
  std::string closing;                              // a last line of the text report
  bool replay = false;                              // recorded traces shown instead of this machine: the
                                                    // verdict line does not promise exit 1
};

// Prints the diagnoses (text or JSON on stdout, the page to f.html) and returns the exit code:
// 1 when a finding is at or above the threshold, else 0; or the error's code (writing the page).
int print_diagnoses(const std::vector<Diagnosed>& items, const OutputFlags& f, const PrintContext& ctx);

}  // namespace gpudoc::cli
