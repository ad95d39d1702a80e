#include "core/dynamic_library.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace gpudoc::core {
namespace {

// dlopen and the dlerror() that explains a failure, read under one lock.
Result<void*> dlopen_serialized(const std::string& file, int flags = RTLD_NOW | RTLD_LOCAL) {
  static std::mutex mu;
  std::lock_guard lock(mu);
  void* handle = dlopen(file.c_str(), flags);
  if (handle != nullptr) return handle;
  const char* why = dlerror();
  return Error(ErrorKind::kEnvironment, why != nullptr ? why : "unknown reason");
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

Error with_hint(std::string message, const std::string& hint) {
  if (!hint.empty()) message += "; " + hint;
  return Error(ErrorKind::kEnvironment, std::move(message));
}

}  // namespace

void* DynamicLibrary::find(const char* name) const { return dlsym(handle_, name); }

Result<DynamicLibrary> open_library(const LibrarySpec& spec) {
  const char* env = spec.env_override.empty() ? nullptr : std::getenv(spec.env_override.c_str());
  if (env != nullptr && *env != '\0') {
    auto opened = dlopen_serialized(env);
    if (opened) return DynamicLibrary(spec, env, *opened);
    return with_hint(
        "cannot load " + spec.what + " from " + spec.env_override + "=" + env + " (" + opened.error().message() + ")",
        spec.hint);
  }
  if (spec.candidates.empty()) return Error(ErrorKind::kInternal, "open_library: no file named for " + spec.what);
  std::string unusual;  // a reason other than "not found": a wrong architecture, a missing dependency
  for (const std::string& file : spec.candidates) {
    auto opened = dlopen_serialized(file);
    if (opened) return DynamicLibrary(spec, file, *opened);
    const std::string& why = opened.error().message();
    if (spec.candidates.size() == 1)
      return with_hint("cannot load " + spec.what + " from " + file + " (" + why + ")", spec.hint);
    if (unusual.empty() && why.find("No such file") == std::string::npos) unusual = why;
  }
  return with_hint("cannot load " + spec.what + " from any of " + join(spec.candidates) + " (" +
                       (unusual.empty() ? std::string("none found") : unusual) + ")",
                   spec.hint);
}

Result<DynamicLibrary> open_file(const LibrarySpec& spec, const std::string& file) {
  auto opened = dlopen_serialized(file);
  if (!opened) return opened.error();
  return DynamicLibrary(spec, file, *opened);
}

std::optional<DynamicLibrary> find_loaded(const LibrarySpec& spec) {
  for (const std::string& file : spec.candidates)
    if (auto opened = dlopen_serialized(file, RTLD_NOW | RTLD_NOLOAD)) return DynamicLibrary(spec, file, *opened);
  return std::nullopt;
}

Status SymbolResolver::status() const {
  if (missing_.empty()) return ok_status();
  return missing_symbols_error(lib_.file(), lib_.what(), missing_, lib_.hint());
}

Error missing_symbols_error(const std::string& file, const std::string& what, const std::vector<std::string>& missing,
                            const std::string& hint) {
  return with_hint(file + " lacks required " + what + " functions (" + join(missing) + ")", hint);
}

}  // namespace gpudoc::core
