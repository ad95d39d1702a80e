// gpudoc::testing::TempDir — a fresh directory under the system's temp directory for one test,
// removed with everything in it when the object goes. mkdtemp: unique also when ctest runs tests
// in parallel.
//
//   TempDir tmp("gpudoc-store");      // /tmp/gpudoc-store-Ab3xYz
//   const std::string db = tmp.file("s.db");
#pragma once

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
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

}  // namespace gpudoc::testing
