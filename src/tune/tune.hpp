// gpudoc::tune — `gpudoc tune`: from "what is wrong" to "this change makes your job N % faster,
// measured". The job runs once unchanged (its GPUs recorded and diagnosed), then the changes the
// diagnosis points to (changes.hpp) are tried one layer at a time — process and OS, CUDA, NCCL, the
// framework through the Python shim — each against the job without it, in interleaved trials of a
// fixed amount of work (trial.hpp), judged by the gate's statistics and confirmed by a second
// block (measure.hpp). A change kept in one layer stays on for the next; when more than one is
// kept, the tuned job is measured against the unchanged one at the end. The whole pass keeps to a
// time budget, split between the layers before it starts. docs/tune.md explains the method.
//
//   tune::Request r{.command = {"python3", "train.py"}, .budget_s = 600};
//   tune::Env env;                 // the GPU backend, the stop signal, a private folder, the host reader
//   auto report = tune::run(r, env);                  // Result<Report>
//   nlohmann::json j = tune::to_json(*report);
//
// Nothing on the machine is changed: every change is an environment variable, the CPUs the job's
// process may use, or a patch the shim makes inside the job's own process. The job's files: its
// trials run where it was started, as it would (docs/tune.md, "What tune never changes").
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "baseline/workload_run.hpp"
#include "core/result.hpp"
#include "core/temp_dir.hpp"
#include "findings/finding.hpp"
#include "gpu/backend.hpp"
#include "health/host.hpp"
#include "tune/changes.hpp"
#include "tune/measure.hpp"
#include "tune/trial.hpp"

namespace gpudoc::tune {

inline constexpr double kDefaultBudgetS = 600;
inline constexpr std::size_t kDefaultSteps = 20;
inline constexpr std::size_t kDefaultWarmup = 3;
// A numerics-changing change (--allow-numerics) keeps the job's mean loss over its first steps
// within this share of the unchanged job's, or within 3 x the unchanged trials' own spread of it
// when that is larger (docs/tune.md).
inline constexpr double kLossTolerancePercent = 2.0;

struct Request {
  std::vector<std::string> command{};
  double budget_s = kDefaultBudgetS;
  std::size_t steps = kDefaultSteps;
  std::size_t warmup = kDefaultWarmup;
  std::optional<std::string> metric{};  // the figure to read; default: choose_figure's
  std::vector<std::string> only{};      // --only: these changes (ids or knobs), whatever the diagnosis says
  bool allow_numerics = false;
  double min_gain_percent = kDefaultMinGainPercent;
  std::string logs_dir{};  // --logs: keep every trial's output here
};

struct Env {
  gpu::Backend* backend = nullptr;  // null: no diagnosis (no_gpu_reason says why)
  core::Clock* clock = nullptr;
  std::string no_gpu_reason{};
  const baseline::StopSignal* stop = nullptr;
  core::PrivateDir* dir = nullptr;                      // every file of the pass
  health::HostReader* host = nullptr;                   // NUMA, governor, THP, sysctls; null: not read
  std::function<void(const std::string&)> on_progress;  // a line per trial, for a person
};

// The loss of a numerics-changing change's first steps against the unchanged job's.
struct LossCheck {
  std::size_t steps = 0;  // loss values compared per trial
  double control_mean = 0, candidate_mean = 0;
  double difference_percent = 0;
  double tolerance_percent = 0;
  bool within = false;
};

struct ArmResult {
  Change change{};
  std::vector<Trial> trials{};                               // first block, then the confirmation's
  std::optional<Judgement> first{};                          // the first block against the unchanged job
  std::optional<Judgement> overall{};                        // both blocks together, when confirmed
  std::optional<baseline::FigureComparison> confirmation{};  // the gate's final verdict after the second block
  std::optional<LossCheck> loss{};
  std::string outcome = "not run";  // kept, not kept, failed, not applicable, not run
  std::string reason{};             // why, in a sentence
  [[nodiscard]] bool kept() const { return outcome == "kept"; }
};

struct LayerResult {
  Layer layer = Layer::kProcess;
  std::vector<std::string> base{};  // ids of the changes on for this layer's reference (kept earlier)
  std::vector<Trial> reference{};   // the layer's job without its changes: first block and confirmations
  std::vector<ArmResult> arms{};
  double planned_s = 0;  // its share of the budget, planned before the first trial
  double spent_s = 0;
  std::string note{};  // what cut it short, when something did
};

struct DiagnosisSummary {
  bool diagnosed = false;
  std::string why_not{};
  std::vector<findings::Finding> findings{};  // most severe first
};

struct Budget {
  double budget_s = 0;
  double spent_s = 0;
  double plain_s = 0;          // the plain run (diagnosis)
  double final_planned_s = 0;  // the tuned job against the unchanged one
  double final_spent_s = 0;
  int repetitions = 0;          // trials per arm in a layer's first block
  int confirm_repetitions = 0;  // in a confirmation, per arm
};

struct Report {
  std::vector<std::string> command{};
  Work work{};
  Rules rules{};
  bool allow_numerics = false;
  Trial plain{};  // the unchanged job, recorded for the diagnosis
  DiagnosisSummary diagnosis{};
  std::vector<LayerResult> layers{};
  std::vector<NotTried> not_tried{};
  std::vector<Advice> advice{};
  std::vector<Change> kept{};
  std::optional<Judgement> overall{};  // the tuned job against the unchanged one
  std::string overall_from{};          // "final" (measured at the end) or the one kept change's id
  std::vector<Trial> final_trials{};
  std::vector<std::string> apply_lines{};
  Budget budget{};
  int trials = 0;
  std::optional<int> stopped_by{};
  int exit_code = 0;  // 0, or 128 + the stop signal
};

// Errors: kUsage (no command, a budget, step count or --only name out of range, a --metric with no
// known direction); kBadInput (the unchanged job fails, reports no figure and does not end within
// the budget, or never prints --metric); kIo (the private folder); the recorder's.
[[nodiscard]] core::Result<Report> run(const Request& request, const Env& env);

[[nodiscard]] nlohmann::json to_json(const Report& r);
[[nodiscard]] nlohmann::json to_json(const Trial& t);
[[nodiscard]] nlohmann::json to_json(const Judgement& j);

}  // namespace gpudoc::tune
