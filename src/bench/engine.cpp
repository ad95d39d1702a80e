#include "bench/engine.hpp"

#include <chrono>
#include <exception>

namespace gpudoc::bench {

const char* to_string(OutcomeStatus s) noexcept {
  switch (s) {
    case OutcomeStatus::kOk: return "ok";
    case OutcomeStatus::kWaived: return "waived";
    case OutcomeStatus::kFailed: return "failed";
  }
  return "?";
}

Report run_benchmarks(const std::vector<const Benchmark*>& selected, const Context& ctx, const RunOptions& options,
                      const Progress& progress) {
  Report report;
  report.context = ctx;
  report.mode = options.mode;
  const auto run_start = std::chrono::steady_clock::now();
  auto unix_now_ns = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  for (std::size_t i = 0; i < selected.size(); ++i) {
    const Benchmark& b = *selected[i];
    Outcome o;
    o.key = b.key();
    if (progress) progress(i, selected.size(), o.key);
    const auto start = std::chrono::steady_clock::now();
    o.started_unix_ns = unix_now_ns();
    if (auto waiver = b.applicable(ctx)) {
      o.status = OutcomeStatus::kWaived;
      o.reason = *waiver;
    } else {
      try {
        auto r = b.run(ctx, options);
        if (!r) {
          o.status = OutcomeStatus::kFailed;
          o.reason = r.error().message();
          o.error_kind = r.error().kind();
        } else {
          o.result = std::move(r).value();
          if (o.result->verified) {
            o.status = OutcomeStatus::kOk;
          } else {
            o.status = OutcomeStatus::kFailed;
            o.reason = "result did not verify: " + o.result->verify_detail;
            o.error_kind = core::ErrorKind::kInternal;
          }
        }
      } catch (const std::exception& e) {
        o.status = OutcomeStatus::kFailed;
        o.reason = std::string("unexpected exception: ") + e.what();
        o.error_kind = core::ErrorKind::kInternal;
      }
    }
    o.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    o.ended_unix_ns = unix_now_ns();
    report.outcomes.push_back(std::move(o));
  }
  report.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
  return report;
}

int exit_code(const Report& report) {
  bool any_ran = false;
  for (const Outcome& o : report.outcomes) {
    if (o.status == OutcomeStatus::kFailed) return core::exit_code(o.error_kind.value_or(core::ErrorKind::kInternal));
    if (o.status == OutcomeStatus::kOk) any_ran = true;
  }
  return any_ran ? core::kExitOk : core::kExitEnvironment;
}

nlohmann::json to_json(const Report& report) {
  nlohmann::json results = nlohmann::json::array();
  for (const Outcome& o : report.outcomes) {
    nlohmann::json j = {{"key", o.key}, {"status", to_string(o.status)}, {"wall_seconds", o.wall_seconds}};
    if (!o.reason.empty()) j["reason"] = o.reason;
    if (o.error_kind) j["error_kind"] = core::to_string(*o.error_kind);
    if (o.result) j["result"] = to_json(*o.result);
    if (o.conditions) j["conditions"] = to_json(*o.conditions);
    results.push_back(std::move(j));
  }
  return {{"machine", to_json(report.context)},
          {"mode", to_string(report.mode)},
          {"results", std::move(results)},
          {"wall_seconds", report.wall_seconds},
          {"conditions", report.conditions ? to_json(*report.conditions) : nlohmann::json(nullptr)},
          {"exit_code", exit_code(report)}};
}

}  // namespace gpudoc::bench
