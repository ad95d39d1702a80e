#include "cli/baseline_collect.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "baseline/metrics_protocol.hpp"
#include "baseline/probe_script.hpp"
#include "bench/engine.hpp"
#include "bench/registry.hpp"
#include "cli/common.hpp"
#include "core/clock.hpp"
#include "core/file.hpp"
#include "core/host.hpp"
#include "core/log.hpp"
#include "core/process.hpp"
#include "core/text.hpp"
#include "telemetry/recorder.hpp"

namespace gpudoc::cli {

nlohmann::json to_json(const CollectSpec& s) {
  return {{"bench", s.bench},     {"bench_keys", s.bench_keys}, {"bench_mode", s.bench_mode}, {"device", s.device},
          {"probe", s.probe},     {"command", s.command},       {"repeat", s.repeat},         {"timeout_s", s.timeout_s}};
}

CollectSpec spec_from_json(const nlohmann::json& j) {
  CollectSpec s;
  if (!j.is_object()) return s;
  s.bench = j.value("bench", false);
  if (j.contains("bench_keys") && j["bench_keys"].is_array()) s.bench_keys = j["bench_keys"].get<std::vector<std::string>>();
  s.bench_mode = j.value("bench_mode", std::string("quick"));
  s.device = j.value("device", 0);
  s.probe = j.value("probe", false);
  if (j.contains("command") && j["command"].is_array()) s.command = j["command"].get<std::vector<std::string>>();
  s.repeat = std::max(1, j.value("repeat", 1));
  s.timeout_s = j.value("timeout_s", 0.0);
  return s;
}

std::string kinds_of(const CollectSpec& s) {
  std::vector<std::string> k;
  if (s.bench) k.emplace_back("hardware");
  if (s.probe) k.emplace_back("probe");
  if (!s.command.empty()) k.emplace_back("workload");
  return fmt::format("{}", fmt::join(k, ","));
}

namespace {

// ---- the process tree of gpudoc's children, from /proc ---------------------------------------

std::map<pid_t, pid_t> parent_map() {
  std::map<pid_t, pid_t> out;
  DIR* d = opendir("/proc");
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream f(fmt::format("/proc/{}/stat", e->d_name));
    std::string stat;
    std::getline(f, stat);
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses; the last ')' ends it.
    const auto rp = stat.rfind(')');
    if (rp == std::string::npos) continue;
    std::istringstream rest(stat.substr(rp + 1));
    std::string state;
    long ppid = 0;
    rest >> state >> ppid;
    out[static_cast<pid_t>(std::atol(e->d_name))] = static_cast<pid_t>(ppid);
  }
  closedir(d);
  return out;
}

std::set<pid_t> descendants_of(pid_t root) {
  const auto parents = parent_map();
  std::set<pid_t> tree;
  bool grew = true;
  while (grew) {
    grew = false;
    for (const auto& [pid, ppid] : parents)
      if ((ppid == root || tree.count(ppid) != 0) && tree.insert(pid).second) grew = true;
  }
  return tree;
}

// ---- one run of a command, its stdout read for ::gpudoc lines ---------------------------------

struct CommandRun {
  int exit_code = 0;
  bool timed_out = false;
  double wall_s = 0;
  baseline::MetricsCollector metrics;
  std::vector<nlohmann::json> events;       // ::gpudoc lines with an "event" key
  std::set<pid_t> tree;                     // every process of the command seen
  std::optional<pid_t> child_pid;
};

// While alive, gpudoc's fd 1 is the write end of a pipe (the command inherits it); a thread reads
// the other end, feeds ::gpudoc lines to the collector and passes every byte on to `echo_fd`.
class StdoutTap {
 public:
  StdoutTap(CommandRun& run, int echo_to) : run_(run) {
    std::fflush(stdout);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return;
    saved_ = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    echo_ = echo_to == STDOUT_FILENO ? saved_ : echo_to;
    read_ = fds[0];
    dup2(fds[1], STDOUT_FILENO);   // dup2 clears close-on-exec: the command inherits it
    close(fds[1]);
    reader_ = std::thread([this] { read_loop(); });
  }
  StdoutTap(const StdoutTap&) = delete;
  StdoutTap& operator=(const StdoutTap&) = delete;
  ~StdoutTap() { finish(); }

  // Restores gpudoc's stdout and waits (a little) for the command's last lines.
  void finish() {
    if (saved_ < 0) return;
    std::fflush(stdout);
    dup2(saved_, STDOUT_FILENO);
    close(saved_);
    saved_ = -1;
    // A background grandchild may keep the pipe open for ever: read what is there, then stop.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!eof_.load() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    stop_ = true;
    if (reader_.joinable()) reader_.join();
    close(read_);
  }

 private:
  void read_loop() {
    std::string pending;
    std::size_t line_no = 0;
    char buf[65536];
    while (!stop_.load()) {
      pollfd p{read_, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      const ssize_t n = read(read_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      write_all(buf, static_cast<std::size_t>(n));
      pending.append(buf, static_cast<std::size_t>(n));
      std::size_t nl = 0;
      while ((nl = pending.find('\n')) != std::string::npos) {
        handle(std::string_view(pending).substr(0, nl), ++line_no);
        pending.erase(0, nl + 1);
      }
      if (pending.size() > (1u << 20)) pending.clear();   // a line of a MiB is no metrics line
    }
    if (!pending.empty()) handle(pending, ++line_no);
    eof_ = true;
  }
  void handle(std::string_view line, std::size_t n) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    run_.metrics.add_stdout_line(line, n);
    if (line.substr(0, baseline::kMetricsPrefix.size()) == baseline::kMetricsPrefix && run_.events.size() < 1000) {
      auto j = nlohmann::json::parse(line.substr(baseline::kMetricsPrefix.size()), nullptr, false);
      if (j.is_object() && j.contains("event")) run_.events.push_back(std::move(j));
    }
  }
  void write_all(const char* p, std::size_t n) const {
    while (n > 0) {
      const ssize_t w = write(echo_, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return;   // our own stdout closed: keep reading, stop echoing
      p += w;
      n -= static_cast<std::size_t>(w);
    }
  }

  CommandRun& run_;
  int saved_ = -1;
  int echo_ = STDERR_FILENO;
  int read_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<bool> eof_{false};
  std::thread reader_;
};

// Watches the command's process tree (for the GPU figures), passes on a kill(1)'d gpudoc's
// signal, and enforces the timeout: SIGTERM to the whole tree, SIGKILL 5 s later.
class Watchdog {
 public:
  Watchdog(CommandRun& run, double timeout_s, std::atomic<int>& forward) : run_(run), forward_(forward) {
    if (timeout_s > 0) deadline_ = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(timeout_s));
    thread_ = std::thread([this] { loop(); });
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  ~Watchdog() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  [[nodiscard]] bool timed_out() const { return timed_out_.load(); }

 private:
  void loop() {
    std::optional<std::chrono::steady_clock::time_point> kill_at;
    while (!stop_.load()) {
      const auto tree = descendants_of(getpid());
      {
        std::lock_guard<std::mutex> lock(mu_);
        run_.tree.insert(tree.begin(), tree.end());
      }
      if (int sig = forward_signal().exchange(0); sig != 0) forward_.store(sig);
      const auto now = std::chrono::steady_clock::now();
      if (deadline_ && now >= *deadline_ && !timed_out_.load()) {
        timed_out_ = true;
        for (pid_t p : tree) kill(p, SIGTERM);
        kill_at = now + std::chrono::seconds(5);
      }
      if (kill_at && now >= *kill_at) {
        for (pid_t p : tree) kill(p, SIGKILL);
        kill_at = now + std::chrono::seconds(1);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  CommandRun& run_;
  std::atomic<int>& forward_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> timed_out_{false};
  std::mutex mu_;
  std::thread thread_;
};

// Sampling periods for a baseline run: short runs still get utilization, process and energy
// readings (the defaults are tuned for long recordings).
telemetry::SamplerConfig baseline_sampler_config() {
  telemetry::SamplerConfig c;
  c.periods[gpu::index(gpu::MetricGroup::kUtilization)] = std::chrono::milliseconds(1000);
  c.periods[gpu::index(gpu::MetricGroup::kEnergy)] = std::chrono::milliseconds(1000);
  c.periods[gpu::index(gpu::MetricGroup::kProcesses)] = std::chrono::milliseconds(500);
  c.read_events = true;
  return c;
}

// Runs argv once. With a backend, under the telemetry recorder into trace_path.
core::Result<CommandRun> run_command(const std::vector<std::string>& argv, gpu::Backend* backend, const std::string& trace_path,
                                     double timeout_s, bool echo_to_stderr, const std::string& metrics_path) {
  CommandRun run;
  {
    std::ofstream(metrics_path, std::ios::trunc);
  }
  setenv("GPUDOC_METRICS", metrics_path.c_str(), 1);
  std::atomic<int> forward{0};
  core::SystemClock clock;
  const auto t0 = std::chrono::steady_clock::now();
  core::Status status;
  {
    StdoutTap tap(run, echo_to_stderr ? STDERR_FILENO : STDOUT_FILENO);
    Watchdog dog(run, timeout_s, forward);
    if (backend != nullptr) {
      telemetry::RecordOptions opt;
      opt.output_path = trace_path;
      opt.command = argv;
      opt.sampler = baseline_sampler_config();
      auto r = telemetry::record(*backend, clock, opt, stop_requests(), &forward);
      if (!r) status = r.error();
      else run.exit_code = r->command_exit_code.value_or(0);
    } else {
      auto child = core::ChildProcess::spawn(argv);
      if (!child) {
        status = child.error();
      } else {
        run.child_pid = child->pid();
        while (!child->poll()) {
          if (int sig = forward.exchange(0); sig != 0) child->signal(sig);
          if (stop_requests().load() >= 2) child->signal(SIGKILL);
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        run.exit_code = child->exit_code_for_shell();
      }
    }
    run.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    dog.stop();
    run.timed_out = dog.timed_out();
    tap.finish();
  }
  unsetenv("GPUDOC_METRICS");
  if (!status) return status.error();
  if (auto text = core::read_file(metrics_path); text) run.metrics.add_file_text(*text, "$GPUDOC_METRICS");
  std::remove(metrics_path.c_str());
  return run;
}

// ---- figures gpudoc adds from the trace -------------------------------------------------------

struct GpuFigures {
  std::optional<double> memory_peak_bytes;
  std::optional<double> utilization_mean_percent;
  std::optional<double> energy_joules;
  std::string scope;                        // "process tree" or "whole GPU"
  std::string absent_reason;
};

GpuFigures gpu_figures_from_trace(const std::string& path, const std::set<pid_t>& tree_in) {
  GpuFigures g;
  auto t = telemetry::read_trace_file(path);
  if (!t) {
    g.absent_reason = "the run's trace could not be read: " + t.error().message();
    return g;
  }
  std::set<std::uint32_t> tree;
  for (pid_t p : tree_in) tree.insert(static_cast<std::uint32_t>(p));
  for (const auto& e : t->events)
    if (e.kind == "process_start" && e.fields.contains("pid") && e.fields["pid"].is_number())
      tree.insert(e.fields["pid"].get<std::uint32_t>());
  std::vector<std::size_t> used;
  double memory = 0;
  for (std::size_t i = 0; i < t->gpus.size(); ++i) {
    std::map<std::uint32_t, double> peak;
    for (const auto& p : t->gpus[i].processes)
      if (tree.count(p.sample.pid) != 0 && p.sample.memory_used_bytes)
        peak[p.sample.pid] = std::max(peak[p.sample.pid], static_cast<double>(*p.sample.memory_used_bytes));
    if (peak.empty()) continue;
    used.push_back(i);
    for (const auto& [pid, bytes] : peak) memory += bytes;
  }
  if (!used.empty()) {
    g.scope = "process tree";
    g.memory_peak_bytes = memory;
  } else {
    // No process of the command in NVML's lists: it used no GPU, or its PIDs are in another PID
    // namespace (a container) than NVML's. Whole-GPU figures then, said so.
    g.scope = "whole GPU";
    for (std::size_t i = 0; i < t->gpus.size(); ++i) used.push_back(i);
    double rise = 0;
    bool any = false;
    for (std::size_t i : used) {
      const auto& m = t->gpus[i].metric(gpu::Metric::kMemoryUsedBytes);
      if (m.empty()) continue;
      any = true;
      rise += *std::max_element(m.v.begin(), m.v.end()) - m.v.front();
    }
    if (any) g.memory_peak_bytes = rise;
  }
  double util_sum = 0, util_n = 0, energy = 0;
  bool energy_any = false;
  for (std::size_t i : used) {
    const auto& u = t->gpus[i].metric(gpu::Metric::kGpuUtilizationPercent);
    for (double v : u.v) {
      util_sum += v;
      util_n += 1;
    }
    const auto& e = t->gpus[i].metric(gpu::Metric::kEnergyJoules);
    const auto& pw = t->gpus[i].metric(gpu::Metric::kPowerWatts);
    if (e.size() >= 2) {
      energy += e.v.back() - e.v.front();
      energy_any = true;
    } else if (pw.size() >= 2) {
      for (std::size_t k = 1; k < pw.size(); ++k) energy += (pw.v[k] + pw.v[k - 1]) / 2 * (pw.t[k] - pw.t[k - 1]);
      energy_any = true;
    }
  }
  if (util_n > 0) g.utilization_mean_percent = util_sum / util_n;
  if (energy_any) g.energy_joules = energy;
  return g;
}

void add_sample(std::vector<baseline::Figure>& figs, const std::string& name, const std::string& unit, const std::string& source,
                std::optional<baseline::Direction> dir, double v) {
  for (auto& f : figs)
    if (f.name == name) {
      f.samples.push_back(v);
      return;
    }
  figs.push_back({name, unit, source, dir, {v}});
}

bench::Mode mode_from(const std::string& s) {
  if (s == "full") return bench::Mode::kFull;
  if (s == "default") return bench::Mode::kDefault;
  return bench::Mode::kQuick;
}

core::Status collect_bench(const CollectSpec& spec, const CollectFilter& filter, Collected& out) {
  const bench::Context ctx = bench::probe_context(spec.device);
  if (!ctx.gpu)
    return core::Error(core::ErrorKind::kEnvironment,
                       fmt::format("a hardware baseline (--bench) needs a GPU, and none can run benchmarks here: {}", ctx.no_gpu_reason));
  std::vector<std::string> keys = filter.bench_keys.empty() ? spec.bench_keys : filter.bench_keys;
  std::vector<const bench::Benchmark*> selected = bench::registry().all();
  if (!keys.empty()) {
    auto sel = bench::registry().select(keys);
    if (!sel) return sel.error();
    selected = *sel;
  }
  bench::RunOptions options;
  options.mode = mode_from(spec.bench_mode);
  bench::Progress progress = [](std::size_t i, std::size_t n, const std::string& key) {
    std::fprintf(stderr, "gpudoc: baseline: bench [%zu/%zu] %s\n", i + 1, n, key.c_str());
  };
  const bench::Report rep = bench::run_benchmarks(selected, ctx, options, progress);
  std::size_t ran = 0;
  for (const auto& o : rep.outcomes) {
    if (o.status == bench::OutcomeStatus::kOk && o.result) {
      ++ran;
      baseline::Figure f{o.key, o.result->unit, "bench",
                         o.result->higher_is_better ? baseline::Direction::kHigherIsBetter : baseline::Direction::kLowerIsBetter,
                         o.result->samples};
      out.figures.push_back(std::move(f));
    } else {
      out.notes.push_back(fmt::format("bench {}: {}", o.key, o.status == bench::OutcomeStatus::kWaived ? o.reason : "failed: " + o.reason));
    }
  }
  out.details["bench_machine"] = bench::to_json(ctx);
  if (ran == 0)
    return core::Error(core::ErrorKind::kEnvironment,
                       fmt::format("no benchmark could run here: {}", out.notes.empty() ? std::string("none selected") : out.notes.front()));
  return {};
}

std::string temp_dir_for(const std::string& trace_dir) {
  return trace_dir.empty() ? std::string(std::getenv("TMPDIR") != nullptr ? std::getenv("TMPDIR") : "/tmp") : trace_dir;
}

core::Status collect_probe(const CollectSpec& spec, const std::string& dir, bool echo_to_stderr, Collected& out) {
  const std::string script = fmt::format("{}/gpudoc-probe-{}.py", dir, getpid());
  {
    std::ofstream f(script, std::ios::trunc);
    f << baseline::kTorchMatmulProbe;
    if (!f) return core::Error(core::ErrorKind::kIo, fmt::format("cannot write the probe script to {}", script));
  }
  struct Remove {
    std::string p;
    ~Remove() { std::remove(p.c_str()); }
  } remove{script};
  const std::string metrics = fmt::format("{}/gpudoc-probe-metrics-{}.jsonl", dir, getpid());
  const std::string device = std::to_string(spec.device);
  auto check = run_command({"python3", script, "--check-only", "--device", device}, nullptr, "", 120, true, metrics);
  if (!check)
    return core::Error(core::ErrorKind::kEnvironment, fmt::format("the PyTorch probe is unavailable: {}", check.error().message()));
  if (check->exit_code != 0) {
    std::string reason = fmt::format("the probe's check exited with {}", check->exit_code);
    for (const auto& e : check->events)
      if (e.value("event", "") == "unavailable") reason = e.value("reason", reason);
    return core::Error(core::ErrorKind::kEnvironment, fmt::format("the PyTorch probe is unavailable: {}", reason));
  }
  for (const auto& e : check->events)
    if (e.value("event", "") == "available") out.details["probe"] = e;
  for (int r = 0; r < spec.repeat; ++r) {
    auto run = run_command({"python3", script, "--device", device}, nullptr, "", 600, echo_to_stderr, metrics);
    if (!run) return run.error().with_context("running the PyTorch probe");
    if (run->exit_code != 0)
      return core::Error(core::ErrorKind::kEnvironment,
                         fmt::format("the PyTorch probe failed (exit {}{}); its output is above", run->exit_code,
                                     run->timed_out ? ", timed out" : ""));
    for (const auto& [name, samples] : run->metrics.figures())
      for (double v : samples) add_sample(out.figures, name, "ms", "probe", baseline::Direction::kLowerIsBetter, v);
  }
  return {};
}

core::Status collect_workload(const CollectSpec& spec, bool echo_to_stderr, const std::string& dir, Collected& out) {
  std::unique_ptr<gpu::Backend> backend;
  std::string no_gpu;
  if (auto b = open_live_backend(); b) {
    auto n = (*b)->device_count();
    if (n && *n > 0) backend = std::move(*b);
    else no_gpu = n ? "the driver reports no GPU" : n.error().message();
  } else {
    no_gpu = b.error().message();
    if (auto nl = no_gpu.find('\n'); nl != std::string::npos) no_gpu.resize(nl);
  }
  if (backend) install_stop_handlers();
  nlohmann::json metrics_json = nlohmann::json::array();
  int first_failure = 0;
  // Each collection of this process gets its own file names: a check's confirmation run collects
  // again, and with names by run index alone it wrote over the first run's trace, which the check
  // then deleted as the first run's (the diagnosis of a confirmed regression found no trace).
  static std::atomic<int> collections{0};
  const int collection = collections.fetch_add(1);
  for (int r = 0; r < spec.repeat; ++r) {
    const std::string trace =
        backend ? fmt::format("{}/gpudoc-baseline-{}-{}-{}.jsonl", dir, getpid(), collection, r) : std::string();
    if (spec.repeat > 1) std::fprintf(stderr, "gpudoc: baseline: workload run %d of %d\n", r + 1, spec.repeat);
    auto run = run_command(spec.command, backend.get(), trace, spec.timeout_s, echo_to_stderr,
                           fmt::format("{}/gpudoc-metrics-{}-{}-{}.jsonl", dir, getpid(), collection, r));
    if (!run) return run.error().with_context(fmt::format("running `{}`", fmt::join(spec.command, " ")));
    if (run->timed_out) out.workload_timed_out = true;
    if (run->exit_code != 0 && first_failure == 0) first_failure = run->exit_code;
    add_sample(out.figures, "wall_s", "s", "gpudoc", baseline::Direction::kLowerIsBetter, run->wall_s);
    for (const auto& [name, samples] : run->metrics.figures())
      for (double v : samples) add_sample(out.figures, name, "", "workload", std::nullopt, v);
    for (const auto& n : run->metrics.notes())
      out.notes.push_back(fmt::format("metrics {} line {}: {}", n.source, n.line, n.message));
    metrics_json.push_back({{"run", r + 1},
                            {"exit_code", run->exit_code},
                            {"timed_out", run->timed_out},
                            {"wall_s", run->wall_s},
                            {"metric_lines", run->metrics.metric_lines()},
                            {"event_lines", run->metrics.event_lines()},
                            {"malformed_lines", run->metrics.malformed_lines()},
                            {"ignored_values", run->metrics.ignored_values()}});
    if (run->metrics.malformed_lines() > 0)
      out.notes.push_back(fmt::format("run {}: {} malformed metrics line{} ignored", r + 1, run->metrics.malformed_lines(),
                                      run->metrics.malformed_lines() == 1 ? "" : "s"));
    if (backend) {
      if (!out.trace_path.empty()) std::remove(out.trace_path.c_str());
      out.trace_path = trace;
      const GpuFigures g = gpu_figures_from_trace(trace, run->tree);
      if (g.memory_peak_bytes) add_sample(out.figures, "gpu_memory_peak_bytes", "By", "gpudoc", baseline::Direction::kLowerIsBetter, *g.memory_peak_bytes);
      if (g.utilization_mean_percent)
        add_sample(out.figures, "gpu_utilization_mean_percent", "percent", "gpudoc", baseline::Direction::kUnknown, *g.utilization_mean_percent);
      if (g.energy_joules) add_sample(out.figures, "gpu_energy_joules", "J", "gpudoc", baseline::Direction::kLowerIsBetter, *g.energy_joules);
      out.details["gpu_figures_scope"] = g.scope;
      if (!g.absent_reason.empty()) out.notes.push_back("GPU figures absent: " + g.absent_reason);
    }
    if (run->timed_out) break;   // a hung workload is not run again
  }
  out.workload_exit_code = first_failure;
  out.details["workload_runs"] = metrics_json;
  if (!backend) {
    const std::string why = "no GPU here (" + no_gpu + ")";
    out.details["absent"] = {{"gpu_memory_peak_bytes", why}, {"gpu_utilization_mean_percent", why}, {"gpu_energy_joules", why}};
    out.notes.push_back("GPU figures (peak memory, utilization, energy) absent: " + why);
  }
  return {};
}

}  // namespace

baseline::MachineContext probe_machine() {
  baseline::MachineContext m;
  m.host = core::host_name();
  auto b = open_live_backend();
  if (!b) {
    std::string why = b.error().message();
    if (auto nl = why.find('\n'); nl != std::string::npos) why.resize(nl);
    m.extra["no_gpu_reason"] = why;
    return m;
  }
  if (auto sys = (*b)->system_info(); sys) {
    m.driver_version = sys->driver_version;
    m.cuda_version = sys->cuda_driver_version;
  }
  auto n = (*b)->device_count();
  nlohmann::json uuids = nlohmann::json::array();
  for (int i = 0; n && i < *n; ++i) {
    auto info = (*b)->device_info(i);
    if (!info) continue;
    m.gpus.push_back(info->name);
    uuids.push_back(info->uuid);
  }
  m.extra["gpu_uuids"] = uuids;
  return m;
}

core::Result<Collected> collect(const CollectSpec& spec, const CollectFilter& filter, bool echo_to_stderr,
                                const std::string& trace_dir) {
  Collected out;
  const std::string dir = temp_dir_for(trace_dir);
  auto wanted = [&](const std::string& s) { return filter.sources.empty() || filter.sources.count(s) != 0; };
  if (spec.bench && wanted("bench"))
    if (auto st = collect_bench(spec, filter, out); !st) return st.error();
  if (spec.probe && wanted("probe"))
    if (auto st = collect_probe(spec, dir, echo_to_stderr, out); !st) return st.error();
  if (!spec.command.empty() && (wanted("workload") || wanted("gpudoc")))
    if (auto st = collect_workload(spec, echo_to_stderr, dir, out); !st) return st.error();
  return out;
}

GpuSnapshot gpu_snapshot() {
  GpuSnapshot s;
  auto b = open_live_backend();
  if (!b) {
    s.lines.push_back("GPU state: not available (" + b.error().message().substr(0, b.error().message().find('\n')) + ")");
    return s;
  }
  auto n = (*b)->device_count();
  for (int i = 0; n && i < *n; ++i) {
    auto info = (*b)->device_info(i);
    std::map<gpu::Metric, double> v;
    for (auto group : {gpu::MetricGroup::kFast, gpu::MetricGroup::kSlow})
      if (auto r = (*b)->read(i, group); r)
        for (const auto& m : r->metrics) v[m.metric] = m.value;
    auto get = [&](gpu::Metric m) -> std::optional<double> {
      auto it = v.find(m);
      return it == v.end() ? std::nullopt : std::optional<double>(it->second);
    };
    auto show = [](std::optional<double> x, const char* unit) { return x ? fmt::format("{:.0f} {}", *x, unit) : std::string("—"); };
    nlohmann::json j = {{"gpu", i}, {"name", info ? info->name : ""}};
    for (const auto& [m, val] : v) j[std::string(gpu::info(m).name)] = val;
    const auto reasons = get(gpu::Metric::kClockEventReasonsMask);
    const std::string reason_names = reasons ? gpu::clock_event_reason_names(static_cast<std::uint64_t>(*reasons)) : "—";
    j["clock_event_reasons"] = reason_names;
    std::string link = "—";
    if (auto gen = get(gpu::Metric::kPcieLinkGeneration), width = get(gpu::Metric::kPcieLinkWidth); gen && width) {
      link = fmt::format("Gen{:.0f} x{:.0f}", *gen, *width);
      if (info && info->pcie_link_generation_max && info->pcie_link_width_max)
        link += fmt::format(" (max Gen{} x{})", *info->pcie_link_generation_max, *info->pcie_link_width_max);
    }
    j["pcie_link"] = link;
    const auto limit = get(gpu::Metric::kPowerLimitWatts);
    // ECC and row remapping, from the same facts `gpudoc health` reads; what the GPU does not
    // report is said, not shown as 0.
    std::string ecc = "not reported";
    if (auto facts = (*b)->health_facts(i); facts) {
      const gpu::HealthFacts& h = *facts;
      if (h.ecc_current && !*h.ecc_current) {
        ecc = "off";
      } else if (h.ecc_volatile_corrected || h.ecc_volatile_uncorrected) {
        auto count = [](const std::optional<std::uint64_t>& c) { return c ? std::to_string(*c) : std::string("?"); };
        ecc = fmt::format("{} corrected, {} uncorrected since driver load", count(h.ecc_volatile_corrected),
                          count(h.ecc_volatile_uncorrected));
        j["ecc_volatile_corrected"] = h.ecc_volatile_corrected ? nlohmann::json(*h.ecc_volatile_corrected) : nlohmann::json();
        j["ecc_volatile_uncorrected"] =
            h.ecc_volatile_uncorrected ? nlohmann::json(*h.ecc_volatile_uncorrected) : nlohmann::json();
      }
      if (h.remap_pending && *h.remap_pending) ecc += "; a row remap is pending (reset the GPU)";
      if (h.remap_failed && *h.remap_failed) ecc += "; a row remap FAILED";
    }
    j["ecc"] = ecc;
    s.lines.push_back(fmt::format("GPU {} {}: SM {} mem {} | {} (HBM {}) | {} of {} | throttle: {} | PCIe {} | ECC: {}",
                                  i, info ? info->name : "?", show(get(gpu::Metric::kSmClockMhz), "MHz"),
                                  show(get(gpu::Metric::kMemoryClockMhz), "MHz"), show(get(gpu::Metric::kGpuTemperatureCelsius), "°C"),
                                  show(get(gpu::Metric::kMemoryTemperatureCelsius), "°C"), show(get(gpu::Metric::kPowerWatts), "W"),
                                  show(limit, "W"), reason_names, link, ecc));
    s.json.push_back(std::move(j));
  }
  return s;
}

}  // namespace gpudoc::cli
