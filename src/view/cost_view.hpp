// gpudoc::view cost — a job's cost (cost/job.hpp) as diagnose, baseline and profile show it: a
// short "Cost" block for the terminal and a section for the HTML reports; the JSON is
// cost::to_json. Pure: no I/O. docs/cost.md shows both.
//
//   std::string text = view::render_cost(job, prices);   // "Cost (1 GPU × 25.5 s: ...)\n  ..."
//   std::string html = view::cost_html(job, prices);     // <div class="cost">...</div>
//
// Names from a trace (GPU models) and notes are escaped for the terminal and for HTML.
#pragma once

#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "cost/job.hpp"
#include "cost/prices.hpp"
#include "diagnose/session.hpp"

namespace gpudoc::view {

[[nodiscard]] std::string render_cost(const cost::JobCost& job, const cost::PriceBook& prices);
[[nodiscard]] std::string cost_html(const cost::JobCost& job, const cost::PriceBook& prices);

// diagnose --json: each diagnosis' "cost" (cost::to_json of its trace's run at `prices`): the
// document's own for one trace, each of "traces" for several (view::diagnoses_json's layout).
void add_costs(nlohmann::json& document, std::span<const diagnose::Diagnosed> items, const cost::PriceBook& prices);

// 25.5 s, 12.3 min, 4.56 h; 812 J, 11.7 kJ, 3.4 MJ; 41.2 g, 1.23 kg, 2.1 t of CO2. Three
// significant figures, never an exponent.
[[nodiscard]] std::string format_duration(double seconds);
[[nodiscard]] std::string format_energy(double joules);
[[nodiscard]] std::string format_co2(double grams);
[[nodiscard]] std::string format_money(double amount, const std::string& currency);

}  // namespace gpudoc::view
