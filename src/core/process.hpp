// gpudoc::core::ChildProcess — runs a user's command beside gpudoc, output untouched.
//
//   auto child = core::ChildProcess::spawn({"python3", "train.py"});   // inherits stdio and env
//   while (!child->poll()) { ... }                                     // non-blocking
//   int code = child->exit_code_for_shell();                           // 0..255, 128+N if killed by signal N
//
//   core::SpawnOptions o;                       // a workload gpudoc must be able to stop as a whole:
//   o.new_process_group = true;                 // its own process group (the terminal's Ctrl-C
//   auto w = core::ChildProcess::spawn(argv, o);   // reaches gpudoc alone), stopped with
//   w->signal_group(SIGTERM);                   // signal_group()
//
// Errors: kBadInput when the command is not found or not executable (with its name).
// Thread-safety: one ChildProcess is used from one thread at a time.
#pragma once

#include <sys/types.h>

#include <optional>
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

// A signal's name as people know it ("SIGINT", "SIGTERM"); "signal N" for one without a name here.
[[nodiscard]] std::string signal_name(int sig);

}  // namespace gpudoc::core
