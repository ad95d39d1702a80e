#include "core/temp_dir.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace gpudoc::core {

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

Result<PrivateDir> PrivateDir::create(std::string_view prefix, std::string base) {
  if (base.empty()) base = temp_base();
  std::string tmpl = fmt::format("{}/{}-XXXXXX", base, prefix);
  if (::mkdtemp(tmpl.data()) == nullptr)
    return Error(ErrorKind::kIo,
                 fmt::format("creating a private temporary folder in {}: {}", base, std::strerror(errno)));
  return PrivateDir(std::move(tmpl));
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
