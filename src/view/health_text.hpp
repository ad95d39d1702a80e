// gpudoc::view health text — `gpudoc health` in the terminal: its header (the backend's banner,
// driver, CUDA, GPUs, the load), one line per check (check, GPU, status, evidence) with the
// catalog's next step under each warning or failure, and the counts; and the JSON of a machine
// without a GPU. Pure: no I/O.
//
//   const std::string header = view::health_header(node, live.banner);
//   std::fputs(view::render_health_table(node.results, node.wall_seconds, header, tty).c_str(), stdout);
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "health/health.hpp"
#include "health/node.hpp"

namespace gpudoc::view {

// `header` first, then the table, then "N fail, N warn, N info, N pass, N skip — W s". `color`:
// ANSI colors for the status column. The header, checks, evidence and next steps are shown through
// core::terminal_safe (they quote GPU, driver and host names, a replayed trace's too).
[[nodiscard]] std::string render_health_table(const std::vector<health::CheckResult>& results, double wall_s,
                                              const std::string& header, bool color);

// "gpudoc health — driver 580.95.05, CUDA 13.0; 8 GPU(s); load: HBM copy for 5.0 s" and a blank
// line, under `banner` (a replay's or fake GPUs' notice) when there is one.
// `health --gate`'s one line: the drain reason (health::gate_reason) when a check failed, else
// "ok: N checks, none failed (W warnings; ...)".
[[nodiscard]] std::string health_gate_line(const std::vector<health::CheckResult>& results);
[[nodiscard]] std::string health_header(const health::NodeReport& node, const std::string& banner);

// `gpudoc health --json` without a GPU: {"status": "no_gpu", "error": {kind, message, exit_code},
// "gpudoc_version", "checks": [the host's]}.
[[nodiscard]] nlohmann::json no_gpu_health_json(const std::vector<health::CheckResult>& host_results,
                                                const core::Error& no_gpu);

}  // namespace gpudoc::view
