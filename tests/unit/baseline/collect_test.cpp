// Collecting a baseline's figures: one workload run (its own process group, timed from spawn to
// exit, stopped as a whole on a signal or a timeout), the files it uses (made new, never followed),
// the stored spec, and figures by the hundred thousand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "baseline/collect.hpp"
#include "baseline/compare.hpp"
#include "baseline/metrics_protocol.hpp"
#include "baseline/workload_run.hpp"
#include "core/clock.hpp"
#include "core/file.hpp"
#include "core/process_tree.hpp"
#include "core/temp_dir.hpp"
#include "gpu/fake/fake_backend.hpp"
#include "support/temp_dir.hpp"

namespace gpudoc::baseline {
namespace {

using ::testing::HasSubstr;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Alive: listed and not a zombie (an orphan waits for init to reap it).
bool process_alive(pid_t pid) {
  auto stat = core::read_file("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return false;
  auto s = core::parse_proc_stat(*stat);
  return s && s->state != 'Z';
}

class WorkloadRunTest : public ::testing::Test {
 protected:
  WorkloadOptions options() {
    WorkloadOptions o;
    o.metrics_path = tmp_.file("metrics-" + std::to_string(n_++) + ".jsonl");
    o.echo_to_stderr = true;  // keep the test's own stdout clean
    return o;
  }
  // The first line of a file the workload writes (its pid, ...), waiting up to 10 s for it.
  std::string wait_for_file(const std::string& path) {
    for (int i = 0; i < 1000; ++i) {
      std::ifstream f(path);
      std::string line;
      if (std::getline(f, line) && !line.empty()) return line;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return {};
  }
  testing::TempDir tmp_{"gpudoc-workload-run"};
  int n_ = 0;
};

TEST_F(WorkloadRunTest, FiguresFromStdoutAndTheMetricsFile) {
  auto run = run_workload(
      {"sh", "-c",
       "echo '::gpudoc {\"step_ms\": 4}'; echo hello; echo '{\"loss\": 0.5}' >> \"$GPUDOC_METRICS\"; exit 3"},
      options());
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(run->exit_code, 3);
  EXPECT_EQ(run->metrics.figures().at("step_ms"), std::vector<double>{4});
  EXPECT_EQ(run->metrics.figures().at("loss"), std::vector<double>{0.5});
  EXPECT_FALSE(run->stopped_by);
  EXPECT_TRUE(run->tree.count(run->pid) == 1);
}

// `enough`: after the work asked for, gpudoc stops the command's group; that is not a failure
// (work_done) nor a timeout, and the samples up to then are there. A hang guard only: the command
// would print for 60 s.
TEST_F(WorkloadRunTest, EnoughWorkStopsTheCommand) {
  WorkloadOptions o = options();
  o.stop_grace = std::chrono::milliseconds(500);
  o.timeout_s = 60;
  o.enough = [](const MetricsCollector& m) {
    const auto it = m.figures().find("step_ms");
    return it != m.figures().end() && it->second.size() >= 5;
  };
  const auto t0 = std::chrono::steady_clock::now();
  auto run = run_workload({"sh", "-c",
                           "i=0; while [ $i -lt 600 ]; do echo '::gpudoc {\"step_ms\": 2}'; i=$((i+1)); "
                           "sleep 0.1; done"},
                          o);
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_TRUE(run->work_done);
  EXPECT_FALSE(run->timed_out);
  EXPECT_GE(run->metrics.figures().at("step_ms").size(), 5u);
  EXPECT_LT(seconds_since(t0), 30.0);  // hang guard: normally ~0.6 s (five figures, then stopped)
}

// The command's environment, CPUs, stdout and stderr as the options say.
TEST_F(WorkloadRunTest, EnvironmentAndOutputsGoWhereAsked) {
  auto log = core::create_new_file(tmp_.file("log"));
  ASSERT_TRUE(log);
  WorkloadOptions o = options();
  o.extra_env = {"GPUDOC_TEST_TUNED=yes"};
  o.echo_fd = log->get();
  o.stderr_fd = log->get();
  auto run = run_workload({"sh", "-c", "echo '::gpudoc {\"v\": 1}'; echo \"env=$GPUDOC_TEST_TUNED\" >&2"}, o);
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(run->exit_code, 0);
  EXPECT_FALSE(run->work_done);
  const std::string text = wait_for_file(tmp_.file("log"));
  auto all = core::read_file(tmp_.file("log"));
  ASSERT_TRUE(all);
  EXPECT_THAT(*all, HasSubstr("::gpudoc {\"v\": 1}"));
  EXPECT_THAT(*all, HasSubstr("env=yes"));
  EXPECT_FALSE(text.empty());
}

// The workload leads its own process group: the terminal's Ctrl-C reaches gpudoc alone.
TEST_F(WorkloadRunTest, TheWorkloadRunsInItsOwnProcessGroup) {
  const std::string out = tmp_.file("pgid");
  auto run = run_workload(
      {"sh", "-c", "ps -o pgid= -p $$ > " + out + " 2>/dev/null || cut -d' ' -f5 /proc/$$/stat > " + out}, options());
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(std::stol(wait_for_file(out)), static_cast<long>(run->pid));
  EXPECT_NE(std::stol(wait_for_file(out)), static_cast<long>(::getpgrp()));
}

// A backend whose first reading of the machine takes `delay`, as NVML's start-up does on a real
// GPU (about a second); everything else is the fake's.
class SlowToStartBackend final : public gpu::Backend {
 public:
  SlowToStartBackend(gpu::Backend& inner, std::chrono::milliseconds delay) : inner_(inner), delay_(delay) {}
  std::string_view name() const override { return inner_.name(); }
  core::Result<gpu::SystemInfo> system_info() override {
    start_once();
    return inner_.system_info();
  }
  core::Result<int> device_count() override {
    start_once();
    return inner_.device_count();
  }
  core::Result<gpu::DeviceInfo> device_info(int gpu) override { return inner_.device_info(gpu); }
  core::Result<gpu::MetricSet> capabilities(int gpu) override { return inner_.capabilities(gpu); }
  core::Result<gpu::GroupReading> read(int gpu, gpu::MetricGroup group) override { return inner_.read(gpu, group); }
  core::Result<std::vector<gpu::DeviceEvent>> wait_events(core::Nanos timeout) override {
    return inner_.wait_events(timeout);
  }
  bool started() const { return started_.load(); }

 private:
  void start_once() {
    std::call_once(once_, [this] {
      std::this_thread::sleep_for(delay_);
      started_ = true;
    });
  }
  gpu::Backend& inner_;
  std::chrono::milliseconds delay_;
  std::once_flag once_;
  std::atomic<bool> started_{false};
};

// The start-up of the GPU recording (NVML's, ~1 s on an H200) happens before the workload is
// spawned and is not in its wall_s. Checked against the test's own clock, whatever the machine's
// speed: the start-up and the workload's run are disjoint parts of run_workload, so the whole call
// lasts at least wall_s plus the start-up; had wall_s counted the start-up, the call would last
// wall_s plus only the recorder's stop (at most its half-second cadence), less than the 1.2 s.
TEST_F(WorkloadRunTest, WallTimeLeavesOutTheRecordersStartUp) {
  constexpr double kStartUp = 1.2;
  core::SystemClock clock;
  gpu::FakeBackend fake(clock, 1);
  SlowToStartBackend slow(fake, std::chrono::milliseconds(1200));
  WorkloadOptions o = options();
  o.backend = &slow;
  o.trace_path = tmp_.file("trace.jsonl");
  const auto t0 = std::chrono::steady_clock::now();
  auto run = run_workload({"sleep", "0.2"}, o);
  const double call_s = seconds_since(t0);
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_TRUE(slow.started());
  EXPECT_GE(call_s, kStartUp + 0.2);  // the start-up did happen, inside run_workload
  EXPECT_GE(run->wall_s, 0.2);
  EXPECT_LE(run->wall_s + kStartUp, call_s) << "the recorder's start-up was counted";
}

// wall_s is the workload's own time, spawn to exit: not gpudoc's start-up, not the recorder's
// half-second cadence.
TEST_F(WorkloadRunTest, WallTimeIsFromSpawnToExitEvenWithTheGpusRecorded) {
  core::SystemClock clock;
  gpu::FakeBackend fake(clock, 2);
  WorkloadOptions o = options();
  o.backend = &fake;
  o.trace_path = tmp_.file("trace.jsonl");
  const auto t0 = std::chrono::steady_clock::now();
  auto run = run_workload({"sleep", "0.4"}, o);
  const double call_s = seconds_since(t0);
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_GE(run->wall_s, 0.4);
  EXPECT_LE(run->wall_s, call_s);  // inside the call: the recorder stops after it, up to 0.5 s later
  EXPECT_LT(run->wall_s, 4.0);     // hang guard: normally ~0.41 s; 10x+ margin
  EXPECT_TRUE(std::filesystem::exists(o.trace_path));
  auto text = core::read_file(o.trace_path);
  ASSERT_TRUE(text);
  EXPECT_THAT(*text, HasSubstr("\"end\""));  // a whole trace: the recording ended cleanly
}

// Asked to stop (Ctrl-C), gpudoc ends the workload's whole process group, children included, and
// keeps what it printed until then.
TEST_F(WorkloadRunTest, AStopSignalEndsTheWholeGroupAndKeepsWhatWasMeasured) {
  StopSignal stop;
  WorkloadOptions o = options();
  o.stop = &stop;
  const std::string pids = tmp_.file("pids");
  std::thread signaller([&] {
    wait_for_file(pids);
    stop.signal = SIGINT;
    stop.count = 1;
  });
  const auto t0 = std::chrono::steady_clock::now();
  auto run = run_workload({"sh", "-c",
                           "echo '::gpudoc {\"step_ms\": 7}'; sleep 60 & echo $! > " + pids + ".tmp; mv " + pids +
                               ".tmp " + pids + "; wait"},
                          o);
  signaller.join();
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_LT(seconds_since(t0), 5.0);  // hang guard: normally ~0.03 s (the sleep is 60 s); 10x+ margin
  EXPECT_EQ(run->stopped_by, SIGINT);
  EXPECT_EQ(run->metrics.figures().at("step_ms"), std::vector<double>{7});
  const pid_t sleeper = static_cast<pid_t>(std::stol(wait_for_file(pids)));
  EXPECT_FALSE(process_alive(sleeper)) << "the workload's child survived";
  EXPECT_TRUE(core::live_group_members(run->pid).empty()) << "the workload's process group survived";
}

// A workload that ignores SIGTERM is killed when the grace period ends (at once on a second
// signal).
TEST_F(WorkloadRunTest, SigkillAfterTheGracePeriod) {
  StopSignal stop;
  WorkloadOptions o = options();
  o.stop = &stop;
  o.stop_grace = std::chrono::milliseconds(300);
  const std::string ready = tmp_.file("ready");
  std::thread signaller([&] {
    wait_for_file(ready);
    stop.signal = SIGTERM;
    stop.count = 1;
  });
  const auto t0 = std::chrono::steady_clock::now();
  auto run = run_workload({"sh", "-c", "trap '' TERM; echo 1 > " + ready + "; while :; do sleep 0.05; done"}, o);
  signaller.join();
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_LT(seconds_since(t0), 5.0);  // hang guard: normally ~0.33 s (the 0.3 s grace); 10x+ margin
  EXPECT_EQ(run->stopped_by, SIGTERM);
  EXPECT_EQ(run->exit_code, 128 + SIGKILL);
}

TEST_F(WorkloadRunTest, ATimeoutStopsTheGroup) {
  WorkloadOptions o = options();
  o.timeout_s = 0.3;
  const auto t0 = std::chrono::steady_clock::now();
  auto run = run_workload({"sh", "-c", "sleep 30 & sleep 30"}, o);
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_TRUE(run->timed_out);
  EXPECT_LT(seconds_since(t0), 5.0);  // hang guard: normally ~0.32 s (the 0.3 s timeout); 10x+ margin
  EXPECT_TRUE(core::live_group_members(run->pid).empty());
}

// A ::gpudoc line over 1 MiB was dropped without a word.
TEST_F(WorkloadRunTest, AnOversizedMetricsLineIsNamedByItsLineNumber) {
  auto run =
      run_workload({"sh", "-c",
                    "echo first; printf '::gpudoc {\"a\": '; head -c 1100000 /dev/zero | tr '\\0' '1'; echo '}'; "
                    "echo '::gpudoc {\"b\": 2}'"},
                   options());
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(run->metrics.figures().count("a"), 0u);
  EXPECT_EQ(run->metrics.figures().at("b"), std::vector<double>{2});  // the line after it is read
  ASSERT_EQ(run->metrics.notes().size(), 1u);
  EXPECT_EQ(run->metrics.notes()[0].line, 2u);
  EXPECT_THAT(run->metrics.notes()[0].message, HasSubstr("1100016 bytes, over the 1 MiB limit"));
}

// The $GPUDOC_METRICS file is made new: something planted at its name is neither followed nor
// written.
TEST_F(WorkloadRunTest, AFilePlantedAtTheMetricsNameIsNeverFollowed) {
  const std::string victim = tmp_.file("victim");
  std::ofstream(victim) << "precious";
  WorkloadOptions o = options();
  std::filesystem::create_symlink(victim, o.metrics_path);
  auto run = run_workload({"true"}, o);
  ASSERT_FALSE(run);
  EXPECT_EQ(run.error().kind(), core::ErrorKind::kIo);
  EXPECT_THAT(run.error().message(), HasSubstr("already exists"));
  EXPECT_EQ(*core::read_file(victim), "precious");
}

TEST(CollectSpec, ArgumentsThatAreNotUtf8AreShownReplacedAndRunExactly) {
  CollectSpec s;
  s.command = {"python3", "caf\xe9.py", "--x"};
  const nlohmann::json j = to_json(s);
  const std::string dumped = j.dump();  // would throw on invalid UTF-8
  EXPECT_EQ(j["command"][1], "caf\xEF\xBF\xBD.py");
  auto back = spec_from_json(nlohmann::json::parse(dumped));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->command, s.command);
  EXPECT_FALSE(spec_from_json(nlohmann::json{{"device", "zero"}}));  // damaged: an error, not an exception
}

TEST(Collect, AStopBeforeTheStartRunsNothing) {
  testing::TempDir dir("gpudoc-collect");
  StopSignal stop;
  stop.signal = SIGHUP;
  CollectSpec spec;
  spec.command = {"sh", "-c", "touch " + dir.file("ran")};
  CollectEnv env;
  env.work_dir = dir.str();
  env.stop = &stop;
  auto got = collect(spec, {}, env);
  ASSERT_TRUE(got) << got.error().message();
  EXPECT_EQ(got->stopped_by, SIGHUP);
  EXPECT_TRUE(got->figures.empty());
  EXPECT_FALSE(std::filesystem::exists(dir.file("ran")));
}

// What the workload's runs cost: each run's trace accounted on the GPUs (fake ones here), the
// runs added up, the work its ::gpudoc lines reported counted; the split closes exactly.
TEST(Collect, EachWorkloadRunsCostIsAccountedAndTheRunsAddUp) {
  testing::TempDir dir("gpudoc-collect");
  core::SystemClock clock;
  gpu::FakeBackend fake(clock, 2);
  CollectSpec spec;
  spec.command = {"sh", "-c", "echo '::gpudoc {\"step\": 5, \"samples\": 64, \"tokens\": 8192}'; sleep 0.5"};
  spec.repeat = 2;
  CollectEnv env;
  env.backend = &fake;
  env.clock = &clock;
  env.work_dir = dir.str();
  env.echo_to_stderr = true;
  auto got = collect(spec, {}, env);
  ASSERT_TRUE(got) << got.error().message();
  ASSERT_TRUE(got->cost) << ::testing::PrintToString(got->notes);
  const cost::JobCost& c = *got->cost;
  EXPECT_EQ(c.runs, 2);
  ASSERT_EQ(c.gpus.size(), 4u);  // 2 GPUs x 2 runs (no process of the fake GPUs is the workload's)
  EXPECT_EQ(c.gpus[2].run, 2);
  EXPECT_DOUBLE_EQ(*c.work.steps, 10);
  EXPECT_DOUBLE_EQ(*c.work.samples, 128);
  EXPECT_DOUBLE_EQ(*c.work.tokens, 16384);
  for (const auto& g : c.gpus) {
    cost::Micros t = g.account.useful.time + g.account.unexplained.time;
    for (const auto& claim : g.account.claims) t += claim.got.time;
    EXPECT_EQ(t, g.account.gpu_time);
    EXPECT_GE(cost::seconds(g.account.gpu_time), 0.5);
    EXPECT_LT(cost::seconds(g.account.gpu_time), 10.0);  // hang guard: normally ~0.6 s
    EXPECT_TRUE(g.account.energy.has_value());
  }
  const cost::Summary s = cost::summarize(c, {});
  ASSERT_EQ(s.per_unit.size(), 3u);
  EXPECT_NEAR(s.per_unit[1].gpu_s, cost::seconds(s.total.time) / 128, 1e-12);
}

// 100k distinct names took 33 s: each sample scanned every figure so far (and compare every
// baseline figure). Now each is a hash lookup. Here: every name is kept, compared and confirmed
// once; the speed is tests/perf/baseline_figures.cpp's benchmark (its complexity fit over 10k to
// 100k names), and the CPU bound below only catches the quadratic scan coming back.
// CPU time of this process, seconds: what the work costs, whatever else the machine runs.
double cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

TEST(Scale, AHundredThousandDistinctNamesAreEachKeptComparedAndConfirmed) {
  constexpr int kNames = 100'000;
  const double cpu0 = cpu_seconds();
  MetricsCollector metrics;
  for (int line = 0; line < 100; ++line) {
    std::ostringstream os;
    os << "::gpudoc {";
    for (int k = 0; k < kNames / 100; ++k)
      os << (k ? ", " : "") << "\"m" << line * (kNames / 100) + k << "_ms\": " << k;
    os << "}";
    metrics.add_stdout_line(os.str(), static_cast<std::size_t>(line + 1));
  }
  ASSERT_EQ(metrics.figures().size(), static_cast<std::size_t>(kNames));
  FigureAccumulator figs;
  for (const auto& [name, samples] : metrics.figures())
    for (double v : samples) figs.add(name, "", "workload", std::nullopt, v);
  const std::vector<Figure> now = figs.figures();
  const Comparison c = compare(now, now, Config{});
  const Comparison confirmed = confirm(c, c);
  const double took = cpu_seconds() - cpu0;
  ASSERT_EQ(now.size(), static_cast<std::size_t>(kNames));
  for (const Figure& f : now) ASSERT_EQ(f.samples.size(), 1u) << f.name;
  EXPECT_EQ(c.figures.size(), static_cast<std::size_t>(kNames));
  EXPECT_EQ(confirmed.figures.size(), static_cast<std::size_t>(kNames));
  EXPECT_FALSE(confirmed.failed());
  EXPECT_LT(took, 20.0);  // hang guard: normally ~1 s of CPU, the quadratic scan 33 s; 10x+ margin
}

TEST(FigureAccumulator, SamplesAddUpByNameInFirstSeenOrder) {
  FigureAccumulator f;
  f.add("b", "ms", "workload", std::nullopt, 1);
  f.add("a", "", "workload", std::nullopt, 2);
  f.add("b", "ms", "workload", std::nullopt, 3);
  f.add_figure({"a", "", "workload", std::nullopt, {4, 5}});
  ASSERT_EQ(f.figures().size(), 2u);
  EXPECT_EQ(f.figures()[0].name, "b");
  EXPECT_EQ(f.figures()[0].samples, (std::vector<double>{1, 3}));
  EXPECT_EQ(f.figures()[1].samples, (std::vector<double>{2, 4, 5}));
}

}  // namespace
}  // namespace gpudoc::baseline
