// gpudoc::core::ChildProcess — runs a user's command beside gpudoc, output untouched.
//
//   auto child = core::ChildProcess::spawn({"python3", "train.py"});   // inherits stdio and env
//   while (!child->poll()) { ... }                                     // non-blocking
//   int code = child->exit_code_for_shell();                           // 0..255, 128+N if killed by signal N
//
//   auto w = core::ChildProcess::spawn(argv, core::workload_spawn_options());   // a workload: its own
//   core::GroupStopper stop;                    // process group, stopped as a whole by the stop
//   stop.finish(*w, [] { return false; });      // policy (below): SIGTERM, later SIGKILL
//
// Errors: kBadInput when the command is not found or not executable (with its name); kEnvironment
// when SpawnOptions::cpu_affinity names CPUs this process may not use.
// Thread-safety: one ChildProcess is used from one thread at a time.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace gpudoc::core {

struct SpawnOptions {
  // "NAME=VALUE" entries added to gpudoc's environment; one replaces a variable of the same name.
  std::vector<std::string> extra_env;
  // The child's stdout goes to gpudoc's stderr (when gpudoc's own stdout must stay one clean
  // document, e.g. `diagnose --json -- CMD`).
  bool stdout_to_stderr = false;
  // When >= 0: the child's stdout is this descriptor (e.g. a pipe gpudoc reads). Wins over
  // stdout_to_stderr. gpudoc keeps its own copy; close it after spawn() to see the pipe's end.
  int stdout_fd = -1;
  // The child leads a new process group (its group id is its pid): a signal from the terminal
  // reaches gpudoc only, and signal_group() reaches the child and everything it started.
  bool new_process_group = false;
  // The child's stdin is /dev/null (a child outside the terminal's foreground group that read
  // the terminal would be stopped by SIGTTIN for ever).
  bool stdin_from_null = false;
  // When >= 0: the child's stderr is this descriptor (a log gpudoc reads back). gpudoc keeps its
  // own copy.
  int stderr_fd = -1;
  // When not empty: the only CPUs the child may run on (its affinity mask, as `taskset -c` sets it,
  // inherited by every thread and process it starts). The mask is set on the spawning thread for
  // the spawn alone (posix_spawn's child starts with its parent thread's mask), so no thread of the
  // child ever runs elsewhere, and put back before spawn() returns.
  std::vector<int> cpu_affinity{};
};

class ChildProcess {
 public:
  [[nodiscard]] static Result<ChildProcess> spawn(const std::vector<std::string>& argv, const SpawnOptions& options);
  // stdout_to_stderr: see SpawnOptions.
  [[nodiscard]] static Result<ChildProcess> spawn(const std::vector<std::string>& argv,
                                                  const std::vector<std::string>& extra_env = {},
                                                  bool stdout_to_stderr = false);
  [[nodiscard]] pid_t pid() const { return pid_; }
  // True once the child has exited (reaps it). Never blocks.
  bool poll();
  // Blocks until the child exits.
  void wait();
  // Sends a signal; no-op after exit.
  void signal(int sig) const;
  // Sends a signal to the child's process group (spawned with new_process_group; otherwise the
  // same as signal()). Also after the child itself exited: what it started in the background may
  // still run. Returns false when no process of the group is left (ESRCH). Whether the group is
  // gone, zombies aside: core::live_group_members(pid()) (process_tree.hpp).
  bool signal_group(int sig) const;
  [[nodiscard]] bool exited() const { return status_.has_value(); }
  // Exit code as a shell reports it: the code, or 128 + signal number. Precondition: exited().
  [[nodiscard]] int exit_code_for_shell() const;
  [[nodiscard]] std::optional<int> exit_code() const;    // absent when killed by a signal
  [[nodiscard]] std::optional<int> term_signal() const;  // absent when it exited normally

 private:
  ChildProcess(pid_t pid, bool own_group) : pid_(pid), own_group_(own_group) {}
  pid_t pid_ = -1;
  bool own_group_ = false;
  std::optional<int> status_;
};

// The stop policy of every command that runs a workload or records (README.md, "Signals"):
// SIGHUP, SIGINT and SIGTERM ask gpudoc to stop (cli::install_stop_handlers stores them in a
// StopSignal); the workload's whole process group gets SIGTERM, then SIGKILL kStopGrace later or
// at once on a second signal (GroupStopper); what gpudoc writes is closed (a trace gets its end
// line), its private folders are removed, and it exits exit_code_for_signal(N), 128 + N.
struct StopSignal {
  std::atomic<int> signal{0};  // the first stop signal's number (SIGINT, SIGTERM, SIGHUP); 0: none
  std::atomic<int> count{0};   // how many came; a second one skips the grace period
};
inline constexpr std::chrono::milliseconds kStopGrace{5000};
[[nodiscard]] constexpr int exit_code_for_signal(int sig) noexcept { return 128 + sig; }

// Stops a child spawned with new_process_group, and every process of its group, by the policy:
//
//   core::GroupStopper stopper;
//   while (!child.poll()) if (asked) stopper.step(child, asked_twice);   // SIGTERM, later SIGKILL
//   if (stopper.started()) stopper.finish(child, [&] { return asked_twice; });
//
// Not thread-safe: one thread drives it.
class GroupStopper {
 public:
  explicit GroupStopper(std::chrono::milliseconds grace = kStopGrace) : grace_(grace) {}
  // The first call sends SIGTERM to the group (and to each of `also`, processes of the workload
  // that left its group); a later one sends SIGKILL once the grace period has passed, or at once
  // when `hurry` (a second stop request), and again every second while anything is left.
  void step(const ChildProcess& child, bool hurry, const std::set<pid_t>& also = {});
  [[nodiscard]] bool started() const { return kill_at_.has_value(); }
  // Whether the child was reaped and no process of its group is left (zombies aside); also true
  // 2 s after the first SIGKILL, so that an unkillable process (stuck in the kernel) cannot hold
  // gpudoc for ever.
  [[nodiscard]] bool done(const ChildProcess& child) const;
  // step() until done(): returns when the child is reaped and its group is gone (or given up).
  void finish(ChildProcess& child, const std::function<bool()>& hurry);

 private:
  std::chrono::milliseconds grace_;
  std::optional<std::chrono::steady_clock::time_point> kill_at_;     // the next SIGKILL
  std::optional<std::chrono::steady_clock::time_point> first_kill_;  // when the first SIGKILL went
};

// The spawn options of a workload gpudoc stops by the policy above: its own process group (the
// terminal's Ctrl-C reaches gpudoc alone, and GroupStopper reaches everything it started), and
// stdin /dev/null when gpudoc's stdin is a terminal (outside the terminal's foreground group, a
// read of it would stop the workload for ever).
[[nodiscard]] SpawnOptions workload_spawn_options();

// A signal's name as people know it ("SIGINT", "SIGTERM"); "signal N" for one without a name here.
[[nodiscard]] std::string signal_name(int sig);

}  // namespace gpudoc::core
