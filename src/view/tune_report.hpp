// gpudoc::view tune report — `gpudoc tune`'s report for a person (text) and as a self-contained
// HTML page (every trial in the order it ran, per change; web/report/tune.js draws them with the
// embedded uPlot). The JSON document is tune::to_json's. Pure: no I/O.
//
//   std::string text = view::tune_text(report);         // print_text escapes it for the terminal
//   auto page = view::tune_html(report);                // Result: kEnvironment without uPlot
#pragma once

#include <string>

#include "core/result.hpp"
#include "tune/tune.hpp"

namespace gpudoc::view {

// The headline: "2.41x faster (+141.3 %, 95 % interval [+128.0, +152.9] %), ..." or "Nothing worth
// changing: ...".
[[nodiscard]] std::string tune_headline(const tune::Report& r);
[[nodiscard]] std::string tune_text(const tune::Report& r);
[[nodiscard]] core::Result<std::string> tune_html(const tune::Report& r);

}  // namespace gpudoc::view
