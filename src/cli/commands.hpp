// gpudoc::cli — the gpudoc executable: one file per subcommand, registered here.
//
// Each cmd_*.cpp adds its subcommand to the CLI11 app and, when that subcommand is chosen, sets
// `action` to the function that runs it. main.cpp calls run(); run() parses, runs the action and
// turns its result into the documented exit code (0 ok, 1 finding, 2 usage/bad input,
// 3 environment, 4 internal).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "telemetry/backend_source.hpp"

namespace gpudoc::cli {

class Command;

// What run() hands every command that reads GPUs, when it registers it: the backend chosen once
// for the run (--backend, GPUDOC_BACKEND), opened when the command first asks for it.
struct Context {
  telemetry::BackendSource backend;
};

using Action = std::function<int()>;

int run(int argc, char** argv);

// The words after the first `--` of the command line run() was given (empty without one). CLI11
// puts them among a subcommand's positionals like any other word; a command whose positionals
// can be both its own arguments and a command to run (diagnose TRACE... / -- CMD) tells them
// apart with this.
[[nodiscard]] const std::vector<std::string>& words_after_double_dash();

// Every command, under gpudoc (Command::root), setting `action` to the one the command line chooses.
void register_commands(Command& gpudoc, Action& action, Context& ctx);
// The commands that read GPUs get the Context; the others never touch a GPU.
void register_record(Command& gpudoc, Action& action, Context& ctx);
void register_watch(Command& gpudoc, Action& action, Context& ctx);
void register_trace(Command& gpudoc, Action& action);
void register_bench(Command& gpudoc, Action& action, Context& ctx);
void register_baseline(Command& gpudoc, Action& action, Context& ctx);
// baseline's subcommands that only read the store (list, show, history), and the flags every
// baseline subcommand has (--store, --json).
void register_baseline_store(Command& baseline, Action& action);
void add_baseline_store_flags(Command& cmd, std::optional<std::string>& store, bool& json);
void register_diagnose(Command& gpudoc, Action& action, Context& ctx);
void register_doctor(Command& gpudoc, Action& action, Context& ctx);
void register_health(Command& gpudoc, Action& action, Context& ctx);
void register_guard(Command& gpudoc, Action& action, Context& ctx);
void register_serve(Command& gpudoc, Action& action, Context& ctx);
void register_report(Command& gpudoc, Action& action);
void register_profile(Command& gpudoc, Action& action);
void register_tune(Command& gpudoc, Action& action, Context& ctx);
void register_slice(Command& gpudoc, Action& action);

// Prints an error for a person (stderr) or, with json, as {"error": {...}} on stdout, and returns
// the exit code for its kind.
int report_error(const core::Error& error, bool json);
// report_error for a usage error (exit 2): flags that contradict each other, a missing argument.
int usage_error(const std::string& message, bool json);

}  // namespace gpudoc::cli
