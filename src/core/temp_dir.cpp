#include "core/temp_dir.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <system_error>
#include <vector>

#include "core/process_tree.hpp"

namespace gpudoc::core {
namespace {

struct Owner {
  long long pid = 0;
  unsigned long long start_ticks = 0, pid_namespace = 0;
};

// The inode of this process's pid namespace: a pid means one process only within one namespace
// (a container sharing the temporary folder numbers its processes apart). 0 when unknown.
unsigned long long pid_namespace() {
  struct stat st {};
  return ::stat("/proc/self/ns/pid", &st) == 0 ? static_cast<unsigned long long>(st.st_ino) : 0;
}

// When `pid` started (clock ticks after boot); 0 when no such process runs (none, or a zombie:
// exited, only not yet reaped); nullopt when /proc cannot tell.
std::optional<unsigned long long> start_ticks_of(long long pid) {
  const std::string path = fmt::format("/proc/{}/stat", pid);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT || errno == ESRCH ? std::optional<unsigned long long>(0) : std::nullopt;
  const UniqueFd owned(fd);
  char buf[1024];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  if (n < 0 && errno == ESRCH) return 0;
  const auto s = n > 0 ? parse_proc_stat(std::string_view(buf, static_cast<std::size_t>(n))) : std::nullopt;
  if (!s || s->start_ticks == 0) return std::nullopt;
  return s->state == 'Z' ? 0 : s->start_ticks;
}

// Writes kOwnerFile naming this process; nothing when /proc cannot tell its start time (then the
// folder is never swept, as before).
Status write_owner(const std::string& dir) {
  const auto self = start_ticks_of(::getpid());
  if (!self || *self == 0) return ok_status();
  auto fd = create_new_file(dir + "/" + kOwnerFile);
  if (!fd) return fd.error();
  return write_all(fd->get(), fmt::format("{} {} {}\n", ::getpid(), *self, pid_namespace()), kOwnerFile);
}

// The owner record of `dir`: a regular file of this user (never through a link), whole (it ends
// in a newline), three numbers.
std::optional<Owner> read_owner(const std::string& dir) {
  const int fd = ::open((dir + "/" + kOwnerFile).c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  const UniqueFd owned(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) return std::nullopt;
  char buf[128] = {};
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  if (n <= 0 || buf[n - 1] != '\n') return std::nullopt;
  Owner o;
  if (std::sscanf(buf, "%lld %llu %llu", &o.pid, &o.start_ticks, &o.pid_namespace) != 3 || o.pid <= 0)
    return std::nullopt;
  return o;
}

// A private folder of this user whose recorded owner, of this pid namespace, is gone.
bool orphaned(const std::string& dir, unsigned long long own_namespace) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0)
    return false;
  const auto owner = read_owner(dir);
  if (!owner || owner->pid_namespace != own_namespace) return false;
  const auto now = start_ticks_of(owner->pid);
  return now && *now != owner->start_ticks;  // 0: no such process; another time: the pid was used again
}

}  // namespace

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

std::string temp_base() {
  const char* t = std::getenv("TMPDIR");
  return t != nullptr && *t != '\0' ? std::string(t) : std::string("/tmp");
}

std::size_t remove_orphaned_dirs(const std::string& base_in) {
  const std::string base = base_in.empty() ? temp_base() : base_in;
  const unsigned long long own_namespace = pid_namespace();
  if (own_namespace == 0 || start_ticks_of(::getpid()).value_or(0) == 0) return 0;  // /proc cannot tell
  DIR* d = ::opendir(base.c_str());
  if (d == nullptr) return 0;
  std::vector<std::string> gone;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name(e->d_name);
    if (name.starts_with("gpudoc-") && orphaned(base + "/" + std::string(name), own_namespace))
      gone.push_back(base + "/" + std::string(name));
  }
  ::closedir(d);
  std::size_t removed = 0;
  for (const std::string& dir : gone) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);  // never follows a link inside it
    if (!ec) ++removed;
  }
  return removed;
}

Result<PrivateDir> PrivateDir::create(std::string_view prefix, std::string base, WhenOrphaned orphaned) {
  if (base.empty()) base = temp_base();
  (void)remove_orphaned_dirs(base);
  std::string tmpl = fmt::format("{}/{}-XXXXXX", base, prefix);
  if (::mkdtemp(tmpl.data()) == nullptr)
    return Error(ErrorKind::kIo,
                 fmt::format("creating a private temporary folder in {}: {}", base, std::strerror(errno)));
  PrivateDir dir(std::move(tmpl));
  if (orphaned == WhenOrphaned::kRemove)
    if (auto st = write_owner(dir.path()); !st)
      return Error(ErrorKind::kIo,
                   fmt::format("creating a private temporary folder in {}: {}", base, st.error().message()));
  return dir;
}

void PrivateDir::keep() {
  keep_ = true;
  if (!path_.empty()) ::unlink(file(kOwnerFile).c_str());
}

PrivateDir::~PrivateDir() {
  if (path_.empty() || keep_) return;
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

PrivateDir::PrivateDir(PrivateDir&& other) noexcept : path_(std::move(other.path_)), keep_(other.keep_) {
  other.path_.clear();
}

PrivateDir& PrivateDir::operator=(PrivateDir&& other) noexcept {
  if (this != &other) {
    if (!path_.empty() && !keep_) {
      std::error_code ignored;
      std::filesystem::remove_all(path_, ignored);
    }
    path_ = std::move(other.path_);
    keep_ = other.keep_;
    other.path_.clear();
  }
  return *this;
}

std::string PrivateDir::file(std::string_view name) const { return fmt::format("{}/{}", path_, name); }

Result<UniqueFd> create_new_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int err = errno;
    if (err == EEXIST)
      return Error(ErrorKind::kIo, fmt::format("creating {}: something already exists at that name", path));
    return Error(ErrorKind::kIo, fmt::format("creating {}: {}", path, std::strerror(err)));
  }
  return UniqueFd(fd);
}

Status write_all(int fd, std::string_view content, std::string_view what) {
  const char* p = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    const ssize_t w = ::write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return Error(ErrorKind::kIo, fmt::format("writing {}: {}", what, std::strerror(w < 0 ? errno : EIO)));
    p += w;
    left -= static_cast<std::size_t>(w);
  }
  return ok_status();
}

}  // namespace gpudoc::core
