// The stop signals of every command that runs a workload or records (README "Signals"), end to end
// with the real binary on the fake backend: SIGHUP, SIGTERM and SIGINT sent to gpudoc stop the
// workload's whole process group (a shell and its background child), a trace gpudoc writes ends
// with its end line (reason "interrupted"), no private temporary folder of gpudoc is left, and
// gpudoc exits 128 + the signal. A workload that ignores SIGTERM is killed after the grace period.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_runner.hpp"
#include "core/file.hpp"
#include "core/process_tree.hpp"
#include "support/temp_dir.hpp"

extern char** environ;

namespace gpudoc::testing {
namespace {

namespace fs = std::filesystem;

const char* name_of(int sig) { return sig == SIGHUP ? "SIGHUP" : sig == SIGINT ? "SIGINT" : "SIGTERM"; }

// The process group of a live process, from /proc/PID/stat; 0 when it cannot be read.
pid_t group_of(pid_t pid) {
  auto stat = core::read_file("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return 0;
  auto s = core::parse_proc_stat(*stat);
  return s ? s->group : 0;
}

// Whether a process still runs (a zombie has exited: it is only not reaped yet by its new parent).
bool alive(pid_t pid) {
  auto stat = core::read_file("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return false;
  auto s = core::parse_proc_stat(*stat);
  return s && s->state != 'Z';
}

class Signals : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directory(temp_);
    // The workload: a background sleep (its pid in READY.bg), then the shell's pid in READY, then a
    // sleep in the foreground: a job that would run for a quarter of an hour.
    workload_ = script("workload.sh",
                       "sleep 1000 & echo $! > \"$1.bg\"\n"
                       "echo $$ > \"$1\"\n"
                       "sleep 1000\n");
    // The same, deaf to SIGTERM (an ignored signal stays ignored in what it runs).
    deaf_ = script("deaf.sh",
                   "trap '' TERM\n"
                   "sleep 1000 & echo $! > \"$1.bg\"\n"
                   "echo $$ > \"$1\"\n"
                   "sleep 1000\n");
  }
  void TearDown() override {
    for (pid_t g : groups_)  // what a failed test left running: the workloads' groups, then gpudoc
      if (!core::live_group_members(g).empty()) ::kill(-g, SIGKILL);
    for (pid_t p : started_)
      if (alive(p)) ::kill(p, SIGKILL);
  }
  std::string script(const std::string& name, const std::string& body) {
    const std::string path = tmp_.file(name);
    std::ofstream(path) << "#!/bin/sh\n" << body;
    fs::permissions(path, fs::perms::owner_all);
    return path;
  }

  // gpudoc in the background, in a process group of its own (as a shell's job), its output in a
  // file, with TMPDIR a folder of this test only and the GPUs fake.
  pid_t launch(const std::vector<std::string>& args, const std::vector<std::string>& env_add = {}) {
    std::vector<std::string> env_words(env_add);
    env_words.push_back("TMPDIR=" + temp_);
    env_words.push_back("GPUDOC_BACKEND=fake:1");
    env_words.push_back("GPUDOC_STORE=" + tmp_.file("store.db"));
    const std::set<std::string> unset = {"TMPDIR",
                                         "GPUDOC_BACKEND",
                                         "GPUDOC_STORE",
                                         "XDG_RUNTIME_DIR",
                                         "CUDA_INJECTION64_PATH",
                                         "CUDA_MPS_PIPE_DIRECTORY",
                                         "CUDA_VISIBLE_DEVICES"};
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string entry(*e);
      if (unset.count(entry.substr(0, entry.find('='))) == 0) env_words.push_back(entry);
    }
    std::vector<std::string> words{gpudoc_binary()};
    words.insert(words.end(), args.begin(), args.end());
    const std::string out = out_path();
    const pid_t pid = ::fork();
    if (pid != 0) return pid;
    ::setpgid(0, 0);
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int null = ::open("/dev/null", O_RDONLY);
    ::dup2(null, STDIN_FILENO);
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    std::vector<char*> argv, envp;
    for (auto& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    for (auto& e : env_words) envp.push_back(e.data());
    envp.push_back(nullptr);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  std::string out_path() const { return tmp_.file("out.txt"); }

  // Runs gpudoc with `args` (the workload's ready file appended last), waits for the workload,
  // sends `sig` and checks the policy: exit 128 + sig, the workload's group and both its processes
  // gone, no temporary folder of gpudoc left. With `workload` empty, gpudoc records alone and is
  // signalled once `trace` has its header.
  void stop_and_check(int sig, std::vector<std::string> args, const std::string& workload,
                      const std::vector<std::string>& env_add = {}, const std::string& trace = {}) {
    SCOPED_TRACE(name_of(sig));
    const std::string ready = tmp_.file(std::string("ready-") + name_of(sig) + "-" + std::to_string(++runs_));
    if (!workload.empty()) {
      args.push_back(workload);
      args.push_back(ready);
    }
    const pid_t pid = launch(args, env_add);
    started_.push_back(pid);
    pid_t shell = 0, background = 0, group = 0;
    if (!workload.empty()) {
      const std::string line = wait_for_line(ready);
      ASSERT_FALSE(line.empty()) << "the workload never started: " << slurp(out_path());
      shell = std::stoi(line);
      background = std::stoi(wait_for_line(ready + ".bg"));
      group = group_of(shell);
      started_.insert(started_.end(), {shell, background});
      ASSERT_NE(group, 0);
      groups_.push_back(group);
    } else {
      ASSERT_FALSE(wait_for_line(trace).empty()) << "no trace header: " << slurp(out_path());
    }
    ::kill(pid, sig);
    const int code = wait_exit(pid);
    EXPECT_EQ(code, 128 + sig) << slurp(out_path());
    if (!workload.empty()) {
      EXPECT_TRUE(core::live_group_members(group).empty()) << "the workload's process group " << group << " survived";
      EXPECT_FALSE(alive(shell)) << "the workload's shell survived";
      EXPECT_FALSE(alive(background)) << "the workload's background child survived";
    }
    std::vector<std::string> left;
    for (const auto& e : fs::directory_iterator(temp_))
      if (e.path().filename().string().rfind("gpudoc-", 0) == 0) left.push_back(e.path().filename().string());
    EXPECT_TRUE(left.empty()) << "temporary folder left: " << left.front();
  }

  // The trace is valid and closed: every line JSON, a header first, an end line last with its four
  // fields, reason "interrupted"; `gpudoc trace info` reads it.
  void expect_closed_trace(const std::string& path) {
    std::istringstream in(slurp(path));
    std::string line;
    std::vector<nlohmann::json> lines;
    while (std::getline(in, line)) {
      lines.push_back(nlohmann::json::parse(line, nullptr, false));
      ASSERT_FALSE(lines.back().is_discarded()) << "not JSON: " << line;
    }
    ASSERT_GE(lines.size(), 2u) << slurp(path);
    EXPECT_EQ(lines.front()["type"], "header");
    const auto& end = lines.back();
    EXPECT_EQ(end["type"], "end") << end.dump();
    for (const char* k : {"t", "sample_lines", "dropped_records", "reason"}) EXPECT_TRUE(end.contains(k)) << k;
    EXPECT_EQ(end["reason"], "interrupted") << end.dump();
    const CliRun info = run_gpudoc("trace info " + path);
    EXPECT_EQ(info.exit_code, 0) << info.output;
  }

  TempDir tmp_{"gpudoc-signals-test"};
  std::string temp_ = tmp_.file("tmp");  // gpudoc's TMPDIR
  std::string workload_, deaf_;
  std::vector<pid_t> started_, groups_;
  int runs_ = 0;
};

constexpr int kSignals[] = {SIGHUP, SIGTERM, SIGINT};

TEST_F(Signals, RecordWithAWorkloadStopsItsGroupAndClosesTheTrace) {
  for (int sig : kSignals) {
    const std::string trace = tmp_.file(std::string("record-") + name_of(sig) + ".jsonl");
    stop_and_check(sig, {"record", "-q", "-o", trace, "--"}, workload_);
    expect_closed_trace(trace);
  }
}

TEST_F(Signals, RecordWithoutAWorkloadClosesTheTrace) {
  for (int sig : kSignals) {
    const std::string trace = tmp_.file(std::string("alone-") + name_of(sig) + ".jsonl");
    stop_and_check(sig, {"record", "-q", "-o", trace}, "", {}, trace);
    expect_closed_trace(trace);
  }
}

TEST_F(Signals, DiagnoseWithAWorkloadStopsItsGroupAndRemovesItsTemporaryTrace) {
  for (int sig : kSignals) {
    stop_and_check(sig, {"diagnose", "-q", "--"}, workload_);  // the trace in a private folder
    const std::string trace = tmp_.file(std::string("diagnose-") + name_of(sig) + ".jsonl");
    stop_and_check(sig, {"diagnose", "-q", "-o", trace, "--"}, workload_);
    expect_closed_trace(trace);
  }
}

TEST_F(Signals, GuardWithAWorkloadActsOnOneSignal) {
  for (int sig : kSignals) {
    const std::string log = tmp_.file(std::string("guard-") + name_of(sig) + ".jsonl");
    stop_and_check(sig, {"guard", "-q", "--no-store", "--log", log, "--"}, workload_);
    std::istringstream in(slurp(log));
    std::string line, last;
    while (std::getline(in, line)) last = line;
    const auto end = nlohmann::json::parse(last, nullptr, false);
    EXPECT_EQ(end.value("type", ""), "end") << last;
    EXPECT_EQ(end.value("reason", ""), "interrupted") << last;
  }
}

TEST_F(Signals, SliceWithAWorkloadStopsItsGroupAndRemovesItsFolder) {
  for (int sig : kSignals)
    stop_and_check(sig, {"slice", "-q", "--mem", "64M", "--"}, workload_,
                   {std::string("LD_LIBRARY_PATH=") + GPUDOC_FAKE_CUDA_DIR});
}

TEST_F(Signals, ProfileWithAWorkloadStopsItsGroupAndRemovesItsFolder) {
  // The workload never loads CUDA: any readable file stands for the injection library and CUPTI.
  for (int sig : kSignals)
    stop_and_check(sig, {"profile", "--"}, workload_,
                   {"GPUDOC_PROFILE_LIBRARY=/dev/null", "GPUDOC_CUPTI_LIBRARY=/dev/null"});
}

TEST_F(Signals, AWorkloadThatIgnoresSigtermIsKilledAfterTheGracePeriod) {
  const std::string trace = tmp_.file("deaf.jsonl");
  stop_and_check(SIGTERM, {"record", "-q", "-o", trace, "--"}, deaf_);
  expect_closed_trace(trace);
  stop_and_check(SIGHUP, {"guard", "-q", "--no-store", "--"}, deaf_);
}

}  // namespace
}  // namespace gpudoc::testing
