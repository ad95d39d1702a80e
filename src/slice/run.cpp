#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "core/process.hpp"
#include "core/temp_dir.hpp"
#include "slice/slice.hpp"

namespace gpudoc::slice {
namespace {

constexpr const char* kFolderPrefix = "gpudoc-slice";
constexpr const char* kStateFile = "state";

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

// The job's environment: the preload (ahead of any the user set) and where the state is; or, under
// MPS, the client's limits.
std::vector<std::string> job_environment(const Placement& placement, const Limits& limits, const std::string& library,
                                         const std::string& state_path) {
  std::vector<std::string> env;
  if (placement.mechanism == Mechanism::kMps) {
    env = mps_environment(limits);
    env.push_back("CUDA_MPS_PIPE_DIRECTORY=" + placement.mps_pipe_directory);
  } else {
    const char* preload = std::getenv("LD_PRELOAD");
    env.push_back("LD_PRELOAD=" + library + (preload != nullptr && *preload != '\0' ? ":" + std::string(preload) : ""));
    env.push_back("GPUDOC_SLICE_STATE=" + state_path);
  }
  if (!placement.mig_instances.empty()) env.push_back("CUDA_VISIBLE_DEVICES=" + placement.mig_instances.front());
  return env;
}

bool running(pid_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

}  // namespace

core::Result<int> run(const Request& request, const Placement& placement, const std::string& library,
                      std::atomic<int>* forward) {
  auto dir = core::PrivateDir::create(kFolderPrefix);
  if (!dir) return dir.error();
  std::string error;
  const std::string state_path = dir->file(kStateFile);
  auto state = SharedState::create(state_path, request.limits, request.name, joined(request.command), &error,
                                   placement.mechanism == Mechanism::kMps ? 1 : 0);
  if (!state) return core::Error(core::ErrorKind::kIo, error);
  core::SpawnOptions options;
  options.extra_env = job_environment(placement, request.limits, library, state_path);
  auto child = core::ChildProcess::spawn(request.command, options);
  if (!child) return child.error();
  while (!child->poll()) {
    if (forward != nullptr) {
      if (const int sig = forward->load(); sig != 0) {
        child->signal(sig);
        forward->store(0);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return child->exit_code_for_shell();
}

std::vector<Listed> list(const std::string& base_in) {
  const std::string base = base_in.empty() ? core::temp_base() : base_in;
  std::vector<Listed> out;
  DIR* d = opendir(base.c_str());
  if (d == nullptr) return out;
  const std::string prefix = std::string(kFolderPrefix) + "-";
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string folder = base + "/" + name;
    struct stat st {};
    // Only this user's private folders: never one another user could have planted.
    if (lstat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) != 0)
      continue;
    std::string error;
    auto state = SharedState::attach(folder + "/" + kStateFile, &error);
    if (!state) continue;
    (void)state->reap_dead();
    Listed item;
    item.folder = folder;
    item.state = state->snapshot();
    item.owner_running = running(item.state.owner_pid);
    out.push_back(std::move(item));
  }
  closedir(d);
  std::sort(out.begin(), out.end(), [](const Listed& a, const Listed& b) {
    return a.state.created_unix_seconds < b.state.created_unix_seconds;
  });
  return out;
}

}  // namespace gpudoc::slice
