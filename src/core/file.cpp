#include "core/file.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>

namespace gpudoc::core {

Result<std::string> read_file(const std::string& path) {
  std::string content;
  try {
    std::FILE* f = std::fopen(path.c_str(), "rbe");
    if (f == nullptr)
      return Error(ErrorKind::kIo, fmt::format("reading {}: {}", path, std::strerror(errno)));
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

Status write_file(const std::string& path, std::string_view content) {
  std::FILE* f = std::fopen(path.c_str(), "wbe");
  if (f == nullptr) return Error(ErrorKind::kIo, fmt::format("writing {}: {}", path, std::strerror(errno)));
  const bool wrote = std::fwrite(content.data(), 1, content.size(), f) == content.size();
  int err = errno;
  const bool closed = std::fclose(f) == 0;
  if (!closed && wrote) err = errno;
  if (!wrote || !closed) return Error(ErrorKind::kIo, fmt::format("writing {}: {}", path, std::strerror(err)));
  return ok_status();
}

}  // namespace gpudoc::core
