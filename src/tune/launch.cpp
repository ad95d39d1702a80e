#include "tune/launch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <regex>

namespace gpudoc::tune {

std::optional<PythonCommand> python_command(const std::vector<std::string>& command, std::string* why_not) {
  auto refuse = [&](std::string why) -> std::optional<PythonCommand> {
    if (why_not != nullptr) *why_not = std::move(why);
    return std::nullopt;
  };
  if (command.empty()) return refuse("no command");
  const std::string& exe = command[0];
  const std::string base = exe.substr(exe.rfind('/') == std::string::npos ? 0 : exe.rfind('/') + 1);
  static const std::regex kPython(R"(python([0-9]+(\.[0-9]+)?)?)");
  if (!std::regex_match(base, kPython))
    return refuse(fmt::format(
        "the command starts with {}, not python: the shim starts `python SCRIPT` or `python -m MODULE` (run the "
        "launcher's Python program directly to tune its framework)",
        base));
  PythonCommand p;
  p.interpreter.push_back(exe);
  for (std::size_t i = 1; i < command.size(); ++i) {
    const std::string& a = command[i];
    if (a == "-c") return refuse("`python -c` runs no program file the shim could start");
    if (a == "-m") {
      if (i + 1 >= command.size()) return refuse("`python -m` without a module");
      p.program.assign(command.begin() + static_cast<std::ptrdiff_t>(i), command.end());
      return p;
    }
    if (a == "--") {
      if (i + 1 >= command.size()) return refuse("no program after `python --`");
      p.program.assign(command.begin() + static_cast<std::ptrdiff_t>(i + 1), command.end());
      return p;
    }
    if (a == "-") return refuse("a program read from stdin cannot be started by the shim");
    if (!a.empty() && a[0] == '-') {
      p.interpreter.push_back(a);
      if ((a == "-X" || a == "-W") && i + 1 < command.size()) p.interpreter.push_back(command[++i]);
      continue;
    }
    p.program.assign(command.begin() + static_cast<std::ptrdiff_t>(i), command.end());
    return p;
  }
  return refuse("python without a program (an interactive interpreter)");
}

namespace {

// The variables of `changes` in first-set order, a later value winning; kAlwaysEnv first.
std::vector<std::pair<std::string, std::string>> merged_env(const std::vector<Change>& changes, bool always) {
  std::vector<std::pair<std::string, std::string>> out;
  auto set = [&](const std::string& entry) {
    const auto eq = entry.find('=');
    const std::string name = entry.substr(0, eq), value = eq == std::string::npos ? "" : entry.substr(eq + 1);
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& kv) { return kv.first == name; });
    if (it == out.end())
      out.emplace_back(name, value);
    else
      it->second = value;
  };
  if (always) set(std::string(kAlwaysEnv));
  for (const auto& c : changes)
    for (const auto& e : c.env) set(e);
  return out;
}

std::vector<int> merged_cpus(const std::vector<Change>& changes) {
  std::vector<int> cpus;
  for (const auto& c : changes)
    if (!c.cpus.empty()) cpus = c.cpus;
  return cpus;
}

// The command with the shim in front of the program, when `changes` have patches.
std::vector<std::string> shimmed(const std::vector<std::string>& command, const std::vector<Change>& changes,
                                 const std::string& shim_file) {
  const std::string patches = merged_patches(changes);
  if (patches.empty()) return command;
  auto py = python_command(command, nullptr);
  if (!py) return command;  // the precondition: pick() offers patches for Python programs only
  std::vector<std::string> argv = py->interpreter;
  if (shim_file.empty()) {
    argv.insert(argv.end(), {"-m", "gpudoc.tune"});
  } else {
    argv.push_back(shim_file);
  }
  argv.insert(argv.end(), {"--patch", patches, "--"});
  argv.insert(argv.end(), py->program.begin(), py->program.end());
  return argv;
}

}  // namespace

std::string merged_patches(const std::vector<Change>& changes) {
  std::vector<std::pair<std::string, std::string>> patches;  // name -> "name=value" or "name"
  for (const auto& c : changes)
    for (const auto& p : c.patches) {
      const std::string name = p.substr(0, p.find('='));
      auto it = std::find_if(patches.begin(), patches.end(), [&](const auto& kv) { return kv.first == name; });
      if (it == patches.end())
        patches.emplace_back(name, p);
      else
        it->second = p;
    }
  std::string out;
  for (const auto& [name, p] : patches) out += (out.empty() ? "" : ",") + p;
  return out;
}

Launch launch_with(const std::vector<std::string>& command, const std::vector<Change>& changes,
                   const std::string& shim_file) {
  Launch l;
  l.argv = shimmed(command, changes, shim_file);
  for (const auto& [name, value] : merged_env(changes, true)) l.env.push_back(name + "=" + value);
  l.cpus = merged_cpus(changes);
  return l;
}

std::string shell_quote(std::string_view word) {
  static const std::regex kSafe(R"([A-Za-z0-9_@%+=:,./-]+)");
  const std::string w(word);
  if (!w.empty() && std::regex_match(w, kSafe)) return w;
  std::string out = "'";
  for (char c : w) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string shell_line(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + shell_quote(w);
  return out;
}

std::vector<std::string> apply_lines(const std::vector<std::string>& command, const std::vector<Change>& changes) {
  std::vector<std::string> lines;
  for (const auto& [name, value] : merged_env(changes, true))
    lines.push_back("export " + name + "=" + shell_quote(value));
  std::vector<std::string> argv;
  if (auto cpus = merged_cpus(changes); !cpus.empty()) argv = {"taskset", "-c", cpulist(cpus)};
  const auto job = shimmed(command, changes, "");
  argv.insert(argv.end(), job.begin(), job.end());
  lines.push_back(shell_line(argv));
  return lines;
}

std::vector<std::string> launcher_argv(const std::vector<std::string>& command, const std::vector<Change>& changes) {
  std::vector<std::string> argv = {"env"};
  for (const auto& [name, value] : merged_env(changes, true)) argv.push_back(name + "=" + value);
  if (auto cpus = merged_cpus(changes); !cpus.empty()) argv.insert(argv.end(), {"taskset", "-c", cpulist(cpus)});
  const auto job = shimmed(command, changes, "");
  argv.insert(argv.end(), job.begin(), job.end());
  return argv;
}

}  // namespace gpudoc::tune
