#include "baseline/collect.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdio>

#include "baseline/gpu_figures.hpp"
#include "baseline/probe_script.hpp"
#include "baseline/run_cost.hpp"
#include "bench/engine.hpp"
#include "bench/registry.hpp"
#include "bench/run.hpp"
#include "core/host.hpp"
#include "core/temp_dir.hpp"
#include "core/utf8.hpp"

namespace gpudoc::baseline {

namespace {

std::string hex_of(std::string_view s) {
  std::string out;
  for (unsigned char c : s) out += fmt::format("{:02x}", c);
  return out;
}

std::optional<std::string> from_hex(const std::string& h) {
  if (h.size() % 2 != 0) return std::nullopt;
  std::string out;
  for (std::size_t i = 0; i < h.size(); i += 2) {
    unsigned v = 0;
    for (char c : h.substr(i, 2)) {
      v <<= 4;
      if (c >= '0' && c <= '9')
        v |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f')
        v |= static_cast<unsigned>(c - 'a' + 10);
      else
        return std::nullopt;
    }
    out += static_cast<char>(v);
  }
  return out;
}

bool any_invalid_utf8(const std::vector<std::string>& words) {
  return std::any_of(words.begin(), words.end(), [](const std::string& w) { return !core::is_valid_utf8(w); });
}

}  // namespace

nlohmann::json to_json(const CollectSpec& s) {
  nlohmann::json command = nlohmann::json::array();
  for (const auto& a : s.command) command.push_back(core::to_valid_utf8(a));
  nlohmann::json j = {{"bench", s.bench},   {"bench_keys", s.bench_keys}, {"bench_mode", s.bench_mode},
                      {"device", s.device}, {"probe", s.probe},           {"command", command},
                      {"repeat", s.repeat}, {"timeout_s", s.timeout_s}};
  if (s.check_repeat > 0) j["check_repeat"] = s.check_repeat;
  if (any_invalid_utf8(s.command)) {
    nlohmann::json hex = nlohmann::json::array();
    for (const auto& a : s.command) hex.push_back(hex_of(a));
    j["command_hex"] = hex;  // the exact bytes, for the check to run the same command
  }
  return j;
}

core::Result<CollectSpec> spec_from_json(const nlohmann::json& j) {
  CollectSpec s;
  if (!j.is_object())
    return core::Error(core::ErrorKind::kBadInput, "the stored run specification is not a JSON object");
  try {
    s.bench = j.value("bench", false);
    if (j.contains("bench_keys") && j["bench_keys"].is_array())
      s.bench_keys = j["bench_keys"].get<std::vector<std::string>>();
    s.bench_mode = j.value("bench_mode", std::string("quick"));
    s.device = j.value("device", 0);
    s.probe = j.value("probe", false);
    if (j.contains("command") && j["command"].is_array()) s.command = j["command"].get<std::vector<std::string>>();
    s.repeat = std::max(1, j.value("repeat", 1));
    s.check_repeat = std::max(0, j.value("check_repeat", 0));
    s.timeout_s = j.value("timeout_s", 0.0);
  } catch (const nlohmann::json::exception& e) {
    return core::Error(core::ErrorKind::kBadInput,
                       fmt::format("the stored run specification is damaged ({})", e.what()));
  }
  if (j.contains("command_hex") && j["command_hex"].is_array() && j["command_hex"].size() == s.command.size()) {
    std::vector<std::string> exact;
    for (const auto& h : j["command_hex"])
      if (auto bytes = h.is_string() ? from_hex(h.get<std::string>()) : std::nullopt) exact.push_back(*bytes);
    if (exact.size() == s.command.size()) s.command = std::move(exact);
  }
  return s;
}

std::string kinds_of(const CollectSpec& s) {
  std::vector<std::string> k;
  if (s.bench) k.emplace_back("hardware");
  if (s.probe) k.emplace_back("probe");
  if (!s.command.empty()) k.emplace_back("workload");
  return fmt::format("{}", fmt::join(k, ","));
}

void FigureAccumulator::add(std::string_view name, std::string_view unit, std::string_view source,
                            std::optional<Direction> direction, double value) {
  const auto [it, added] = index_.try_emplace(std::string(name), figures_.size());
  if (added) figures_.push_back({std::string(name), std::string(unit), std::string(source), direction, {}});
  figures_[it->second].samples.push_back(value);
}

void FigureAccumulator::add_figure(Figure figure) {
  const auto [it, added] = index_.try_emplace(figure.name, figures_.size());
  if (added) {
    figures_.push_back(std::move(figure));
    return;
  }
  auto& into = figures_[it->second].samples;
  into.insert(into.end(), figure.samples.begin(), figure.samples.end());
}

MachineContext probe_machine(gpu::Backend* backend, const std::string& no_gpu_reason) {
  MachineContext m;
  m.host = core::host_name();
  if (backend == nullptr) {
    m.extra["no_gpu_reason"] = no_gpu_reason.substr(0, no_gpu_reason.find('\n'));
    return m;
  }
  // A replay or fake GPUs are not this machine: the stored context says which backend it was.
  m.extra["backend"] = std::string(backend->name());
  if (auto sys = backend->system_info(); sys) {
    m.driver_version = sys->driver_version;
    m.cuda_version = sys->cuda_driver_version;
  }
  auto n = backend->device_count();
  nlohmann::json uuids = nlohmann::json::array();
  for (int i = 0; n && i < *n; ++i) {
    auto info = backend->device_info(i);
    if (!info) continue;
    m.gpus.push_back(info->name);
    uuids.push_back(info->uuid);
  }
  m.extra["gpu_uuids"] = uuids;
  return m;
}

namespace {

// Each file of a process's collections gets its own name in the private folder: a check's
// confirmation run collects again and must not write over the first run's trace.
std::string new_file_name(const CollectEnv& env, std::string_view stem, std::string_view ext) {
  static std::atomic<int> counter{0};
  return fmt::format("{}/{}-{}{}", env.work_dir, stem, counter.fetch_add(1), ext);
}

std::optional<int> stop_requested(const CollectEnv& env) {
  if (env.stop == nullptr || env.stop->signal.load() == 0) return std::nullopt;
  return env.stop->signal.load();
}

WorkloadOptions workload_options(const CollectEnv& env, double timeout_s, bool echo_to_stderr) {
  WorkloadOptions o;
  o.metrics_path = new_file_name(env, "metrics", ".jsonl");
  o.timeout_s = timeout_s;
  o.echo_to_stderr = echo_to_stderr;
  o.stop = env.stop;
  o.stop_grace = env.stop_grace;
  return o;
}

bench::Mode mode_from(const std::string& s) {
  if (s == "full") return bench::Mode::kFull;
  if (s == "default") return bench::Mode::kDefault;
  return bench::Mode::kQuick;
}

// The hardware line: gpudoc's benchmarks through the same run object as `gpudoc bench` (the same
// plan, and the benchmarked GPU observed through the backend the run was handed), so a stored
// figure carries the clocks and throttle reasons `gpudoc bench` would print beside it.
core::Status collect_bench(const CollectSpec& spec, const CollectFilter& filter, const CollectEnv& env,
                           FigureAccumulator& figs, Collected& out) {
  bench::PlanRequest request;
  request.only = filter.bench_keys.empty() ? spec.bench_keys : filter.bench_keys;
  request.mode = mode_from(spec.bench_mode);
  request.device = spec.device;
  auto plan = bench::make_plan(request);
  if (!plan) return plan.error();
  bench::Progress progress = [](std::size_t i, std::size_t n, const std::string& key) {
    std::fprintf(stderr, "gpudoc: baseline: bench [%zu/%zu] %s\n", i + 1, n, key.c_str());
  };
  auto observe = [&env] { return bench::Observer{env.backend, env.clock, env.no_gpu_reason}; };
  const bench::Report rep = bench::run(*plan, observe, progress);
  if (!rep.context.gpu)
    return core::Error(core::ErrorKind::kEnvironment,
                       fmt::format("a hardware baseline (--bench) needs a GPU, and none can run benchmarks here: {}",
                                   rep.context.no_gpu_reason));
  std::size_t ran = 0;
  for (const auto& o : rep.outcomes) {
    if (o.status == bench::OutcomeStatus::kOk && o.result) {
      ++ran;
      figs.add_figure({o.key, o.result->unit, "bench",
                       o.result->higher_is_better ? Direction::kHigherIsBetter : Direction::kLowerIsBetter,
                       o.result->samples});
    } else {
      out.notes.push_back(fmt::format("bench {}: {}", o.key,
                                      o.status == bench::OutcomeStatus::kWaived ? o.reason : "failed: " + o.reason));
    }
  }
  // The whole report's machine and conditions (clocks, throttle reasons seen), as `bench --json`.
  const nlohmann::json report = bench::to_json(rep);
  out.details["bench_machine"] = report["machine"];
  out.details["bench_conditions"] = report["conditions"];
  if (ran == 0)
    return core::Error(core::ErrorKind::kEnvironment,
                       fmt::format("no benchmark could run here: {}",
                                   out.notes.empty() ? std::string("none selected") : out.notes.front()));
  return {};
}

// The probe's code goes into the private folder (a file no other user can replace or read in
// between), and python3 runs it from there.
core::Result<std::string> write_probe_script(const CollectEnv& env) {
  const std::string script = new_file_name(env, "probe", ".py");
  auto fd = core::create_new_file(script);
  if (!fd) return fd.error().with_context("writing the probe script");
  if (auto st = core::write_all(fd->get(), kTorchMatmulProbe, script); !st) return st.error();
  return script;
}

core::Status collect_probe(const CollectSpec& spec, const CollectEnv& env, FigureAccumulator& figs, Collected& out) {
  auto script = write_probe_script(env);
  if (!script) return script.error();
  const std::string device = std::to_string(spec.device);
  auto check = run_workload({"python3", *script, "--check-only", "--device", device}, workload_options(env, 120, true));
  if (!check)
    return core::Error(core::ErrorKind::kEnvironment,
                       fmt::format("the PyTorch probe is unavailable: {}", check.error().message()));
  if (check->stopped_by) {
    out.stopped_by = check->stopped_by;
    return {};
  }
  if (check->exit_code != 0) {
    std::string reason = fmt::format("the probe's check exited with {}", check->exit_code);
    for (const auto& e : check->events)
      if (e.value("event", "") == "unavailable") reason = e.value("reason", reason);
    return core::Error(core::ErrorKind::kEnvironment, fmt::format("the PyTorch probe is unavailable: {}", reason));
  }
  for (const auto& e : check->events)
    if (e.value("event", "") == "available") out.details["probe"] = e;
  for (int r = 0; r < spec.repeat; ++r) {
    auto run = run_workload({"python3", *script, "--device", device}, workload_options(env, 600, env.echo_to_stderr));
    if (!run) return run.error().with_context("running the PyTorch probe");
    if (!run->stopped_by && run->exit_code != 0)
      return core::Error(core::ErrorKind::kEnvironment,
                         fmt::format("the PyTorch probe failed (exit {}{}); its output is above", run->exit_code,
                                     run->timed_out ? ", timed out" : ""));
    for (const auto& [name, samples] : run->metrics.figures())
      for (double v : samples) figs.add(name, "ms", "probe", Direction::kLowerIsBetter, v);
    if (run->stopped_by) {
      out.stopped_by = run->stopped_by;
      break;
    }
  }
  return {};
}

nlohmann::json definitions_json(const std::string& scope) {
  nlohmann::json d = nlohmann::json::object();
  for (const auto& [name, text] : figure_definitions({{"gpu_figures_scope", scope}})) d[name] = text;
  return d;
}

// What the run cost (every run, a stopped one too: its GPUs were paid for), added to the others'.
void add_run_cost(const WorkloadRun& run, int index, const std::string& trace, const std::vector<int>& gpus,
                  Collected& out) {
  auto c = run_cost(trace, gpus, run.metrics.work());
  if (!c) {
    out.notes.push_back(fmt::format("run {}: its cost is not accounted: {}", index + 1, c.error().message()));
    return;
  }
  if (out.cost)
    out.cost->add_run(std::move(*c));
  else
    out.cost = std::move(*c);
}

// The figures one workload run adds (its own, wall_s, the GPU's) and its line in details.
void add_workload_run(const WorkloadRun& run, int index, const std::string& trace, FigureAccumulator& figs,
                      Collected& out) {
  // A run gpudoc stopped did not run its length: its wall time and energy are not figures of it.
  if (!run.stopped_by)
    figs.add("wall_s", "s", "gpudoc", Direction::kLowerIsBetter, run.wall_s);
  else
    out.notes.push_back(
        fmt::format("run {}: stopped (signal {}): its wall time and energy are not kept", index + 1, *run.stopped_by));
  for (const auto& [name, samples] : run.metrics.figures())
    for (double v : samples) figs.add(name, "", "workload", std::nullopt, v);
  for (const auto& n : run.metrics.notes())
    out.notes.push_back(fmt::format("metrics {} line {}: {}", n.source, n.line, n.message));
  if (run.metrics.malformed_lines() > 0)
    out.notes.push_back(fmt::format("run {}: {} malformed metrics line{} ignored", index + 1,
                                    run.metrics.malformed_lines(), run.metrics.malformed_lines() == 1 ? "" : "s"));
  out.details["workload_runs"].push_back(
      {{"run", index + 1},
       {"exit_code", run.exit_code},
       {"timed_out", run.timed_out},
       {"stopped_by_signal", run.stopped_by ? nlohmann::json(*run.stopped_by) : nlohmann::json()},
       {"wall_s", run.wall_s},
       {"metric_lines", run.metrics.metric_lines()},
       {"event_lines", run.metrics.event_lines()},
       {"malformed_lines", run.metrics.malformed_lines()},
       {"invalid_utf8_lines", run.metrics.invalid_utf8_lines()},
       {"ignored_values", run.metrics.ignored_values()}});
  if (trace.empty()) return;
  if (!out.trace_path.empty()) std::remove(out.trace_path.c_str());
  out.trace_path = trace;
  const GpuFigures g = gpu_figures_from_trace(trace, run.tree);
  if (g.memory_peak_bytes)
    figs.add("gpu_memory_peak_bytes", "By", "gpudoc", Direction::kLowerIsBetter, *g.memory_peak_bytes);
  if (g.utilization_mean_percent)
    figs.add("gpu_utilization_mean_percent", "percent", "gpudoc", Direction::kUnknown, *g.utilization_mean_percent);
  if (g.energy_joules && !run.stopped_by)
    figs.add("gpu_energy_joules", "J", "gpudoc", Direction::kLowerIsBetter, *g.energy_joules);
  if (g.startup_s) figs.add("startup_s", "s", "gpudoc", Direction::kLowerIsBetter, *g.startup_s);
  if (g.active_s && !run.stopped_by) figs.add("gpu_active_s", "s", "gpudoc", Direction::kLowerIsBetter, *g.active_s);
  out.details["gpu_figures_scope"] = g.scope;
  out.details["figure_definitions"] = definitions_json(g.scope);
  if (!g.absent_reason.empty()) out.notes.push_back("GPU figures absent: " + g.absent_reason);
  add_run_cost(run, index, trace, g.gpus, out);
}

// The backend when it sees a GPU; else null and why.
gpu::Backend* usable_backend(const CollectEnv& env, std::string& no_gpu) {
  no_gpu = env.no_gpu_reason.substr(0, env.no_gpu_reason.find('\n'));
  if (env.backend == nullptr) return nullptr;
  auto n = env.backend->device_count();
  if (n && *n > 0) return env.backend;
  no_gpu = n ? "the driver reports no GPU" : n.error().message();
  return nullptr;
}

core::Status collect_workload(const CollectSpec& spec, const CollectEnv& env, FigureAccumulator& figs, Collected& out) {
  std::string no_gpu;
  gpu::Backend* backend = usable_backend(env, no_gpu);
  if (any_invalid_utf8(spec.command))
    out.notes.push_back(
        "the workload's command line is not valid UTF-8: stored with U+FFFD for display, run byte for byte");
  out.details["workload_runs"] = nlohmann::json::array();
  int first_failure = 0;
  for (int r = 0; r < spec.repeat; ++r) {
    if (auto sig = stop_requested(env)) {
      out.stopped_by = sig;
      break;
    }
    WorkloadOptions o = workload_options(env, spec.timeout_s, env.echo_to_stderr);
    o.backend = backend;
    o.clock = env.clock;
    if (backend != nullptr) o.trace_path = new_file_name(env, "trace", ".jsonl");
    if (spec.repeat > 1) std::fprintf(stderr, "gpudoc: baseline: workload run %d of %d\n", r + 1, spec.repeat);
    auto run = run_workload(spec.command, o);
    if (!run) return run.error().with_context(fmt::format("running `{}`", fmt::join(spec.command, " ")));
    if (run->timed_out) out.workload_timed_out = true;
    if (run->exit_code != 0 && first_failure == 0 && !run->stopped_by) first_failure = run->exit_code;
    add_workload_run(*run, r, o.trace_path, figs, out);
    if (run->stopped_by) {
      out.stopped_by = run->stopped_by;
      break;
    }
    if (run->timed_out) break;  // a hung workload is not run again
  }
  out.workload_exit_code = first_failure;
  if (backend == nullptr) {
    const std::string why = "no GPU here (" + no_gpu + ")";
    out.details["absent"] = {
        {"gpu_memory_peak_bytes", why}, {"gpu_utilization_mean_percent", why}, {"gpu_energy_joules", why}};
    out.notes.push_back("GPU figures (peak memory, utilization, energy) absent: " + why);
  }
  return {};
}

}  // namespace

int workload_runs(const nlohmann::json& details) {
  if (!details.is_object() || !details.contains("workload_runs") || !details["workload_runs"].is_array()) return 1;
  return std::max<int>(1, static_cast<int>(details["workload_runs"].size()));
}

std::map<std::string, std::string> figure_definitions(const nlohmann::json& details) {
  std::map<std::string, std::string> d;
  if (!details.is_object()) return d;
  if (details.contains("figure_definitions") && details["figure_definitions"].is_object()) {
    for (const auto& [name, text] : details["figure_definitions"].items())
      if (text.is_string()) d[name] = text.get<std::string>();
    return d;
  }
  // Before definitions were stored, the scope was: it decides what the GPU figures measured.
  d["wall_s"] = "the command's wall time, from its spawn to its exit";
  if (!details.contains("gpu_figures_scope") || !details["gpu_figures_scope"].is_string()) return d;
  const std::string scope = details["gpu_figures_scope"].get<std::string>();
  const bool tree = scope == "process tree";
  d["gpu_memory_peak_bytes"] =
      tree ? "the peak GPU memory of the command's processes" : "the rise of the whole GPUs' used memory";
  d["gpu_utilization_mean_percent"] =
      tree ? "the mean utilization of the GPUs the command used" : "the mean utilization of every GPU";
  d["gpu_energy_joules"] = tree ? "the energy of the GPUs the command used" : "the energy of every GPU";
  d["startup_s"] = tree ? "from the spawn to the steady work of the GPUs the command used"
                        : "from the spawn to the steady work of any GPU";
  d["gpu_active_s"] =
      tree ? "the span of the steady work of the GPUs the command used" : "the span of the steady work of any GPU";
  return d;
}

core::Result<Collected> collect(const CollectSpec& spec, const CollectFilter& filter, const CollectEnv& env) {
  Collected out;
  FigureAccumulator figs;
  auto wanted = [&](const std::string& s) { return filter.sources.empty() || filter.sources.count(s) != 0; };
  auto stopped = [&] {
    if (!out.stopped_by) out.stopped_by = stop_requested(env);
    return out.stopped_by.has_value();
  };
  if (spec.bench && wanted("bench") && !stopped())
    if (auto st = collect_bench(spec, filter, env, figs, out); !st) return st.error();
  if (spec.probe && wanted("probe") && !stopped())
    if (auto st = collect_probe(spec, env, figs, out); !st) return st.error();
  if (!spec.command.empty() && (wanted("workload") || wanted("gpudoc")) && !stopped())
    if (auto st = collect_workload(spec, env, figs, out); !st) return st.error();
  out.figures = std::move(figs.figures());
  (void)stopped();  // a stop asked after the last part ended still marks the run
  return out;
}

}  // namespace gpudoc::baseline
