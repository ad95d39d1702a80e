// gpudoc::bench engine — runs a selection of benchmarks: each is either waived (with its reason),
// run to a result, or failed (with its error); one failure never stops the others.
//
//   auto ctx = bench::probe_context(0);
//   auto sel = bench::registry().select({"hbm"});
//   bench::Report rep = bench::run_benchmarks(*sel, ctx, {}, nullptr);
//   int code = bench::exit_code(rep);   // 0 all ran, 3 none could run, ...
//
// Not thread-safe (benchmarks use CUDA device state).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/registry.hpp"

namespace gpudoc::bench {

enum class OutcomeStatus { kOk, kWaived, kFailed };
[[nodiscard]] const char* to_string(OutcomeStatus s) noexcept;

struct Outcome {
  std::string key;
  OutcomeStatus status = OutcomeStatus::kWaived;
  std::optional<BenchResult> result;          // kOk; also kFailed when the result did not verify
  std::string reason;                         // waiver reason or error message
  std::optional<core::ErrorKind> error_kind;  // kFailed
  double wall_seconds = 0;
  std::int64_t started_unix_ns = 0;  // wall clock, to match telemetry samples
  std::int64_t ended_unix_ns = 0;
  std::optional<Conditions> conditions;  // what the GPU did meanwhile (attach_conditions)
};

struct Report {
  Context context;
  Mode mode = Mode::kDefault;
  std::vector<Outcome> outcomes;
  double wall_seconds = 0;               // the whole run
  std::optional<Conditions> conditions;  // over the whole run (attach_conditions)
};

// Called before each benchmark starts: index (0-based), count, key.
using Progress = std::function<void(std::size_t index, std::size_t count, const std::string& key)>;

// Runs `selected` in order. A result that ran but did not verify is kFailed (kInternal) and keeps
// its result. Exceptions from a benchmark are caught and recorded as kInternal failures.
[[nodiscard]] Report run_benchmarks(const std::vector<const Benchmark*>& selected, const Context& ctx,
                                    const RunOptions& options, const Progress& progress);

// 0 when every selected benchmark ran and verified; 3 when nothing could run (all waived);
// otherwise the exit code of the first failure's kind (a failed verification is 4).
[[nodiscard]] int exit_code(const Report& report);

[[nodiscard]] nlohmann::json to_json(const Report& report);

}  // namespace gpudoc::bench
