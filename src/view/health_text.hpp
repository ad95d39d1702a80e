// gpudoc::view health text — `gpudoc health` in the terminal: one line per check (check, GPU,
// status, evidence) with the catalog's next step under each warning or failure, and the counts.
// Pure: no I/O.
//
//   std::fputs(view::render_health_table(results, 6.2, "gpudoc health — driver 580...\n\n", tty).c_str(), stdout);
#pragma once

#include <string>
#include <vector>

#include "health/health.hpp"

namespace gpudoc::view {

// `header` first, then the table, then "N fail, N warn, N info, N pass, N skip — W s". `color`:
// ANSI colors for the status column.
[[nodiscard]] std::string render_health_table(const std::vector<health::CheckResult>& results, double wall_s,
                                              const std::string& header, bool color);

}  // namespace gpudoc::view
