#include "baseline/workload_run.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <mutex>
#include <thread>

#include "core/clock.hpp"
#include "core/file.hpp"
#include "core/line_tap.hpp"
#include "core/process.hpp"
#include "core/process_tree.hpp"
#include "core/temp_dir.hpp"
#include "core/utf8.hpp"
#include "telemetry/recorder.hpp"

namespace gpudoc::baseline {

namespace {

using SteadyClock = std::chrono::steady_clock;

// The command's stdout through a core::LineTap: ::gpudoc lines to the run's collector (and its
// events), every byte passed on to `echo_fd`.
class StdoutTap {
 public:
  StdoutTap(WorkloadRun& run, int echo_fd, std::function<bool(const MetricsCollector&)> enough = {})
      : run_(run),
        enough_(std::move(enough)),
        tap_(echo_fd,
             {.line = [this](std::string_view line, std::size_t n) { handle(line, n); },
              .oversized = [this](std::string_view head, std::size_t n,
                                  std::size_t bytes) { run_.metrics.add_oversized_stdout_line(head, n, bytes); },
              .max_line_bytes = kMaxMetricsLineBytes,
              .head_bytes = kMetricsPrefix.size()}) {}

  core::Status open() { return tap_.open(); }
  [[nodiscard]] int write_end() const { return tap_.write_end(); }
  [[nodiscard]] const std::atomic<bool>& work_done() const { return work_done_; }
  void close_write_end() { tap_.close_write_end(); }
  void signal_resizes_to(pid_t group) { tap_.signal_resizes_to(group); }
  void finish() { tap_.finish(); }

 private:
  void handle(std::string_view line, std::size_t line_no) {
    run_.metrics.add_stdout_line(line, line_no);
    if (line.substr(0, kMetricsPrefix.size()) != kMetricsPrefix) return;
    if (enough_ && !work_done_.load() && enough_(run_.metrics)) work_done_ = true;
    if (run_.events.size() >= 1000) return;
    const std::string body = core::to_valid_utf8(line.substr(kMetricsPrefix.size()));
    auto j = nlohmann::json::parse(body, nullptr, false);
    if (j.is_object() && j.contains("event")) run_.events.push_back(std::move(j));
  }

  WorkloadRun& run_;
  std::function<bool(const MetricsCollector&)> enough_;
  std::atomic<bool> work_done_{false};
  core::LineTap tap_;  // last: its thread stops (destructor) before the members it calls go
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

// The GPUs recorded into a trace on a thread of its own while the command runs: started (and
// sampling) before the command is spawned, so neither the recorder's start-up nor its stop is
// counted in the command's time.
class GpuRecording {
 public:
  GpuRecording(gpu::Backend* backend, core::Clock* clock, std::string path)
      : backend_(backend), clock_(clock != nullptr ? clock : &system_clock_), path_(std::move(path)) {}
  GpuRecording(const GpuRecording&) = delete;
  GpuRecording& operator=(const GpuRecording&) = delete;
  ~GpuRecording() { (void)stop(); }

  core::Status start() {
    if (backend_ == nullptr) return {};
    thread_ = std::thread([this] {
      telemetry::RecordOptions opt;
      opt.output_path = path_;
      opt.sampler = baseline_sampler_config();
      opt.on_started = [this] {
        std::lock_guard<std::mutex> lock(mu_);
        started_ = true;
        cv_.notify_all();
      };
      auto r = telemetry::record(*backend_, *clock_, opt, stop_);
      std::lock_guard<std::mutex> lock(mu_);
      if (!r) error_ = r.error().with_context("recording the GPUs");
      done_ = true;
      cv_.notify_all();
    });
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return started_ || done_; });
    if (!started_ && error_) {
      lock.unlock();
      return stop();
    }
    return {};
  }

  // Ends the recording (within the recorder's half-second cadence) and reports its error, if any.
  core::Status stop() {
    if (!thread_.joinable()) return {};
    stop_.store(1);
    thread_.join();
    if (error_) return *error_;
    return {};
  }

 private:
  gpu::Backend* backend_;
  core::SystemClock system_clock_;
  core::Clock* clock_;
  std::string path_;
  std::atomic<int> stop_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool started_ = false, done_ = false;
  std::optional<core::Error> error_;
  std::thread thread_;
};

// Waits for the command to exit while it watches its process tree, the timeout and the stop
// signal. Returns when the command exited (and, when gpudoc stopped it, its whole group is gone
// or cannot be stopped). Returns the time of the exit as first seen (every 5 ms).
SteadyClock::time_point supervise(core::ChildProcess& child, const WorkloadOptions& o, WorkloadRun& run,
                                  const std::atomic<bool>& work_done) {
  const auto start = SteadyClock::now();
  std::optional<SteadyClock::time_point> deadline, exit_seen;
  if (o.timeout_s > 0)
    deadline = start + std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(o.timeout_s));
  auto last_scan = start - std::chrono::seconds(1);
  std::set<pid_t> current{child.pid()};
  run.tree.insert(child.pid());
  // The group, and every process of the tree (one may have left the group).
  core::GroupStopper stopper(o.stop_grace);
  while (true) {
    const bool exited = child.poll();
    const auto now = SteadyClock::now();
    if (exited && !exit_seen) exit_seen = now;
    if (now - last_scan >= std::chrono::milliseconds(100)) {
      current = core::descendants_of(::getpid());
      run.tree.insert(current.begin(), current.end());
      last_scan = now;
    }
    if (o.stop != nullptr && !run.stopped_by && o.stop->signal.load() != 0) run.stopped_by = o.stop->signal.load();
    if (!exited && work_done.load() && !run.stopped_by && !run.timed_out) run.work_done = true;
    if (deadline && now >= *deadline && !run.stopped_by && !run.work_done) run.timed_out = true;
    // SIGTERM, SIGKILL after the grace period; at once when asked twice
    if (run.stopped_by || run.timed_out || run.work_done)
      stopper.step(child, run.stopped_by && o.stop->count.load() >= 2, current);
    // Stopped by gpudoc: the group goes with the command (bounded: an unkillable process is left).
    if (exited &&
        (!stopper.started() || stopper.done(child) || now - *exit_seen > o.stop_grace + std::chrono::seconds(2)))
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return *exit_seen;
}

}  // namespace

core::Result<WorkloadRun> run_workload(const std::vector<std::string>& argv, const WorkloadOptions& o) {
  WorkloadRun run;
  core::SpawnOptions spawn = core::workload_spawn_options();  // its own process group, stdin not the terminal
  if (!o.metrics_path.empty()) {
    auto made = core::create_new_file(o.metrics_path);
    if (!made) return made.error().with_context("making the $GPUDOC_METRICS file");
    spawn.extra_env.push_back("GPUDOC_METRICS=" + o.metrics_path);
  }
  spawn.extra_env.insert(spawn.extra_env.end(), o.extra_env.begin(), o.extra_env.end());
  spawn.cpu_affinity = o.cpu_affinity;
  spawn.stderr_fd = o.stderr_fd;
  StdoutTap tap(run, o.echo_fd >= 0 ? o.echo_fd : (o.echo_to_stderr ? STDERR_FILENO : STDOUT_FILENO), o.enough);
  if (auto st = tap.open(); !st) return st.error();
  GpuRecording recording(o.backend, o.clock, o.trace_path);
  if (auto st = recording.start(); !st) return st.error();

  spawn.stdout_fd = tap.write_end();
  const auto t0 = SteadyClock::now();
  auto child = core::ChildProcess::spawn(argv, spawn);
  tap.close_write_end();  // the command holds the only write end now: its exit ends the pipe
  if (!child) return child.error();
  run.pid = child->pid();
  tap.signal_resizes_to(child->pid());
  const auto t1 = supervise(*child, o, run, tap.work_done());
  run.wall_s = std::chrono::duration<double>(t1 - t0).count();
  run.exit_code = child->exit_code_for_shell();
  auto recorded = recording.stop();
  tap.finish();
  if (!recorded) return recorded.error();
  if (!o.metrics_path.empty()) {
    // 64 MiB is a million samples; a workload that writes more is refused, not read into memory.
    auto text = core::read_file(o.metrics_path, {.max_bytes = 64 << 20, .what = "a workload's metrics file"});
    std::remove(o.metrics_path.c_str());
    if (!text && text.error().kind() == core::ErrorKind::kBadInput)
      return text.error().with_context("reading $GPUDOC_METRICS");
    if (text) run.metrics.add_file_text(*text, "$GPUDOC_METRICS");
  }
  return run;
}

}  // namespace gpudoc::baseline
