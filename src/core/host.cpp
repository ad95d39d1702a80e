#include "core/host.hpp"

#include <pthread.h>
#include <unistd.h>

#include <filesystem>
#include <system_error>

namespace gpudoc::core {

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "unknown";
  return buf;
}

void name_this_thread(std::string_view name) {
  char buf[16] = {};
  name.copy(buf, sizeof buf - 1);
  (void)pthread_setname_np(pthread_self(), buf);
}

std::string executable_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

}  // namespace gpudoc::core
