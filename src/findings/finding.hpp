// gpudoc::findings — findings are data: one catalog of stable ids, and the Finding every
// analysis (diagnose, health, guard) produces. Renderers (terminal, JSON, HTML) only render them.
//
//   const findings::CatalogEntry* e = findings::find_entry("sawtooth");
//   findings::Finding f = findings::make_finding("sawtooth", findings::Severity::kWarning);
//   f.gpus = {0}; f.window = {12.0, 48.5}; f.confidence = 0.9;
//   f.message = "GPU 0 works in bursts: period 1.00 s, duty 50 %, 8.1 s of GPU time lost";
//   f.evidence.push_back({"period_s", 1.0, "s", "autocorrelation peak of gpu_utilization_percent"});
//   nlohmann::json j = findings::to_json(f);
//
// docs/findings.md documents every entry; a test checks the two agree.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpudoc::findings {

// Ordered: a threshold "at or above warning" means severity >= kWarning.
enum class Severity { kInfo = 0, kWarning = 1, kCritical = 2 };
[[nodiscard]] const char* to_string(Severity s) noexcept;
// "info" | "warning" | "critical"; nullopt otherwise.
[[nodiscard]] std::optional<Severity> parse_severity(std::string_view s) noexcept;

// One entry of the catalog: what a finding id means and what to do about it in general.
struct CatalogEntry {
  std::string_view id;                       // stable, snake_case: never renamed (baselines and CI refer to it)
  std::string_view area;                     // "diagnose", "health", "guard"
  std::string_view title;                    // "Sawtooth: the GPU waits for its input"
  std::string_view meaning;                  // one paragraph: what the waveform/check shows and why it matters
  std::vector<std::string_view> next_steps;  // real commands/settings, general form
};

// The whole catalog, in a fixed order.
[[nodiscard]] std::span<const CatalogEntry> catalog();
[[nodiscard]] const CatalogEntry* find_entry(std::string_view id);

// One number behind a finding: name with unit, value, and how it was obtained.
struct Evidence {
  std::string name;  // "period_s", "duty_cycle_percent", "gpu_time_lost_s"
  double value = 0;
  std::string unit;  // "s", "percent", "W", ...
  std::string how;   // "autocorrelation peak of gpu_utilization_percent, GPU 0"
};

struct TimeWindow {
  double start_s = 0;  // seconds since the trace's start
  double end_s = 0;
};

struct Finding {
  std::string id;  // a catalog id
  Severity severity = Severity::kInfo;
  std::vector<int> gpus;  // positions in the trace's GPU list
  TimeWindow window;
  double confidence = 1.0;  // 0..1; lowered when signals were missing or the pattern was faint
  std::string message;      // one sentence with the numbers: what was seen
  std::vector<Evidence> evidence;
  std::vector<std::string> next_steps;                // specific to this case (may extend the catalog's)
  std::vector<std::string> caveats;                   // "no GPM in this trace: SM activity not seen"
  nlohmann::json details = nlohmann::json::object();  // finding-specific structured data
};

// A finding with the given id and severity and the catalog's next steps. Precondition: id is
// in the catalog (an unknown id is a bug: it throws std::logic_error).
[[nodiscard]] Finding make_finding(std::string_view id, Severity severity);

// Next step number `index` of catalog entry `id`, with each "{key}" in it replaced by its value
// ({"node", "1"}: "--cpunodebind={node}" -> "--cpunodebind=1"). Checks that pick one step for the
// case they found (health) take it from here, so every next step gpudoc prints is in the catalog.
// Precondition: id is in the catalog with more than `index` steps (a bug otherwise: it throws
// std::logic_error, as make_finding does).
[[nodiscard]] std::string next_step(std::string_view id, std::size_t index,
                                    std::initializer_list<std::pair<std::string_view, std::string>> values = {});

[[nodiscard]] nlohmann::json to_json(const Finding& f);
[[nodiscard]] nlohmann::json to_json(const CatalogEntry& e);

}  // namespace gpudoc::findings
