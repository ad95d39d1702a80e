// The tune report as JSON (tune.hpp): every trial, every judgement, what was kept and the lines to
// apply. docs/tune.md documents the schema ("gpudoc.tune/1").
#include <cmath>

#include "core/numeric.hpp"

#include "findings/finding.hpp"
#include "tune/tune.hpp"

namespace gpudoc::tune {

namespace {

nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json change_json(const Change& c) {
  return {{"id", c.id},     {"knob", c.knob},        {"layer", to_string(c.layer)}, {"env", c.env},
          {"cpus", c.cpus}, {"patches", c.patches},  {"numerics", c.numerics},      {"what", c.what},
          {"why", c.why},   {"priority", c.priority}};
}

nlohmann::json trials_json(const std::vector<Trial>& trials) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& t : trials) a.push_back(to_json(t));
  return a;
}

nlohmann::json arm_json(const ArmResult& a) {
  nlohmann::json j = {{"change", change_json(a.change)},
                      {"outcome", a.outcome},
                      {"kept", a.kept()},
                      {"reason", a.reason},
                      {"first", a.first ? to_json(*a.first) : nlohmann::json(nullptr)},
                      {"overall", a.overall ? to_json(*a.overall) : nlohmann::json(nullptr)},
                      {"confirmation", a.confirmation ? baseline::to_json(*a.confirmation) : nlohmann::json(nullptr)},
                      {"trials", trials_json(a.trials)}};
  if (a.loss)
    j["loss"] = {{"steps", a.loss->steps},
                 {"unchanged_mean", a.loss->control_mean},
                 {"changed_mean", a.loss->candidate_mean},
                 {"difference_percent", a.loss->difference_percent},
                 {"tolerance_percent", a.loss->tolerance_percent},
                 {"within", a.loss->within}};
  else
    j["loss"] = nullptr;
  return j;
}

nlohmann::json layer_json(const LayerResult& l) {
  nlohmann::json arms = nlohmann::json::array();
  for (const auto& a : l.arms) arms.push_back(arm_json(a));
  return {{"layer", to_string(l.layer)},
          {"title", std::string(layer_title(l.layer))},
          {"base", l.base},
          {"planned_s", l.planned_s},
          {"spent_s", l.spent_s},
          {"note", l.note},
          {"reference", trials_json(l.reference)},
          {"arms", arms}};
}

}  // namespace

nlohmann::json seen_json(const ShimSeen& s) {
  if (!s.observed) return nullptr;
  return {{"torch", s.torch},
          {"torch_version", s.torch_version},
          {"compile", s.compile},
          {"dataloaders", s.dataloaders},
          {"iterable_dataloaders", s.iterable_loaders},
          {"max_workers", s.max_workers},
          {"pinned", s.pinned},
          {"cuda_modules", s.cuda_modules},
          {"conv_modules", s.conv_modules}};
}

nlohmann::json to_json(const Trial& t) {
  return {{"number", t.number},
          {"arm", t.arm},
          {"block", t.block},
          {"status", to_string(t.status)},
          {"exit_code", t.exit_code},
          {"wall_s", t.wall_s},
          {"startup_s", t.startup_s ? nlohmann::json(*t.startup_s) : nlohmann::json(nullptr)},
          {"figure_samples", t.figure_samples},
          {"median", t.samples.empty() ? nlohmann::json(nullptr) : number_or_null(core::median(t.samples))},
          {"samples", t.samples},
          {"loss", t.loss},
          {"patches_applied", t.patches_applied},
          {"shim_notes", t.shim_notes},
          {"seen", seen_json(t.seen)},
          {"message", t.message},
          {"log", t.log_path}};
}

nlohmann::json to_json(const Judgement& j) {
  nlohmann::json interval = nullptr;
  if (j.interval)
    interval = {{"low_percent", j.interval->low_percent},
                {"high_percent", j.interval->high_percent},
                {"level", j.interval->level},
                {"resamples", j.interval->resamples}};
  return {{"speedup_percent", number_or_null(j.speedup_percent)},
          {"interval", interval},
          {"faster", j.faster},
          {"slower", j.slower},
          {"unchanged_trials", j.control_trials},
          {"changed_trials", j.candidate_trials},
          {"unchanged_samples", j.control_samples},
          {"changed_samples", j.candidate_samples},
          {"unchanged_median", number_or_null(j.control_median)},
          {"changed_median", number_or_null(j.candidate_median)},
          {"unchanged_trial_noise_percent", j.control_trial_noise_percent},
          {"unchanged_sample_noise_percent", j.control_sample_noise_percent},
          {"gate", baseline::to_json(j.comparison)}};
}

nlohmann::json to_json(const Report& r) {
  nlohmann::json layers = nlohmann::json::array(), kept = nlohmann::json::array(), not_tried = nlohmann::json::array(),
                 advice = nlohmann::json::array(), found = nlohmann::json::array();
  for (const auto& l : r.layers) layers.push_back(layer_json(l));
  for (const auto& c : r.kept) kept.push_back(change_json(c));
  for (const auto& n : r.not_tried) not_tried.push_back({{"id", n.id}, {"layer", to_string(n.layer)}, {"why", n.why}});
  for (const auto& a : r.advice)
    advice.push_back({{"id", a.id}, {"title", a.title}, {"current", a.current}, {"advice", a.advice}, {"why", a.why}});
  for (const auto& f : r.diagnosis.findings)
    found.push_back({{"id", f.id}, {"severity", findings::to_string(f.severity)}, {"message", f.message}});
  return {{"schema", "gpudoc.tune/1"},
          {"command", r.command},
          {"work",
           {{"figure", r.work.wall() ? nlohmann::json(nullptr) : nlohmann::json(r.work.figure)},
            {"measure", r.work.wall() ? "wall time of the whole run" : "the figure's samples after the warm-up"},
            {"higher_is_better", r.work.higher_is_better},
            {"warmup", r.work.warmup},
            {"steps", r.work.steps}}},
          {"rules",
           {{"min_gain_percent", r.rules.min_gain_percent},
            {"alpha", r.rules.alpha},
            {"interval_level", r.rules.level},
            {"allow_numerics", r.allow_numerics}}},
          {"plain", to_json(r.plain)},
          {"diagnosis", {{"diagnosed", r.diagnosis.diagnosed}, {"why_not", r.diagnosis.why_not}, {"findings", found}}},
          {"layers", layers},
          {"kept", kept},
          {"overall", r.overall ? to_json(*r.overall) : nlohmann::json(nullptr)},
          {"overall_from", r.overall_from},
          {"final_trials", trials_json(r.final_trials)},
          {"apply", r.apply_lines},
          {"not_tried", not_tried},
          {"advice", advice},
          {"budget",
           {{"budget_s", r.budget.budget_s},
            {"spent_s", r.budget.spent_s},
            {"plain_s", r.budget.plain_s},
            {"final_planned_s", r.budget.final_planned_s},
            {"final_spent_s", r.budget.final_spent_s},
            {"repetitions", r.budget.repetitions},
            {"confirm_repetitions", r.budget.confirm_repetitions}}},
          {"trials", r.trials},
          {"stopped_by", r.stopped_by ? nlohmann::json(*r.stopped_by) : nlohmann::json(nullptr)},
          {"exit_code", r.exit_code}};
}

}  // namespace gpudoc::tune
