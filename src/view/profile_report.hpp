// gpudoc::view profile report — `gpudoc profile`'s terminal summary, its --json document and its
// --html page, all rendered from one profile::Profile; the words for each idle cause, blocker and
// verdict live in one table here (profile_report.cpp), nowhere else. Pure: no I/O.
//
//   std::fputs(view::profile_text(p, command).c_str(), stdout);
//   print_json(view::profile_json(p, command));
//   auto page = view::profile_html(p, command);      // Result: kEnvironment without uPlot
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "cost/prices.hpp"
#include "profile/analysis.hpp"

namespace gpudoc::view {

// What a person reads for an idle cause, a blocker, a verdict: "host work with no CUDA call
// (data loading, Python)", "a synchronization each step (.item(), ...)".
[[nodiscard]] std::string idle_cause_text(profile::IdleCause c);
[[nodiscard]] std::string blocker_text(profile::Blocker b);
// One line: "RECOMMENDED: expected step 0.61 ms instead of 2.91 ms (-79 %)", "FIX FIRST: ...".
[[nodiscard]] std::string verdict_line(const profile::GraphAdvice& a);
// How to do it, for a recommendation: torch.cuda.graphs / torch.compile / stream capture.
[[nodiscard]] std::string graph_recipe(const profile::GraphAdvice& a);

// With `prices`, each also says what the analysed steps cost (cost::cost_of_profile on `host`,
// the machine that ran them: the Cost block, "cost" in the JSON, a section of the page).
struct ProfileCost {
  const cost::PriceBook* prices = nullptr;
  std::string host{};
};
[[nodiscard]] std::string profile_text(const profile::Profile& p, const std::vector<std::string>& command,
                                       const ProfileCost& cost = {});
[[nodiscard]] nlohmann::ordered_json profile_json(const profile::Profile& p, const std::vector<std::string>& command,
                                                  const ProfileCost& cost = {});
[[nodiscard]] core::Result<std::string> profile_html(const profile::Profile& p, const std::vector<std::string>& command,
                                                     const ProfileCost& cost = {});

}  // namespace gpudoc::view
