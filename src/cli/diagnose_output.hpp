// What `gpudoc diagnose` and `gpudoc doctor` share: their output flags, a live run with its
// messages on stderr (diagnose/session.hpp does the work), and printing the diagnoses as text, JSON
// and an HTML page (view/diagnoses.hpp, view/diagnose_html.hpp) with the exit code the threshold
// decides.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/common.hpp"
#include "core/result.hpp"
#include "diagnose/session.hpp"

namespace gpudoc::cli {

using diagnose::Diagnosed;

struct OutputFlags {
  bool json = false;
  std::string html;                      // write the page here when not empty
  std::string min_severity = "warning";  // exit 1 when a finding is at or above it
  diagnose::Options options;             // --window
  // --min-severity's (once check_output_flags has accepted it).
  [[nodiscard]] findings::Severity threshold() const;
};

// --json, --html, --min-severity, --window.
void add_output_flags(Command& cmd, OutputFlags& out);

// Checks the flags before any work is done (an --html without web assets fails before a live run).
// Errors: kUsage (bad --min-severity), kEnvironment (no web assets for --html).
[[nodiscard]] core::Status check_output_flags(const OutputFlags& f);

// diagnose::record_and_diagnose of `run` (its duration, command, output and keep_trace) on the
// sampler `sampler` gives, with the stop handlers installed and, unless `quiet`, what it does said
// on stderr (a progress line on a terminal when there is no command).
[[nodiscard]] core::Result<diagnose::LiveResult> record_live(const telemetry::Live& live, diagnose::LiveRun run,
                                                             const SamplerFlags& sampler, const OutputFlags& f,
                                                             bool quiet);

struct PrintContext {
  std::string banner{};                             // text report and page, e.g. the replay notice
  nlohmann::json extra = nlohmann::json::object();  // added to the JSON document
  std::string closing{};                            // a last line of the text report
  bool replay = false;                              // recorded traces shown instead of this machine: the
                                                    // verdict line does not promise exit 1
  const cost::PriceBook* prices = nullptr;          // set (diagnose): each report's Cost block, "cost"
};

// Prints the diagnoses (text or JSON on stdout, the page to f.html) and returns the exit code:
// 1 when a finding is at or above the threshold, else 0; or the error's code (writing the page).
int print_diagnoses(const std::vector<Diagnosed>& items, const OutputFlags& f, const PrintContext& ctx);

}  // namespace gpudoc::cli
