// gpudoc::tune launch — the job's command line and environment with a set of changes on: for a
// trial (the shim from gpudoc's private copy), and as the lines a person runs to apply them
// (`python3 -m gpudoc.tune ...`, `taskset -c ...`, exports). Pure: no I/O.
//
//   auto py = tune::python_command({"python3", "-u", "train.py", "--epochs", "1"}, &why);   // the shim can run it
//   tune::Launch l = tune::launch_with(command, kept, shim_file);     // argv, env, CPUs of a trial
//   for (auto& line : tune::apply_lines(command, kept)) ...            // "export OMP_NUM_THREADS=8", ...
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tune/changes.hpp"

namespace gpudoc::tune {

// A Python program as the shim starts it: the interpreter with its own options, then the script
// and its arguments, or -m MODULE and its arguments.
struct PythonCommand {
  std::vector<std::string> interpreter{};  // "python3", "-u"
  std::vector<std::string> program{};      // "train.py", "--epochs", "1"  or  "-m", "pkg.train", ...
};
// The command as a Python program the shim can start (`python[3[.X]] [OPTIONS] SCRIPT|-m MODULE ...`);
// nullopt with `why_not` said otherwise (another launcher, `python -c`, no program).
[[nodiscard]] std::optional<PythonCommand> python_command(const std::vector<std::string>& command,
                                                          std::string* why_not);

struct Launch {
  std::vector<std::string> argv{};
  std::vector<std::string> env{};  // "NAME=VALUE", added to gpudoc's environment
  std::vector<int> cpus{};         // empty: as gpudoc's
};

// The job with `changes` on, kAlwaysEnv included. Shim patches run the program under the shim at
// `shim_file` (a trial's private copy); empty: `-m gpudoc.tune`, the installed module.
// Precondition: changes with patches only for a command python_command accepts.
[[nodiscard]] Launch launch_with(const std::vector<std::string>& command, const std::vector<Change>& changes,
                                 const std::string& shim_file = "");

// The shim's patches of `changes`, merged ("workers=8,pin_memory"); a later value of a patch wins.
[[nodiscard]] std::string merged_patches(const std::vector<Change>& changes);

// What a person runs to apply `changes` to `command`: one `export NAME=VALUE` line per variable, then
// the command line (with `taskset -c LIST` and the shim when they are part of it), shell-quoted.
[[nodiscard]] std::vector<std::string> apply_lines(const std::vector<std::string>& command,
                                                   const std::vector<Change>& changes);

// The same as one command (`env NAME=VALUE ... [taskset -c LIST] CMD...`), for a baseline of the
// tuned job: the gate then runs the job as tuned.
[[nodiscard]] std::vector<std::string> launcher_argv(const std::vector<std::string>& command,
                                                     const std::vector<Change>& changes);

// A word as a POSIX shell reads it back: bare when it holds only safe characters, else in single quotes.
[[nodiscard]] std::string shell_quote(std::string_view word);
[[nodiscard]] std::string shell_line(const std::vector<std::string>& words);

}  // namespace gpudoc::tune
