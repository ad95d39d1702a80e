// gpudoc::testing::TempDir — a fresh directory under the system's temp directory for one test,
// removed with everything in it when the object goes. mkdtemp: mode 0700 and a name nobody can
// guess, so unique also when ctest runs tests in parallel, and safe when the tests run as root
// (a predictable name in a shared /tmp lets another user plant a symlink or a FIFO).
// Every file a test writes lives in one of these; no test makes a name of its own in $TMPDIR.
//
//   TempDir tmp("gpudoc-store");      // /tmp/gpudoc-store-Ab3xYz
//   const std::string db = tmp.file("s.db");
//
// gpudoc::testing::TempFile — one file in a TempDir of its own, for tests that need one path:
//
//   TempFile t("trace.jsonl");             // a path in a private folder; nothing created yet
//   TempFile c("trace.jsonl", text);       // created (O_EXCL|O_NOFOLLOW, 0600) and written
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace gpudoc::testing {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "gpudoc-test") {
    std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp " + tmpl + ": " + std::strerror(errno));
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  [[nodiscard]] std::string str() const { return path_.string(); }
  [[nodiscard]] std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

class TempFile {
 public:
  // `<a private folder>/name`; the file is not created.
  explicit TempFile(const std::string& name) : dir_("gpudoc-test"), path_(dir_.file(name)) {}
  // The same, and the file is created new (never an existing name, never through a symlink),
  // mode 0600, holding `content`. Throws std::runtime_error when it cannot be.
  TempFile(const std::string& name, std::string_view content) : TempFile(name) {
    const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) fail("creating", errno);
    while (!content.empty()) {
      const ssize_t n = ::write(fd, content.data(), content.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = n < 0 ? errno : EIO;
        ::close(fd);
        fail("writing", err);
      }
      content.remove_prefix(static_cast<std::size_t>(n));
    }
    if (::close(fd) != 0) fail("closing", errno);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  [[noreturn]] void fail(const char* what, int err) const {
    throw std::runtime_error(std::string(what) + " " + path_ + ": " + std::strerror(err));
  }

  TempDir dir_;
  std::string path_;
};

}  // namespace gpudoc::testing
