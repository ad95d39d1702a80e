#include "core/process.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sched.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <string_view>
#include <thread>

#include "core/process_tree.hpp"

extern char** environ;

namespace gpudoc::core {

namespace {

std::string_view env_name(std::string_view entry) { return entry.substr(0, entry.find('=')); }

// gpudoc's environment with `extra` added; an extra entry replaces one of the same name (two
// entries of one name would leave it to each program which one it reads).
std::vector<std::string> child_environment(const std::vector<std::string>& extra) {
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    bool replaced = false;
    for (const auto& x : extra) replaced = replaced || env_name(x) == env_name(entry);
    if (!replaced) out.emplace_back(entry);
  }
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

// The calling thread's CPU mask set to `cpus` while it lives, then put back (SpawnOptions::cpu_affinity).
class ThreadAffinity {
 public:
  ThreadAffinity() = default;
  ThreadAffinity(const ThreadAffinity&) = delete;
  ThreadAffinity& operator=(const ThreadAffinity&) = delete;
  ~ThreadAffinity() {
    if (set_) (void)::sched_setaffinity(0, sizeof saved_, &saved_);
  }
  Status pin(const std::vector<int>& cpus) {
    if (cpus.empty()) return {};
    cpu_set_t mask;
    CPU_ZERO(&mask);
    for (int c : cpus)
      if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &mask);
    if (::sched_getaffinity(0, sizeof saved_, &saved_) != 0 || ::sched_setaffinity(0, sizeof mask, &mask) != 0)
      return Error(ErrorKind::kEnvironment,
                   fmt::format("cannot bind the command to CPUs {}: {}", fmt::join(cpus, ","), std::strerror(errno)));
    set_ = true;
    return {};
  }

 private:
  cpu_set_t saved_{};
  bool set_ = false;
};

}  // namespace

Result<ChildProcess> ChildProcess::spawn(const std::vector<std::string>& argv,
                                         const std::vector<std::string>& extra_env, bool stdout_to_stderr) {
  SpawnOptions o;
  o.extra_env = extra_env;
  o.stdout_to_stderr = stdout_to_stderr;
  return spawn(argv, o);
}

Result<ChildProcess> ChildProcess::spawn(const std::vector<std::string>& argv, const SpawnOptions& options) {
  if (argv.empty()) return Error(ErrorKind::kUsage, "no command given");
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_strings = child_environment(options.extra_env);
  std::vector<char*> env;
  for (auto& e : env_strings) env.push_back(e.data());
  env.push_back(nullptr);

  // The child starts with default signal dispositions and an empty mask, whatever gpudoc set
  // (gpudoc may ignore SIGPIPE; a workload must not inherit that).
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  if (options.new_process_group) {
    flags |= POSIX_SPAWN_SETPGROUP;
    posix_spawnattr_setpgroup(&attr, 0);  // 0: a new group whose id is the child's pid
  }
  posix_spawnattr_setflags(&attr, flags);
  pid_t pid = -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (options.stdin_from_null) posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  if (options.stdout_fd >= 0)
    posix_spawn_file_actions_adddup2(&actions, options.stdout_fd, STDOUT_FILENO);
  else if (options.stdout_to_stderr)
    posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO);
  if (options.stderr_fd >= 0) posix_spawn_file_actions_adddup2(&actions, options.stderr_fd, STDERR_FILENO);
  int rc = 0;
  {
    ThreadAffinity affinity;
    if (auto pinned = affinity.pin(options.cpu_affinity); !pinned) {
      posix_spawn_file_actions_destroy(&actions);
      posix_spawnattr_destroy(&attr);
      return pinned.error();
    }
    rc = posix_spawnp(&pid, argv[0].c_str(), &actions, &attr, args.data(), env.data());
  }
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return Error(ErrorKind::kBadInput, fmt::format("cannot run '{}': {}", argv[0], std::strerror(rc)));
  return ChildProcess(pid, options.new_process_group);
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
    if (r == pid_)
      status_ = st;
    else if (r < 0 && errno != EINTR)
      break;
  }
}

void ChildProcess::signal(int sig) const {
  if (!status_ && pid_ > 0) ::kill(pid_, sig);
}

bool ChildProcess::signal_group(int sig) const {
  if (pid_ <= 0) return false;
  if (!own_group_) {
    if (status_) return false;
    return ::kill(pid_, sig) == 0;
  }
  return ::kill(-pid_, sig) == 0;
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

SpawnOptions workload_spawn_options() {
  SpawnOptions o;
  o.new_process_group = true;
  o.stdin_from_null = ::isatty(STDIN_FILENO) != 0;
  return o;
}

void GroupStopper::step(const ChildProcess& child, bool hurry, const std::set<pid_t>& also) {
  const auto now = std::chrono::steady_clock::now();
  auto send = [&](int sig) {
    child.signal_group(sig);
    for (pid_t p : also)
      if (p > 0 && (p != child.pid() || !child.exited())) ::kill(p, sig);
  };
  if (!kill_at_) {
    send(SIGTERM);
    kill_at_ = now + grace_;
  }
  if (hurry && *kill_at_ > now) kill_at_ = now;
  if (now < *kill_at_) return;
  send(SIGKILL);
  if (!first_kill_) first_kill_ = now;
  kill_at_ = now + std::chrono::seconds(1);
}

bool GroupStopper::done(const ChildProcess& child) const {
  if (!child.exited()) return false;
  if (live_group_members(child.pid()).empty()) return true;
  return first_kill_ && std::chrono::steady_clock::now() - *first_kill_ > std::chrono::seconds(2);
}

void GroupStopper::finish(ChildProcess& child, const std::function<bool()>& hurry) {
  while (true) {
    child.poll();
    if (started() && done(child)) return;
    step(child, hurry && hurry());
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string signal_name(int sig) {
  switch (sig) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGKILL: return "SIGKILL";
    case SIGPIPE: return "SIGPIPE";
    case SIGTERM: return "SIGTERM";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    default: return fmt::format("signal {}", sig);
  }
}

}  // namespace gpudoc::core
