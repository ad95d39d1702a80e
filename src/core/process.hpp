// gpudoc::core::ChildProcess — runs a user's command beside gpudoc, output untouched.
//
//   auto child = core::ChildProcess::spawn({"python3", "train.py"});   // inherits stdio and env
//   while (!child->poll()) { ... }                                     // non-blocking
//   int code = child->exit_code_for_shell();                           // 0..255, 128+N if killed by signal N
//
// Errors: kBadInput when the command is not found or not executable (with its name).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace gpudoc::core {

class ChildProcess {
 public:
  // stdout_to_stderr: the child's stdout goes to gpudoc's stderr (when gpudoc's own stdout must
  // stay one clean document, e.g. `diagnose --json -- CMD`).
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
  [[nodiscard]] bool exited() const { return status_.has_value(); }
  // Exit code as a shell reports it: the code, or 128 + signal number. Precondition: exited().
  [[nodiscard]] int exit_code_for_shell() const;
  [[nodiscard]] std::optional<int> exit_code() const;      // absent when killed by a signal
  [[nodiscard]] std::optional<int> term_signal() const;    // absent when it exited normally

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  pid_t pid_ = -1;
  std::optional<int> status_;
};

}  // namespace gpudoc::core
