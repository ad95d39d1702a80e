#include "view/diagnoses.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <vector>

#include "core/result.hpp"
#include "core/text.hpp"
#include "cost/job.hpp"
#include "view/cost_view.hpp"
#include "view/diagnose_render.hpp"

namespace gpudoc::view {

int Tally::exit_code() const { return at_or_above > 0 ? core::kExitFinding : core::kExitOk; }

Tally tally(std::span<const diagnose::Diagnosed> items, findings::Severity threshold) {
  Tally t;
  for (const auto& it : items)
    for (const auto& fd : it.diagnosis.findings) {
      if (fd.severity >= threshold) ++t.at_or_above;
      if (!t.worst || fd.severity > *t.worst) t.worst = fd.severity;
    }
  return t;
}

nlohmann::json diagnoses_json(std::span<const diagnose::Diagnosed> items, findings::Severity threshold,
                              const Tally& tally) {
  nlohmann::json j;
  if (items.size() == 1) {
    j = diagnose::to_json(items[0].diagnosis);
  } else {
    nlohmann::json traces = nlohmann::json::array(), all = nlohmann::json::array();
    for (const auto& it : items) {
      traces.push_back(diagnose::to_json(it.diagnosis));
      for (const auto& fd : it.diagnosis.findings) {
        auto fj = findings::to_json(fd);
        fj["trace"] = it.diagnosis.source;
        all.push_back(fj);
      }
    }
    j = {{"traces", traces}, {"findings", all}};
  }
  j["threshold"] = findings::to_string(threshold);
  j["max_severity"] = tally.worst ? nlohmann::json(findings::to_string(*tally.worst)) : nlohmann::json(nullptr);
  j["exit_code"] = tally.exit_code();
  return j;
}

std::string diagnoses_title(std::span<const diagnose::Diagnosed> items) {
  if (items.size() == 1) return std::filesystem::path(items[0].diagnosis.source).filename().string();
  return fmt::format("{} traces", items.size());
}

core::Result<std::string> diagnoses_html(std::span<const diagnose::Diagnosed> items, HtmlOptions options) {
  std::vector<HtmlReport> reports;
  for (const auto& it : items) reports.push_back({&it.trace, &it.diagnosis});
  if (options.title.empty()) options.title = diagnoses_title(items);
  return render_diagnose_html(reports, options);
}

std::string render_diagnoses(std::span<const diagnose::Diagnosed> items, findings::Severity threshold,
                             const Tally& tally, const DiagnosesText& options) {
  std::string text;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) text += "\n" + std::string(80, '-') + "\n\n";
    text += render_diagnosis(items[i].trace, items[i].diagnosis,
                             {.color = options.color, .width = 80, .banner = options.banner});
    if (options.prices != nullptr)
      text += "\n" + render_cost(cost::cost_of_trace(items[i].trace, items[i].diagnosis, {}), *options.prices);
  }
  text += "\n";
  const char* where = options.replay ? " in the replayed traces" : "";
  if (tally.at_or_above > 0)
    text += fmt::format("{} finding{} at or above {}{}{}.\n", tally.at_or_above, tally.at_or_above == 1 ? "" : "s",
                        findings::to_string(threshold), where, options.replay ? "" : " (exit 1)");
  else
    text += fmt::format("No finding at or above {}{}.\n", findings::to_string(threshold), where);
  if (!options.closing.empty()) text += core::terminal_safe(options.closing, core::Newlines::kKeep) + "\n";
  return text;
}

LiveSummary live_summary(const diagnose::LiveResult& result) {
  LiveSummary out;
  if (result.command_exit_code) {
    out.extra["command_exit_code"] = *result.command_exit_code;
    out.closing = fmt::format("The command exited with code {}.", *result.command_exit_code);
  }
  if (!result.trace_path.empty()) {
    out.extra["trace"] = result.trace_path;
    out.closing += fmt::format("{}The trace is in {} (gpudoc diagnose {} --html report.html to look at it again).",
                               out.closing.empty() ? "" : " ", result.trace_path, result.trace_path);
  }
  out.extra["end_reason"] = result.end_reason;
  return out;
}

std::string doctor_closing(double duration_s, bool real_gpus, bool replay) {
  if (!real_gpus)
    return fmt::format("That was {}, not this machine's GPUs.", replay ? "a replayed recording" : "scripted fake GPUs");
  return fmt::format(
      "That was {:.0f} s of live telemetry. For a longer look: gpudoc diagnose --live --duration 120; for one job: "
      "gpudoc diagnose -- CMD ARGS...",
      duration_s);
}

ReplayWords doctor_replay_words(std::size_t traces, const std::string& dir, const std::string& why, bool asked) {
  ReplayWords w;
  w.banner = fmt::format("REPLAY, not this machine: real H200 traces recorded with gpudoc record ({})", dir);
  w.intro = fmt::format("{}This is a REPLAY of real H200 traces recorded with gpudoc record, not this machine.\n\n",
                        asked ? "" : fmt::format("No live GPU here ({}).\n", why));
  w.closing = fmt::format(
      "That was a replay of {} recorded H200 traces, not this machine: {}.\n"
      "On a machine with an NVIDIA GPU, `gpudoc doctor` looks at its GPUs live. Every bundled trace: "
      "gpudoc diagnose {}/*.jsonl",
      traces, why, dir);
  return w;
}

std::string findings_help() {
  std::string out = "Findings (docs/findings.md):\n";
  for (const auto& e : findings::catalog())
    if (e.area == "diagnose") out += fmt::format("  {:<17} {}\n", e.id, e.title);
  return out;
}

}  // namespace gpudoc::view
