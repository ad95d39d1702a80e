#include "core/process.hpp"

#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

extern char** environ;

namespace gpudoc::core {

Result<ChildProcess> ChildProcess::spawn(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
                                         bool stdout_to_stderr) {
  if (argv.empty()) return Error(ErrorKind::kUsage, "no command given");
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  for (const auto& e : extra_env) env_strings.push_back(e);
  std::vector<char*> env;
  for (auto& e : env_strings) env.push_back(e.data());
  env.push_back(nullptr);

  // The child starts with default signal dispositions and an empty mask, whatever gpudoc set.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (stdout_to_stderr) posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO);
  int rc = posix_spawnp(&pid, argv[0].c_str(), &actions, &attr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0)
    return Error(ErrorKind::kBadInput, fmt::format("cannot run '{}': {}", argv[0], std::strerror(rc)));
  return ChildProcess(pid);
}

bool ChildProcess::poll() {
  if (status_) return true;
  int st = 0;
  pid_t r = ::waitpid(pid_, &st, WNOHANG);
  if (r == pid_) status_ = st;
  return status_.has_value();
}

void ChildProcess::wait() {
  while (!status_) {
    int st = 0;
    pid_t r = ::waitpid(pid_, &st, 0);
    if (r == pid_) status_ = st;
    else if (r < 0 && errno != EINTR) break;
  }
}

void ChildProcess::signal(int sig) const {
  if (!status_ && pid_ > 0) ::kill(pid_, sig);
}

std::optional<int> ChildProcess::exit_code() const {
  if (status_ && WIFEXITED(*status_)) return WEXITSTATUS(*status_);
  return std::nullopt;
}

std::optional<int> ChildProcess::term_signal() const {
  if (status_ && WIFSIGNALED(*status_)) return WTERMSIG(*status_);
  return std::nullopt;
}

int ChildProcess::exit_code_for_shell() const {
  if (auto c = exit_code()) return *c;
  if (auto s = term_signal()) return 128 + *s;
  return 1;
}

}  // namespace gpudoc::core
