// gpudoc::telemetry work — how much work a job reported doing, for the cost per step, sample and token.
// A job reports it in its `::gpudoc` lines (README, "The ::gpudoc metrics protocol"; python:
// gpudoc.report(step=..., samples=..., tokens=...)), read by `baseline` from the workload's output,
// by the recorder (`record -- CMD`, `diagnose -- CMD`) into the trace's `step` events (WorkLines),
// and from those events by the Cost block (docs/trace-format.md):
//   "step":    the steps done so far (a counter: the largest value is the job's steps);
//   "samples": the samples processed since the previous line (gpudoc adds them up);
//   "tokens":  the tokens processed since the previous line (gpudoc adds them up).
// Lines with an "event" key are events, not reports. A value that is not a finite number >= 0 is
// not counted (the caller notes it). Report the job's totals from one process (rank 0 of a
// distributed job, with the samples and tokens of every rank), or each rank its own share.
//
//   telemetry::WorkCounter w;
//   w.add(nlohmann::json::parse(R"({"step": 10, "samples": 256, "tokens": 524288})"));
//   w.work().tokens;   // 524288
#pragma once

#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpudoc::telemetry {

// The start of every line of the ::gpudoc metrics protocol (baseline/metrics_protocol.hpp).
inline constexpr std::string_view kMetricsPrefix = "::gpudoc ";

struct Work {
  std::optional<double> steps{};
  std::optional<double> samples{};
  std::optional<double> tokens{};
  [[nodiscard]] bool empty() const { return !steps && !samples && !tokens; }
  // Another run's work added (several runs of one workload: their steps add up too).
  void add(const Work& other);
};

// Whether `key` is one of the work keys ("step", "samples", "tokens").
[[nodiscard]] bool is_work_key(std::string_view key);

class WorkCounter {
 public:
  // One report: an object's work keys. Returns the keys whose value was not counted (not a
  // finite number >= 0), for the caller's notes.
  std::vector<std::string> add(const nlohmann::json& report);
  [[nodiscard]] const Work& work() const { return work_; }

 private:
  Work work_{};
};

[[nodiscard]] nlohmann::json to_json(const Work& w);

// A command's stdout lines gathered into the recorder's `step` events: each `::gpudoc` line that
// is a JSON object with a work key (and no "event" key) adds its work; take() returns what came
// since the previous take as one event's fields — "step" the largest, "samples" and "tokens"
// summed, "lines" the lines merged — so a job printing a line per step costs the trace at most
// one event per take, and the totals are those of the lines. Values refused (not a finite number
// >= 0) are counted in "refused". Thread-safe: the line tap's thread adds, the recorder takes.
//
//   telemetry::WorkLines w;
//   w.add_line(R"(::gpudoc {"step": 3, "samples": 64})");
//   w.take();   // {"step": 3, "samples": 64, "lines": 1}
class WorkLines {
 public:
  void add_line(std::string_view line);
  [[nodiscard]] std::optional<nlohmann::json> take();

 private:
  std::mutex mutex_;
  WorkCounter pending_;
  std::size_t lines_ = 0;
  std::size_t refused_ = 0;
};

}  // namespace gpudoc::telemetry
