#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
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

constexpr std::uint32_t kCircle = 10000;

// The overlap of two parts of the circle.
std::uint32_t overlap(ComputePart a, ComputePart b) {
  std::int64_t total = 0;
  for (const std::int64_t shift : {-static_cast<std::int64_t>(kCircle), std::int64_t{0}, std::int64_t{kCircle}}) {
    const std::int64_t lo = std::max<std::int64_t>(a.start, b.start + shift);
    const std::int64_t hi = std::min<std::int64_t>(a.start + a.length, b.start + b.length + shift);
    total += std::max<std::int64_t>(0, hi - lo);
  }
  return static_cast<std::uint32_t>(total);
}

// The parts of the period held by the compute caps of this user's running slices on the
// interception library.
std::vector<ComputePart> parts_taken() {
  std::vector<ComputePart> taken;
  for (const Listed& l : list()) {
    const Limits& lim = l.state.limits;
    if (l.owner_running && l.state.mechanism == 0 && lim.sm_percent > 0 && lim.sm_percent < 100)
      taken.push_back({lim.sm_window_offset_permyriad, lim.sm_percent * 100});
  }
  return taken;
}

// Held while a new slice chooses its part of the period and creates its state, so that two slices
// started at the same instant do not both take the first free part: an flock on a file of this user
// in the temporary folder (named with the uid; O_NOFOLLOW; used only when it is a regular file this
// user owns, so another user who plants it can only make the choice unguarded). The holder removes
// the file before it lets go, so nothing is left in the shared folder: a process that waited on the
// removed file finds, once it holds it, that the name no longer leads to it, and takes the lock
// again on the file now there (or a new one). Only a holder killed in these milliseconds leaves it;
// the next slice takes it and removes it.
class ChoiceLock {
 public:
  ChoiceLock() : path_(core::temp_base() + "/" + kFolderPrefix + "-" + std::to_string(geteuid()) + ".lock") {
    for (int attempt = 0; attempt < kAttempts && fd_ == kRetry; ++attempt) fd_ = take(path_);
    if (fd_ < 0) fd_ = -1;
  }
  ~ChoiceLock() {
    if (fd_ < 0) return;
    unlink(path_.c_str());  // still held: whoever waits on this file sees it gone and takes the next
    close(fd_);             // releases the lock
  }
  ChoiceLock(const ChoiceLock&) = delete;
  ChoiceLock& operator=(const ChoiceLock&) = delete;

 private:
  static constexpr int kRetry = -2, kAttempts = 100;

  // The locked descriptor; kRetry when the file was removed or replaced while this waited; -1 when
  // it cannot be taken (not this user's regular file, an error): the choice then goes unguarded.
  static int take(const std::string& path) {
    const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
    if (fd < 0) return -1;
    struct stat held {};
    if (fstat(fd, &held) != 0 || !S_ISREG(held.st_mode) || held.st_uid != geteuid() || flock(fd, LOCK_EX) != 0) {
      close(fd);
      return -1;
    }
    struct stat named {};
    if (lstat(path.c_str(), &named) != 0 || named.st_ino != held.st_ino || named.st_dev != held.st_dev) {
      close(fd);
      return kRetry;
    }
    return fd;
  }

  std::string path_;
  int fd_ = kRetry;
};

}  // namespace

std::uint32_t choose_compute_offset(std::uint32_t cap_percent, const std::vector<ComputePart>& taken) {
  const ComputePart mine{0, std::min<std::uint32_t>(cap_percent, 100) * 100};
  // Candidates: the period's start and the end of every part taken; the first with the least overlap.
  std::vector<std::uint32_t> starts{0};
  for (const ComputePart& t : taken) starts.push_back((t.start + t.length) % kCircle);
  std::uint32_t best = 0, least = UINT32_MAX;
  for (const std::uint32_t s : starts) {
    std::uint32_t sum = 0;
    for (const ComputePart& t : taken) sum += overlap({s, mine.length}, t);
    if (sum < least || (sum == least && s < best)) best = s, least = sum;
  }
  return best;
}

core::Result<int> run(const Request& request, const Placement& placement, const std::string& library,
                      const std::atomic<int>* stop_requests) {
  // The job's processes keep using the state after gpudoc slice is gone: never swept.
  auto dir = core::PrivateDir::create(kFolderPrefix, {}, core::WhenOrphaned::kLeave);
  if (!dir) return dir.error();
  std::string error;
  const std::string state_path = dir->file(kStateFile);
  Limits limits = request.limits;
  std::optional<SharedState> state;
  {
    const ChoiceLock lock;
    if (placement.mechanism == Mechanism::kInterception && limits.sm_percent > 0 && limits.sm_percent < 100)
      limits.sm_window_offset_permyriad = choose_compute_offset(limits.sm_percent, parts_taken());
    state = SharedState::create(state_path, limits, request.name, joined(request.command), &error,
                                placement.mechanism == Mechanism::kMps ? 1 : 0);
  }
  if (!state) return core::Error(core::ErrorKind::kIo, error);
  core::SpawnOptions options = core::workload_spawn_options();  // its own process group: stopped as a whole
  options.extra_env = job_environment(placement, request.limits, library, state_path);
  auto child = core::ChildProcess::spawn(request.command, options);
  if (!child) return child.error();
  auto stops = [stop_requests] { return stop_requests != nullptr ? stop_requests->load() : 0; };
  core::GroupStopper stopper;  // the stop policy (core/process.hpp)
  while (!child->poll()) {
    if (stops() >= 1) stopper.step(*child, stops() >= 2);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (stopper.started()) stopper.finish(*child, [&] { return stops() >= 2; });
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
