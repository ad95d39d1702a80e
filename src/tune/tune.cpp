#include "tune/tune.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <regex>
#include <set>

#include "baseline/config.hpp"
#include "core/numeric.hpp"
#include "core/temp_dir.hpp"
#include "diagnose/session.hpp"
#include "tune/evidence.hpp"
#include "tune/plan.hpp"
#include "tune/shim_source.hpp"

namespace gpudoc::tune {

namespace {

using SteadyClock = std::chrono::steady_clock;

// What stopping a trial's job adds to it (SIGTERM, the group gone), in the estimate of a trial.
constexpr double kStopS = 0.2;

// The plain run lasts at least this long past the job's first reported figure (when the budget
// allows), so that the diagnosis has a span of the job's steady work to read.
constexpr double kDiagnoseMinS = 15;

core::Status check_request(const Request& r) {
  if (r.command.empty())
    return core::Error(core::ErrorKind::kUsage, "give the job to tune after -- (gpudoc tune -- python3 train.py)");
  if (r.metric && baseline::default_rule(*r.metric, "").direction == baseline::Direction::kUnknown)
    return core::Error(core::ErrorKind::kUsage,
                       fmt::format("--metric {}: which way is better is not known for this name: name a time "
                                   "(*_ms, *_s) or a throughput (*_per_s)",
                                   *r.metric));
  const auto known = known_names();
  static const std::regex kOmp(R"(omp_threads_[0-9]+)");
  for (const auto& n : r.only)
    if (std::find(known.begin(), known.end(), n) == known.end() && !std::regex_match(n, kOmp))
      return core::Error(
          core::ErrorKind::kUsage,
          fmt::format("--only {}: no such change; the changes are {} (and omp_threads_N)", n, fmt::join(known, ", ")));
  return {};
}

// What a sample is, for a person: "step_ms", "(1 / samples_per_s)", "s per run".
std::string unit_words(const Work& w, const Trial& t) {
  if (w.detect)
    return t.figure ? unit_words(Work{.figure = t.figure->name, .higher_is_better = t.figure->higher_is_better}, t)
                    : "s per run";
  if (w.wall()) return "s per run";
  return w.higher_is_better ? "(1 / " + w.figure + ")" : w.figure;
}

// The arm a layer's changes are measured against: the job as it came, or with earlier layers' kept changes.
std::string reference_name(const std::vector<Change>& base) { return base.empty() ? "unchanged" : "reference"; }

std::string exit_words(const Trial& t) { return t.message.empty() ? std::string(to_string(t.status)) : t.message; }

class Tuner {
 public:
  Tuner(const Request& r, const Env& env) : req_(r), env_(env), start_(SteadyClock::now()) {
    report_.command = r.command;
    report_.rules.min_gain_percent = r.min_gain_percent;
    report_.allow_numerics = r.allow_numerics;
    report_.budget.budget_s = r.budget_s;
  }

  core::Result<Report> run() {
    if (auto st = write_shim(); !st) return st.error();
    if (auto st = plain_run(); !st) return st.error();
    if (stopped()) return finish();
    const Evidence evidence =
        gather_evidence(env_, req_.command, report_.plain, env_.dir->file("plain.jsonl"), report_.diagnosis);
    Picked picked = pick(evidence, {.only = req_.only});
    report_.not_tried = std::move(picked.not_tried);
    report_.advice = std::move(picked.advice);
    plan_ = make_plan(picked.changes, trial_estimate_s(), remaining_s());
    report_.budget.repetitions = plan_.repetitions;
    report_.budget.confirm_repetitions = plan_.confirm_repetitions;
    report_.budget.final_planned_s = plan_.final_s;
    for (auto& d : plan_.dropped) report_.not_tried.push_back(std::move(d));
    for (const auto& layer : plan_.layers) {
      if (stopped()) break;
      run_layer(layer);
    }
    if (!stopped()) final_check();
    return finish();
  }

 private:
  // ---- time ----
  [[nodiscard]] double elapsed_s() const { return std::chrono::duration<double>(SteadyClock::now() - start_).count(); }
  [[nodiscard]] double remaining_s() const { return req_.budget_s - elapsed_s(); }
  [[nodiscard]] bool stopped() const { return report_.stopped_by.has_value(); }

  // What one trial of this job takes: the trials so far of `arm` (else of every arm), else the
  // plain run's pace for a trial's samples.
  [[nodiscard]] double trial_estimate_s(const std::string& arm = "") const {
    // An arm's own last trial: after a first one that compiled, the later ones start from its caches.
    if (const auto it = walls_.find(arm); !arm.empty() && it != walls_.end() && !it->second.empty())
      return it->second.back();
    std::vector<double> walls;
    for (const auto& [a, w] : walls_)
      if (arm.empty() || a == arm) walls.insert(walls.end(), w.begin(), w.end());
    if (walls.empty() && !arm.empty()) return trial_estimate_s();
    if (!walls.empty()) return core::median(walls);
    const Trial& p = report_.plain;
    if (report_.work.wall() || !p.startup_s || p.figure_samples < 2) return p.wall_s;
    const double per_sample = (p.wall_s - *p.startup_s) / static_cast<double>(p.figure_samples - 1);
    return *p.startup_s + per_sample * static_cast<double>(req_.warmup + req_.steps) + kStopS;
  }

  // ---- trials ----
  core::Status write_shim() {
    shim_file_ = env_.dir->file("gpudoc_tune.py");
    auto fd = core::create_new_file(shim_file_);
    if (!fd) return fd.error().with_context("writing the shim");
    return core::write_all(fd->get(), kShimSource, "the shim");
  }

  // torch.compile's caches go to the private folder while trials compile (shared by them, removed
  // with it), not to the machine's /tmp/torchinductor_USER.
  void add_compile_caches(const std::vector<Change>& changes, Launch& launch) const {
    for (const auto& c : changes)
      for (const auto& p : c.patches)
        if (p.rfind("compile", 0) == 0) {
          launch.env.push_back("TORCHINDUCTOR_CACHE_DIR=" + env_.dir->file("torchinductor"));
          launch.env.push_back("TRITON_CACHE_DIR=" + env_.dir->file("triton"));
          return;
        }
  }

  TrialEnv trial_env() const {
    TrialEnv e;
    e.dir = env_.dir;
    e.stop = env_.stop;
    e.backend = env_.backend;
    e.clock = env_.clock;
    e.logs_dir = req_.logs_dir;
    return e;
  }

  // Runs one trial of `changes` unless the budget (less `reserve_s`) cannot hold it; nullopt then.
  core::Result<std::optional<Trial>> trial(const std::string& arm, const std::string& block,
                                           const std::vector<Change>& changes, double reserve_s) {
    double extra = 0;  // the changes' own start-up (a compile), until this arm has run once
    for (const auto& c : changes) extra += c.start_extra_s;
    const double estimate = trial_estimate_s(arm) + (walls_.count(arm) != 0 ? 0.0 : extra);
    const double left = remaining_s() - reserve_s;
    if (estimate > left) return std::optional<Trial>();
    TrialSpec spec{.arm = arm,
                   .block = block,
                   .number = ++report_.trials,
                   .launch = launch_with(req_.command, changes, shim_file_),
                   .work = report_.work};
    // A trial may run long (a compile, a slow start) but never past the budget's end and its 10 %.
    spec.timeout_s = std::max(
        1.0, std::min(std::max(3 * estimate, estimate + 20) + 3 * extra, remaining_s() + 0.05 * req_.budget_s));
    add_compile_caches(changes, spec.launch);
    auto t = run_trial(spec, trial_env());
    if (!t) return t.error();
    walls_[arm].push_back(t->wall_s);
    if (t->status == TrialStatus::kStopped) report_.stopped_by = env_.stop->signal.load();
    progress(*t);
    return std::optional<Trial>(std::move(*t));
  }

  void progress(const Trial& t) const {
    if (!env_.on_progress) return;
    const std::string what = t.ok()
                                 ? fmt::format("median {:.4g} {}", core::median(t.samples), unit_words(report_.work, t))
                                 : exit_words(t).substr(0, exit_words(t).find('\n'));
    env_.on_progress(fmt::format("trial {} ({}): {}: {} in {:.1f} s; {:.0f} of {:.0f} s spent", t.number, t.block,
                                 t.arm, what, t.wall_s, elapsed_s(), req_.budget_s));
  }

  core::Status plain_run();
  void run_layer(const PlannedLayer& planned);
  core::Status first_block(LayerResult& layer, std::vector<ArmResult*>& live, const std::vector<Change>& base);
  void judge_first(LayerResult& layer, ArmResult& arm);
  void confirm_arm(LayerResult& layer, ArmResult& arm, const std::vector<Change>& base);
  void final_check();
  core::Result<Report> finish();

  const Request& req_;
  const Env& env_;
  SteadyClock::time_point start_;
  Report report_;
  Plan plan_;
  std::string shim_file_;
  std::map<std::string, std::vector<double>> walls_;
  core::Status error_;
};

core::Status Tuner::plain_run() {
  report_.work = Work{.figure = "", .warmup = req_.warmup, .steps = req_.steps, .detect = true, .metric = req_.metric};
  // A Python program runs under the shim's `observe` patch, which changes nothing and says what the
  // job does with torch (its DataLoaders, the modules it moves to the GPU): what the framework's
  // changes can apply to.
  const bool observed = python_command(req_.command, nullptr).has_value();
  std::vector<Change> observe;
  if (observed)
    observe.push_back(Change{.id = "observe", .knob = "observe", .layer = Layer::kFramework, .patches = {"observe"}});
  TrialSpec spec{.arm = "unchanged",
                 .block = "plain",
                 .number = ++report_.trials,
                 .launch = launch_with(req_.command, observe, shim_file_),
                 .work = report_.work};
  spec.timeout_s = std::max(5.0, 0.4 * req_.budget_s);
  spec.min_run_s = std::min(kDiagnoseMinS, 0.15 * req_.budget_s);
  if (env_.backend != nullptr) spec.trace_path = env_.dir->file("plain.jsonl");
  auto t = run_trial(spec, trial_env());
  if (!t) return t.error().with_context("the plain run");
  report_.plain = std::move(*t);
  report_.plain.seen.observed = observed;
  report_.budget.plain_s = elapsed_s();
  progress(report_.plain);
  const Trial& p = report_.plain;
  if (p.status == TrialStatus::kStopped) {
    report_.stopped_by = env_.stop->signal.load();
    return {};
  }
  if (req_.metric && !p.figure)
    return core::Error(core::ErrorKind::kBadInput,
                       fmt::format("the job printed no `::gpudoc {{\"{}\": ...}}` line (--metric) in {:.0f} s",
                                   *req_.metric, p.wall_s));
  if (p.status == TrialStatus::kTimedOut && !p.figure)
    return core::Error(
        core::ErrorKind::kBadInput,
        fmt::format("the job printed no figure gpudoc reads (`::gpudoc {{\"step_ms\": ...}}`) and did not "
                    "end within {:.0f} s: tune needs a job that reports its steps, or one that ends by "
                    "itself well within the budget (its wall time is then the figure)",
                    spec.timeout_s));
  if (!p.ok() && p.status != TrialStatus::kTooFewSamples)
    return core::Error(
        core::ErrorKind::kBadInput,
        fmt::format("the job without any change failed ({}): tune measures a job that runs", exit_words(p)));
  report_.work.detect = false;
  report_.work.metric.reset();
  if (p.figure && p.status == TrialStatus::kOk) {
    report_.work.figure = p.figure->name;
    report_.work.higher_is_better = p.figure->higher_is_better;
  } else if (p.figure) {
    // It printed the figure but ended before the warm-up was over: its whole run is the unit.
    report_.plain.samples = {p.wall_s};
    report_.plain.status = TrialStatus::kOk;
  }
  return {};
}

// One layer: the first block (every change of the layer beside the job without them, interleaved),
// then a confirmation block for the best change of each knob that looked faster.
void Tuner::run_layer(const PlannedLayer& planned) {
  const auto layer_start = SteadyClock::now();
  LayerResult layer;
  layer.layer = planned.layer;
  layer.planned_s = planned.planned_s;
  for (const auto& k : report_.kept) layer.base.push_back(k.id);
  for (const auto& c : planned.changes) layer.arms.push_back(ArmResult{.change = c});
  std::vector<ArmResult*> live;
  for (auto& a : layer.arms) live.push_back(&a);
  if (auto st = first_block(layer, live, report_.kept); !st) {
    error_ = st;
    report_.layers.push_back(std::move(layer));
    return;
  }
  for (auto* a : live) judge_first(layer, *a);
  // The best candidate of each knob goes on to its confirmation, fastest first.
  std::map<std::string, ArmResult*> best;
  for (auto& a : layer.arms)
    if (a.outcome == "to confirm" &&
        (best.count(a.change.knob) == 0 || a.first->speedup_percent > best[a.change.knob]->first->speedup_percent))
      best[a.change.knob] = &a;
  for (auto& a : layer.arms)
    if (a.outcome == "to confirm" && best[a.change.knob] != &a) {
      a.outcome = "not kept";
      a.reason = fmt::format("{} of the same knob was faster", best[a.change.knob]->change.id);
    }
  std::vector<ArmResult*> order;
  for (auto& [k, a] : best) order.push_back(a);
  std::sort(order.begin(), order.end(), [](const ArmResult* x, const ArmResult* y) {
    return x->first->speedup_percent > y->first->speedup_percent;
  });
  const std::vector<Change> base = report_.kept;
  for (auto* a : order) {
    if (stopped() || !error_) break;
    confirm_arm(layer, *a, base);
  }
  for (auto& a : layer.arms)
    if (a.kept()) report_.kept.push_back(a.change);
  layer.spent_s = std::chrono::duration<double>(SteadyClock::now() - layer_start).count();
  report_.layers.push_back(std::move(layer));
}

core::Status Tuner::first_block(LayerResult& layer, std::vector<ArmResult*>& live, const std::vector<Change>& base) {
  const std::string block(to_string(layer.layer));
  for (int rep = 0; rep < plan_.repetitions && !live.empty(); ++rep) {
    // The reference and each change take turns; the order turns by one each repetition, so a drift
    // of the machine favours none of them.
    const std::size_t n = live.size() + 1;
    for (std::size_t i = 0; i < n && !stopped(); ++i) {
      const std::size_t slot = (i + static_cast<std::size_t>(rep)) % n;
      ArmResult* arm = slot == 0 ? nullptr : live[slot - 1];
      std::vector<Change> changes = base;
      if (arm != nullptr) {
        if (arm->outcome == "failed" || arm->outcome == "not applicable") continue;
        changes.push_back(arm->change);
      }
      auto t = trial(arm == nullptr ? reference_name(base) : arm->change.id, block, changes,
                     plan_.reserve_after(layer.layer));
      if (!t) return t.error();
      if (!*t) {
        layer.note = "the budget ran out during the first block";
        return {};
      }
      Trial& got = **t;
      if (arm == nullptr) {
        layer.reference.push_back(std::move(got));
        continue;
      }
      if (!got.ok() && got.status != TrialStatus::kStopped) {
        arm->outcome = "failed";
        arm->reason = fmt::format("trial {} {}: {}", got.number, to_string(got.status), exit_words(got));
      } else if (!arm->change.patches.empty() && got.patches_applied.empty() && got.ok()) {
        arm->outcome = "not applicable";
        arm->reason = got.shim_notes.empty()
                          ? "the shim's patches changed nothing in this job"
                          : "the shim's patches changed nothing: " + fmt::format("{}", fmt::join(got.shim_notes, "; "));
      }
      arm->trials.push_back(std::move(got));
    }
  }
  live.erase(std::remove_if(live.begin(), live.end(),
                            [](ArmResult* a) { return a->outcome == "failed" || a->outcome == "not applicable"; }),
             live.end());
  return {};
}

Groups samples_of(const std::vector<Trial>& trials, const std::string& block_prefix = "") {
  Groups g;
  for (const auto& t : trials)
    if (t.ok() && !t.samples.empty() && (block_prefix.empty() || t.block.rfind(block_prefix, 0) == 0))
      g.push_back(t.samples);
  return g;
}

std::optional<LossCheck> loss_check(const std::vector<Trial>& reference, const std::vector<Trial>& candidate) {
  std::size_t n = SIZE_MAX;
  for (const auto* set : {&reference, &candidate})
    for (const auto& t : *set)
      if (t.ok()) n = std::min(n, t.loss.size());
  if (n == SIZE_MAX || n == 0) return std::nullopt;
  auto means = [n](const std::vector<Trial>& trials) {
    std::vector<double> m;
    for (const auto& t : trials)
      if (t.ok()) {
        double s = 0;
        for (std::size_t i = 0; i < n; ++i) s += t.loss[i];
        m.push_back(s / static_cast<double>(n));
      }
    return m;
  };
  const auto rm = means(reference), cm = means(candidate);
  if (rm.empty() || cm.empty()) return std::nullopt;
  LossCheck l;
  l.steps = n;
  for (double v : rm) l.control_mean += v / static_cast<double>(rm.size());
  for (double v : cm) l.candidate_mean += v / static_cast<double>(cm.size());
  if (l.control_mean == 0) return std::nullopt;
  l.difference_percent = (l.candidate_mean - l.control_mean) / std::fabs(l.control_mean) * 100.0;
  l.tolerance_percent =
      std::max(kLossTolerancePercent, 3 * baseline::standard_deviation(rm) / std::fabs(l.control_mean) * 100.0);
  l.within = std::fabs(l.difference_percent) <= l.tolerance_percent;
  return l;
}

// Why a change the first block did not find faster is not kept: its measurement and the rule it missed.
std::string first_block_reason(const Judgement& j, double min_gain) {
  const std::string measured =
      fmt::format("{:+.1f} % [{}]", j.speedup_percent,
                  j.interval ? fmt::format("{:+.1f}, {:+.1f}", j.interval->low_percent, j.interval->high_percent)
                             : std::string("no interval"));
  if (j.slower) return "slower: " + measured;
  if (j.speedup_percent <= 0) return "no gain: " + measured;
  if (j.speedup_percent < min_gain) return fmt::format("{}, below the {:g} % worth keeping", measured, min_gain);
  if (!j.faster) return measured + ", not told from the noise (" + j.comparison.note + ")";
  return measured + ": the interval holds 0";
}

void Tuner::judge_first(LayerResult& layer, ArmResult& arm) {
  if (arm.outcome == "failed" || arm.outcome == "not applicable") return;  // said when its trial ended
  const Groups ref = samples_of(layer.reference), cand = samples_of(arm.trials);
  if (ref.empty() || cand.empty()) {
    arm.outcome = "not run";
    arm.reason = ref.empty() ? "no trial of the job without it succeeded" : "the budget left no trial for it";
    return;
  }
  arm.first = judge(ref, cand, report_.rules);
  const Judgement& j = *arm.first;
  const bool faster = j.faster && j.interval && j.interval->low_percent > 0;
  if (!faster) {
    arm.outcome = "not kept";
    arm.reason = first_block_reason(j, report_.rules.min_gain_percent);
    return;
  }
  if (arm.change.numerics && !req_.allow_numerics) {
    arm.outcome = "not kept";
    arm.reason =
        fmt::format("{:+.1f} % faster, but it may change results: kept only with --allow-numerics", j.speedup_percent);
    return;
  }
  arm.outcome = "to confirm";
}

void Tuner::confirm_arm(LayerResult& layer, ArmResult& arm, const std::vector<Change>& base) {
  const std::string block = std::string("confirm ") + to_string(layer.layer);
  std::vector<Change> with = base;
  with.push_back(arm.change);
  for (int rep = 0; rep < plan_.confirm_repetitions && !stopped(); ++rep)
    for (int side = 0; side < 2; ++side) {
      const bool candidate = (side + rep) % 2 == 0;  // the change first, then the reference, then turns
      auto t = trial(candidate ? arm.change.id : reference_name(base), block, candidate ? with : base,
                     plan_.reserve_after(layer.layer));
      if (!t) {
        error_ = t.error();
        return;
      }
      if (!*t) {
        arm.outcome = "not kept";
        arm.reason = "looked faster, but the budget ran out before its confirmation";
        return;
      }
      if (candidate && !(*t)->ok() && (*t)->status != TrialStatus::kStopped) {
        arm.outcome = "failed";
        arm.reason = fmt::format("trial {} {}: {}", (*t)->number, to_string((*t)->status), exit_words(**t));
        arm.trials.push_back(std::move(**t));
        return;
      }
      (candidate ? arm.trials : layer.reference).push_back(std::move(**t));
    }
  if (stopped()) return;
  const Groups ref2 = samples_of(layer.reference, "confirm"), cand2 = samples_of(arm.trials, "confirm");
  if (ref2.empty() || cand2.empty()) {
    arm.outcome = "not kept";
    arm.reason = "its confirmation has no successful trial on one side";
    return;
  }
  const Judgement second = judge(ref2, cand2, report_.rules);
  arm.confirmation = confirm(*arm.first, second);
  arm.overall = judge(samples_of(layer.reference), samples_of(arm.trials), report_.rules);
  const Judgement& o = *arm.overall;
  if (arm.change.numerics) arm.loss = loss_check(layer.reference, arm.trials);
  if (!arm.confirmation->confirmed) {
    arm.outcome = "not kept";
    arm.reason = fmt::format("not confirmed: the second block measured {:+.1f} % ({})", second.speedup_percent,
                             second.comparison.note);
  } else if (!o.interval || o.interval->low_percent <= 0 || o.speedup_percent < report_.rules.min_gain_percent) {
    arm.outcome = "not kept";
    arm.reason = fmt::format("confirmed, but both blocks together give {:+.1f} % [{:+.1f}, {:+.1f}]", o.speedup_percent,
                             o.interval ? o.interval->low_percent : 0.0, o.interval ? o.interval->high_percent : 0.0);
  } else if (arm.change.numerics && !arm.loss) {
    arm.outcome = "not kept";
    arm.reason = "it may change results and the job reports no loss (`::gpudoc {\"loss\": ...}`) to compare";
  } else if (arm.change.numerics && !arm.loss->within) {
    arm.outcome = "not kept";
    arm.reason = fmt::format("the mean loss of the first {} steps moved {:+.2f} % (more than {:.2f} %)",
                             arm.loss->steps, arm.loss->difference_percent, arm.loss->tolerance_percent);
  } else {
    arm.outcome = "kept";
    arm.reason = fmt::format("{:+.1f} % [{:+.1f}, {:+.1f}] over {} trials beside {}, confirmed by a second block",
                             o.speedup_percent, o.interval->low_percent, o.interval->high_percent, o.candidate_trials,
                             o.control_trials);
  }
}

// With two or more changes kept, the tuned job against the unchanged one: the speed-up the report
// heads with. With one, that change's own measurement against the unchanged job is it.
void Tuner::final_check() {
  if (report_.kept.size() == 1) {
    for (const auto& l : report_.layers)
      for (const auto& a : l.arms)
        if (a.kept()) {
          report_.overall = a.overall;
          report_.overall_from = a.change.id;
        }
    return;
  }
  if (report_.kept.size() < 2) return;
  const auto t0 = SteadyClock::now();
  for (int rep = 0; rep < plan_.confirm_repetitions + 1 && !stopped(); ++rep)
    for (int side = 0; side < 2; ++side) {
      const bool tuned = (side + rep) % 2 == 0;
      auto t = trial(tuned ? "tuned" : "unchanged", "final", tuned ? report_.kept : std::vector<Change>{}, 0);
      if (!t) {
        error_ = t.error();
        return;
      }
      if (!*t) break;
      report_.final_trials.push_back(std::move(**t));
    }
  report_.budget.final_spent_s = std::chrono::duration<double>(SteadyClock::now() - t0).count();
  std::vector<Trial> unchanged, tuned;
  for (const auto& t : report_.final_trials) (t.arm == "tuned" ? tuned : unchanged).push_back(t);
  const Groups u = samples_of(unchanged), x = samples_of(tuned);
  if (!u.empty() && !x.empty()) {
    report_.overall = judge(u, x, report_.rules);
    report_.overall_from = "final";
  }
}

core::Result<Report> Tuner::finish() {
  if (!error_) return error_.error();
  report_.apply_lines = apply_lines(req_.command, report_.kept);
  report_.budget.spent_s = elapsed_s();
  if (report_.stopped_by) report_.exit_code = core::exit_code_for_signal(*report_.stopped_by);
  return std::move(report_);
}

}  // namespace

core::Result<Report> run(const Request& request, const Env& env) {
  if (auto st = check_request(request); !st) return st.error();
  if (request.budget_s <= 0 || request.steps == 0)
    return core::Error(core::ErrorKind::kUsage, "--budget and --steps must be more than 0");
  Tuner t(request, env);
  return t.run();
}

}  // namespace gpudoc::tune
