// gpudoc::view diagnoses — one or several diagnoses (diagnose, doctor) as gpudoc prints them: the
// JSON document and the terminal report with its closing verdict line; the findings their --help
// lists, and their --html page. Pure: no I/O.
//
//   auto tally = view::tally(items, threshold);
//   print(view::diagnoses_json(items, threshold, tally));   // or
//   print(view::render_diagnoses(items, threshold, tally, {.color = tty}));
//   auto page = view::diagnoses_html(items, {.banner = banner});   // Result<std::string>
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "cost/prices.hpp"
#include "diagnose/session.hpp"
#include "findings/finding.hpp"
#include "view/diagnose_html.hpp"

namespace gpudoc::view {

struct Tally {
  std::size_t at_or_above = 0;              // findings at or above the threshold
  std::optional<findings::Severity> worst;  // the most severe finding's severity
  [[nodiscard]] int exit_code() const;      // 1 when any is at or above the threshold, else 0
};
[[nodiscard]] Tally tally(std::span<const diagnose::Diagnosed> items, findings::Severity threshold);

// One trace: its diagnosis' JSON. Several: each under "traces", and every finding also in the
// top-level "findings" with the trace it came from, so `.findings[]` works for one trace or many.
// Both with "threshold", "max_severity" and "exit_code".
[[nodiscard]] nlohmann::json diagnoses_json(std::span<const diagnose::Diagnosed> items, findings::Severity threshold,
                                            const Tally& tally);

// The page of one or several diagnoses with their traces' curves (render_diagnose_html), titled
// diagnoses_title(items) unless `options` gives a title. Errors: render_diagnose_html's (kEnvironment
// without web assets).
[[nodiscard]] core::Result<std::string> diagnoses_html(std::span<const diagnose::Diagnosed> items, HtmlOptions options);
// The one trace's file name ("run.jsonl" for /data/run.jsonl), or "N traces" for several.
[[nodiscard]] std::string diagnoses_title(std::span<const diagnose::Diagnosed> items);

struct DiagnosesText {
  bool color = false;
  std::string banner{};   // under each report's title, e.g. the replay notice
  std::string closing{};  // a last line (escaped here: it may quote a command)
  bool replay = false;    // recorded traces instead of this machine: the verdict does not promise exit 1
  const cost::PriceBook* prices = nullptr;  // set: each report ends with its run's Cost block
};

// Each diagnosis' report (view::render_diagnosis), separated by a rule, then the verdict line.
[[nodiscard]] std::string render_diagnoses(std::span<const diagnose::Diagnosed> items, findings::Severity threshold,
                                           const Tally& tally, const DiagnosesText& options);

// What `diagnose --live` and `diagnose -- CMD` add to the report: a last line (the command's exit
// code, where the trace was kept) and the JSON's "command_exit_code", "trace" and "end_reason".
struct LiveSummary {
  std::string closing;
  nlohmann::json extra = nlohmann::json::object();
};
[[nodiscard]] LiveSummary live_summary(const diagnose::LiveResult& result);

// `gpudoc doctor`'s words around a diagnosis. A live look: the last line says how long it looked
// and what to run next; on a replay or fake GPUs, whose they were.
[[nodiscard]] std::string doctor_closing(double duration_s, bool real_gpus, bool replay);

// "Findings (docs/findings.md):" and one line per diagnose finding of the catalog (id, title): the
// list diagnose's and doctor's --help show.
[[nodiscard]] std::string findings_help();

// doctor on the bundled traces: the banner over each report, the line above them (which names why
// there is no live GPU unless the replay was asked for) and the last line.
struct ReplayWords {
  std::string banner, intro, closing;
};
[[nodiscard]] ReplayWords doctor_replay_words(std::size_t traces, const std::string& dir, const std::string& why,
                                              bool asked);

}  // namespace gpudoc::view
