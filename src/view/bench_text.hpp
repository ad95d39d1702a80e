// gpudoc::view bench text — `gpudoc bench` in the terminal: the machine header (GPU, driver, CUDA,
// clocks, power limit, PCIe link), the results table (median, min–max, CV, verified, and with
// telemetry the SM clock and slowdown reasons seen while each benchmark ran), the p2p matrices and
// nccl curves, why a figure spread, and the conditions over the whole run. Pure: no I/O.
//
//   bench::Report rep = bench::run(*plan, observe, progress);
//   std::fputs(view::render_bench_text(rep).c_str(), stdout);
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "bench/engine.hpp"

namespace gpudoc::view {

// The whole report as text, header first.
[[nodiscard]] std::string render_bench_text(const bench::Report& report);
// The machine header alone: "GPU 0: NVIDIA H200 (GPU-…), driver CUDA 13.0, runtime 13.0, mode quick\n...",
// or "no GPU benchmark can run: REASON\n".
[[nodiscard]] std::string render_bench_header(const bench::Report& report);
// Every registered benchmark, one line each: key and description (for --list and --help).
[[nodiscard]] std::string render_bench_list();
// The same as JSON, for --list --json: [{"key", "description"}, ...].
[[nodiscard]] nlohmann::json bench_list_json();

}  // namespace gpudoc::view
