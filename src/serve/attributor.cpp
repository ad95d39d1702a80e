#include "serve/attributor.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "core/host.hpp"
#include "core/log.hpp"
#include "core/temp_dir.hpp"
#include "serve/pod_resources.hpp"

namespace gpudoc::serve {
namespace {

constexpr std::size_t kMaxFileBytes = 64 << 10;
constexpr std::size_t kMaxFiles = 4096;

// The whole of the regular file `name` in the folder `dir_fd`, not through a symlink, at most
// kMaxFileBytes. Errors: why not, as a phrase.
core::Result<std::string> read_mapping_file(int dir_fd, const char* name) {
  const auto fail = [](std::string why) { return core::Error(core::ErrorKind::kIo, std::move(why)); };
  const core::UniqueFd file(::openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  const int fd = file.get();
  if (fd < 0) return fail(errno == ELOOP ? "a symbolic link (not followed)" : std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) return fail(std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return fail("not a regular file");
  if (static_cast<std::uint64_t>(st.st_size) > kMaxFileBytes) return fail("larger than 64 KiB");
  std::string text(kMaxFileBytes + 1, '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(std::strerror(errno));
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  if (got > kMaxFileBytes) return fail("larger than 64 KiB");
  text.resize(got);
  return text;
}

}  // namespace

HpcJobRead read_hpc_job_dir(const std::string& dir) {
  HpcJobRead out;
  const std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), &::closedir);
  if (!d) {
    out.problems[dir] = fmt::format("--hpc-job-mapping-dir {}: {}", dir, std::strerror(errno));
    return out;
  }
  std::size_t files = 0;
  while (const dirent* e = ::readdir(d.get())) {
    const auto gpu = hpc_job_file_gpu(e->d_name);
    if (!gpu) continue;
    if (++files > kMaxFiles) {
      out.problems[dir] =
          fmt::format("--hpc-job-mapping-dir {}: more than {} mapping files; the rest are not read", dir, kMaxFiles);
      break;
    }
    const std::string path = fmt::format("{}/{}", dir, e->d_name);
    auto text = read_mapping_file(::dirfd(d.get()), e->d_name);
    if (!text) {
      out.problems[path] = fmt::format("--hpc-job-mapping-dir: {}: {}; GPU {}'s jobs are left out until it can be read",
                                       path, text.error().message(), *gpu);
      continue;
    }
    auto jobs = parse_hpc_job_file(*text);
    if (jobs.empty()) continue;
    auto& all = out.jobs[*gpu];
    all.insert(all.end(), std::make_move_iterator(jobs.begin()), std::make_move_iterator(jobs.end()));
  }
  for (auto& [gpu, jobs] : out.jobs) {
    std::sort(jobs.begin(), jobs.end());
    jobs.erase(std::unique(jobs.begin(), jobs.end()), jobs.end());
  }
  return out;
}

Attributor::Attributor(std::vector<gpu::DeviceInfo> gpus, AttributionOptions options, Sources sources)
    : gpus_(std::move(gpus)), options_(std::move(options)), sources_(std::move(sources)) {
  if (!sources_.list_pods && options_.pod_resources_socket)
    sources_.list_pods = [kubelet = std::make_shared<PodResourcesClient>(
                              *options_.pod_resources_socket, options_.call_timeout)] { return kubelet->list(); };
  if (!sources_.read_jobs && options_.hpc_job_mapping_dir)
    sources_.read_jobs = [dir = *options_.hpc_job_mapping_dir] { return read_hpc_job_dir(dir); };
  if (!sources_.warn) sources_.warn = [](const std::string& message) { core::log_warn("{}", message); };
}

Attributor::~Attributor() { stop(); }

void Attributor::start() {
  {
    std::lock_guard lock(stop_mu_);
    if (running_) return;
    running_ = true;
  }
  thread_ = std::thread([this] { loop(); });
}

void Attributor::stop() {
  {
    std::lock_guard lock(stop_mu_);
    running_ = false;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Attributor::loop() {
  core::name_this_thread("serve-attribute");
  std::unique_lock lock(stop_mu_);
  while (running_) {
    lock.unlock();
    refresh();
    lock.lock();
    stop_cv_.wait_for(lock, options_.every, [this] { return !running_; });
  }
}

void Attributor::refresh() {
  std::lock_guard refreshing(refresh_mu_);
  Attribution next;
  std::map<std::string, std::string> failing;  // source -> what to say
  if (options_.pod_resources_socket && sources_.list_pods) {
    if (auto list = sources_.list_pods())
      next = pods_by_gpu(*list, gpus_);
    else
      failing["pod-resources"] = list.error().message() + "; GPU series go without pod labels until it answers";
  }
  if (options_.hpc_job_mapping_dir && sources_.read_jobs) {
    HpcJobRead read = sources_.read_jobs();
    for (auto& [gpu, jobs] : read.jobs) {
      const bool served = std::any_of(gpus_.begin(), gpus_.end(), [&](const auto& g) { return g.index == gpu; });
      if (served) next[gpu].hpc_jobs = std::move(jobs);
    }
    for (auto& [path, why] : read.problems) failing["hpc:" + path] = std::move(why);
  }
  for (const auto& [source, message] : failing)
    if (!failing_.contains(source)) sources_.warn(message);
  failing_.clear();
  for (const auto& [source, message] : failing) failing_.insert(source);
  std::lock_guard lock(mu_);
  current_ = std::move(next);
  ++reads_;
}

Attribution Attributor::current() const {
  std::lock_guard lock(mu_);
  return current_;
}

std::uint64_t Attributor::reads() const {
  std::lock_guard lock(mu_);
  return reads_;
}

}  // namespace gpudoc::serve
