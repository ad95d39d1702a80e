#include "core/file.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <new>

#include "core/temp_dir.hpp"

namespace gpudoc::core {

Result<std::string> read_file(const std::string& path) {
  std::string content;
  try {
    std::FILE* f = std::fopen(path.c_str(), "rbe");
    if (f == nullptr) return Error(ErrorKind::kIo, fmt::format("reading {}: {}", path, std::strerror(errno)));
    // Read straight into a buffer of the file's size (a 1 h, 8-GPU trace is ~100 MB); then in
    // chunks, since a trace still being recorded grows while we read it.
    struct stat st {};
    std::size_t have = 0;
    if (::fstat(::fileno(f), &st) == 0 && st.st_size > 0) {
      content.resize(static_cast<std::size_t>(st.st_size));
      have = std::fread(content.data(), 1, content.size(), f);
      content.resize(have);
    }
    char buf[1 << 16];
    std::size_t n = 0;
    while (!std::ferror(f) && (n = std::fread(buf, 1, sizeof buf, f)) > 0) content.append(buf, n);
    bool failed = std::ferror(f) != 0;
    int err = errno;
    std::fclose(f);
    if (failed) return Error(ErrorKind::kIo, fmt::format("reading {}: {}", path, std::strerror(err)));
  } catch (const std::bad_alloc&) {
    return Error(ErrorKind::kIo, fmt::format("reading {}: too large to read into memory", path));
  }
  return content;
}

namespace {

Status write_directly(const std::string& path, std::string_view content) {
  std::FILE* f = std::fopen(path.c_str(), "wbe");
  if (f == nullptr) return Error(ErrorKind::kIo, fmt::format("writing {}: {}", path, std::strerror(errno)));
  const bool wrote = std::fwrite(content.data(), 1, content.size(), f) == content.size();
  int err = errno;
  const bool closed = std::fclose(f) == 0;
  if (!closed && wrote) err = errno;
  if (!wrote || !closed) return Error(ErrorKind::kIo, fmt::format("writing {}: {}", path, std::strerror(err)));
  return ok_status();
}

mode_t current_umask() {
  const mode_t m = ::umask(022);
  ::umask(m);
  return m;
}

}  // namespace

Status write_file(const std::string& path, std::string_view content) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) return write_directly(path, content);
  const std::filesystem::path target(path);
  const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  // The name is appended to a string that exists, not built with operator+ on temporaries: g++ 12's
  // -O3 inlining of that operator warns of an overlapping memcpy that cannot happen (-Wrestrict,
  // GCC bug 105329).
  std::string name = ".";
  name += target.filename().string();
  name += ".gpudoc-XXXXXX";
  std::string tmp = (dir / name).string();
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) return Error(ErrorKind::kIo, fmt::format("writing {}: {}", path, std::strerror(errno)));
  UniqueFd owned(fd);
  auto fail = [&](int err) {
    ::unlink(tmp.c_str());
    return Error(ErrorKind::kIo, fmt::format("writing {}: {}", path, std::strerror(err)));
  };
  if (auto st_write = write_all(fd, content, path); !st_write) {
    ::unlink(tmp.c_str());
    return st_write.error();
  }
  const mode_t mode = S_ISREG(st.st_mode) ? (st.st_mode & 07777) : (0666 & ~current_umask());
  if (::fchmod(fd, mode) != 0 || ::fsync(fd) != 0) return fail(errno);
  if (::close(owned.release()) != 0) return fail(errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return fail(errno);
  return ok_status();
}

}  // namespace gpudoc::core
