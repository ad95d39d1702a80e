#include "view/diagnoses.hpp"

#include <fmt/format.h>

#include "core/result.hpp"
#include "core/text.hpp"
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

std::string render_diagnoses(std::span<const diagnose::Diagnosed> items, findings::Severity threshold,
                             const Tally& tally, const DiagnosesText& options) {
  std::string text;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) text += "\n" + std::string(80, '-') + "\n\n";
    text += render_diagnosis(items[i].trace, items[i].diagnosis,
                             {.color = options.color, .width = 80, .banner = options.banner});
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

}  // namespace gpudoc::view
