#include "tune/trial.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>

#include "baseline/config.hpp"
#include "core/file.hpp"
#include "core/process.hpp"

namespace gpudoc::tune {

namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr std::array<const char*, 6> kTimeNames = {"step_ms", "step_s",   "iteration_ms",
                                                   "iter_ms", "batch_ms", "step_time_ms"};
constexpr std::array<const char*, 5> kRateNames = {"samples_per_s", "tokens_per_s", "images_per_s", "items_per_s",
                                                   "throughput"};

// The end of a file: at most `bytes` from its end (a chatty job's log may be large).
std::string tail_of_file(const std::string& path, std::size_t bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return {};
  const off_t size = ::lseek(fd, 0, SEEK_END);
  const off_t from = size > static_cast<off_t>(bytes) ? size - static_cast<off_t>(bytes) : 0;
  std::string out;
  if (size > 0 && ::lseek(fd, from, SEEK_SET) == from) {
    out.resize(static_cast<std::size_t>(size - from));
    std::size_t got = 0;
    while (got < out.size()) {
      const ssize_t n = ::read(fd, out.data() + got, out.size() - got);
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    out.resize(got);
  }
  ::close(fd);
  return out;
}

std::string exit_text(int code) {
  if (code > 128 && code < 128 + 65) return fmt::format("killed by {}", core::signal_name(code - 128));
  return fmt::format("exit {}", code);
}

std::string file_safe(std::string_view s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-' ? c : '_';
  return out.substr(0, 60);
}

// One thing the shim's `observe` patch saw.
void add_seen(const nlohmann::json& j, ShimSeen& seen) {
  const std::string kind = j.value("seen", std::string());
  seen.observed = true;
  if (kind == "torch") {
    seen.torch = true;
    seen.torch_version = j.value("version", std::string());
    seen.compile = j.value("compile", false);
  } else if (kind == "dataloader") {
    seen.pinned = (seen.dataloaders == 0 || seen.pinned) && j.value("pin_memory", false);
    ++seen.dataloaders;
    if (j.value("iterable", false)) ++seen.iterable_loaders;
    seen.max_workers = std::max(seen.max_workers, j.value("num_workers", 0));
  } else if (kind == "module") {
    ++seen.cuda_modules;
    if (j.value("convs", 0) > 0) ++seen.conv_modules;
  }
}

// What the shim wrote (python/gpudoc/tune.py): one JSON object a line, {"patch", "applied", "detail"}.
void read_shim_report(const std::string& path, Trial& t) {
  auto text = core::read_file(path, {.max_bytes = 1 << 20, .what = "the shim's report"});
  if (!text) return;
  std::set<std::string> applied, notes;
  std::size_t start = 0;
  while (start < text->size()) {
    std::size_t end = text->find('\n', start);
    if (end == std::string::npos) end = text->size();
    auto j = nlohmann::json::parse(text->substr(start, end - start), nullptr, false);
    start = end + 1;
    if (j.is_object() && j.contains("seen")) {
      add_seen(j, t.seen);
      continue;
    }
    if (!j.is_object() || !j.contains("patch")) continue;
    const std::string patch = j.value("patch", std::string());
    const std::string detail = j.value("detail", std::string());
    if (j.value("applied", false)) applied.insert(patch);
    if (!detail.empty() && notes.size() < 12) notes.insert(patch + ": " + detail);
  }
  t.patches_applied.assign(applied.begin(), applied.end());
  t.shim_notes.assign(notes.begin(), notes.end());
}

// When the trial has done its work: the figure's samples, and for the plain run its minimum time.
struct Progress {
  std::optional<Figure> figure;
  std::optional<double> first_sample_s;  // written on the reader thread, read after it is joined
};

std::function<bool(const baseline::MetricsCollector&)> enough_of(const TrialSpec& spec,
                                                                 const std::shared_ptr<Progress>& p,
                                                                 SteadyClock::time_point t0) {
  if (spec.work.wall()) return {};
  const std::size_t need = spec.work.warmup + spec.work.steps;
  const Work work = spec.work;
  const double min_run_s = spec.min_run_s;
  return [p, need, work, min_run_s, t0](const baseline::MetricsCollector& m) {
    if (!p->figure)
      p->figure = work.detect ? choose_figure(m.figures(), work.metric)
                              : std::optional<Figure>(Figure{work.figure, work.higher_is_better});
    if (!p->figure) return false;
    const auto it = m.figures().find(p->figure->name);
    if (it == m.figures().end() || it->second.empty()) return false;
    const double elapsed = std::chrono::duration<double>(SteadyClock::now() - t0).count();
    if (!p->first_sample_s) p->first_sample_s = elapsed;
    return it->second.size() >= need && elapsed - *p->first_sample_s >= min_run_s;
  };
}

// The samples, status and message of a finished run.
void judge_run(const TrialSpec& spec, const baseline::WorkloadRun& run, const std::optional<Figure>& figure, Trial& t) {
  const auto& figures = run.metrics.figures();
  if (const auto it = figures.find("loss"); it != figures.end()) t.loss = it->second;
  t.figure = figure;
  if (figure) {
    const auto it = figures.find(figure->name);
    const std::vector<double> none;
    const std::vector<double>& v = it == figures.end() ? none : it->second;
    t.figure_samples = v.size();
    const std::size_t end = std::min(v.size(), spec.work.warmup + spec.work.steps);
    for (std::size_t i = spec.work.warmup; i < end; ++i) {
      if (!std::isfinite(v[i]) || v[i] < 0 || (figure->higher_is_better && v[i] <= 0)) continue;
      t.samples.push_back(figure->higher_is_better ? 1.0 / v[i] : v[i]);
    }
  }
  if (run.stopped_by) {
    t.status = TrialStatus::kStopped;
    t.message = fmt::format("stopped by {}", core::signal_name(*run.stopped_by));
  } else if (run.work_done) {
    t.status = TrialStatus::kOk;
  } else if (run.timed_out) {
    t.status = TrialStatus::kTimedOut;
    t.message = fmt::format("did not finish its work within {:.0f} s (stopped)", spec.timeout_s);
  } else if (run.exit_code != 0) {
    t.status = TrialStatus::kFailed;
    t.message = exit_text(run.exit_code);
  } else if (!figure) {
    t.samples = {run.wall_s};  // no figure: the whole run is the unit of work
  } else if (t.samples.empty()) {
    t.status = TrialStatus::kTooFewSamples;
    t.message = fmt::format("ended by itself after {} sample{} of {}, no more than the {} left out as warm-up",
                            t.figure_samples, t.figure_samples == 1 ? "" : "s", figure->name, spec.work.warmup);
  }
}

}  // namespace

std::optional<Figure> choose_figure(const std::map<std::string, std::vector<double>>& figures,
                                    const std::optional<std::string>& metric) {
  auto as_figure = [](const std::string& name) {
    const auto rule = baseline::default_rule(name, "");
    return Figure{name, rule.direction == baseline::Direction::kHigherIsBetter};
  };
  if (metric) {
    if (figures.count(*metric) == 0) return std::nullopt;
    return as_figure(*metric);
  }
  for (const char* n : kTimeNames)
    if (figures.count(n) != 0) return Figure{n, false};
  for (const char* n : kRateNames)
    if (figures.count(n) != 0) return Figure{n, true};
  return std::nullopt;
}

const char* to_string(TrialStatus s) noexcept {
  switch (s) {
    case TrialStatus::kOk: return "ok";
    case TrialStatus::kFailed: return "failed";
    case TrialStatus::kOutOfMemory: return "out of memory";
    case TrialStatus::kTimedOut: return "timed out";
    case TrialStatus::kTooFewSamples: return "too few samples";
    case TrialStatus::kStopped: return "stopped";
  }
  return "?";
}

bool mentions_out_of_memory(std::string_view output) {
  std::string lower(output);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.find("out of memory") != std::string::npos || lower.find("outofmemoryerror") != std::string::npos ||
         lower.find("cublas_status_alloc_failed") != std::string::npos;
}

std::string last_lines(std::string_view output, std::size_t lines) {
  std::vector<std::string_view> all;
  std::size_t pos = 0;
  while (pos < output.size()) {
    std::size_t end = output.find('\n', pos);
    if (end == std::string_view::npos) end = output.size();
    std::string_view line = output.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty()) all.push_back(line.substr(0, 300));
    pos = end + 1;
  }
  std::string out;
  for (std::size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i)
    out += (out.empty() ? "" : "\n") + std::string(all[i]);
  return out;
}

core::Result<Trial> run_trial(const TrialSpec& spec, const TrialEnv& env) {
  Trial t;
  t.arm = spec.arm;
  t.block = spec.block;
  t.number = spec.number;
  const std::string log_path =
      env.logs_dir.empty() ? env.dir->file(fmt::format("trial-{:03}.log", spec.number))
                           : fmt::format("{}/trial-{:03}-{}.log", env.logs_dir, spec.number, file_safe(spec.arm));
  auto log = core::create_new_file(log_path);
  if (!log) return log.error().with_context("the trial's log");
  const std::string report_path = env.dir->file(fmt::format("shim-{:03}.jsonl", spec.number));
  if (auto made = core::create_new_file(report_path); !made) return made.error().with_context("the shim's report");

  baseline::WorkloadOptions o;
  o.extra_env = spec.launch.env;
  o.extra_env.push_back("GPUDOC_TUNE_REPORT=" + report_path);
  o.extra_env.push_back(fmt::format("GPUDOC_TUNE_TRIAL={}", spec.number));
  o.cpu_affinity = spec.launch.cpus;
  o.echo_fd = log->get();
  o.stderr_fd = log->get();
  o.timeout_s = spec.timeout_s;
  o.stop = env.stop;
  o.stop_grace = env.stop_grace;
  if (!spec.trace_path.empty()) {
    o.backend = env.backend;
    o.clock = env.clock;
    o.trace_path = spec.trace_path;
  }
  auto progress = std::make_shared<Progress>();
  const auto t0 = SteadyClock::now();
  o.enough = enough_of(spec, progress, t0);
  auto run = baseline::run_workload(spec.launch.argv, o);
  *log = core::UniqueFd();
  const std::string output = tail_of_file(log_path, 64 << 10);
  if (env.logs_dir.empty())
    std::remove(log_path.c_str());
  else
    t.log_path = log_path;
  if (!run) {
    if (run.error().kind() != core::ErrorKind::kBadInput && run.error().kind() != core::ErrorKind::kEnvironment)
      return run.error();
    t.status = TrialStatus::kFailed;
    t.message = run.error().message();
    return t;
  }
  t.exit_code = run->exit_code;
  t.wall_s = run->wall_s;
  t.startup_s = progress->first_sample_s;
  read_shim_report(report_path, t);
  std::remove(report_path.c_str());
  std::optional<Figure> figure;
  if (spec.work.detect)
    figure = progress->figure;
  else if (!spec.work.wall())
    figure = Figure{spec.work.figure, spec.work.higher_is_better};
  judge_run(spec, *run, figure, t);
  if (t.status == TrialStatus::kFailed && mentions_out_of_memory(output)) t.status = TrialStatus::kOutOfMemory;
  if (!t.ok() && t.status != TrialStatus::kStopped) {
    const std::string tail = last_lines(output, 6);
    if (!tail.empty()) t.message += "; its output ended with:\n" + tail;
  }
  return t;
}

}  // namespace gpudoc::tune
