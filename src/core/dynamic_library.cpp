#include "core/dynamic_library.hpp"

#include <dlfcn.h>

#include <mutex>

namespace gpudoc::core {

Result<void*> open_library(const std::string& file) {
  static std::mutex mu;
  std::lock_guard lock(mu);
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle != nullptr) return handle;
  const char* why = dlerror();
  return Error(ErrorKind::kEnvironment, why != nullptr ? why : "unknown reason");
}

void* find_symbol(void* handle, const char* name) { return dlsym(handle, name); }

}  // namespace gpudoc::core
