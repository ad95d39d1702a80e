// gpudoc::core dynamic libraries — the one way gpudoc loads a vendor library at run time (NVML,
// NCCL, cuBLASLt, CUPTI inside the profiled program; libcuda to tell "no driver" from other CUDA
// failures): find the file (a list of candidate names, or the one file an environment variable
// names), resolve a table of named functions into typed pointers, and say in every error which
// library, file and symbol failed and why. Kept C++17 so the .cu files (nvcc) can include it.
//
//   const core::LibrarySpec spec{"NCCL", {"libnccl.so.2"}, "GPUDOC_NCCL_LIBRARY", "install libnccl2"};
//   auto lib = core::open_library(spec);     // "cannot load NCCL from libnccl.so.2 (<dlerror>); install libnccl2"
//   if (!lib) return lib.error();
//   core::SymbolResolver symbols(*lib);      // the spec's name and hint go into its error too
//   symbols.resolve(core::Need::kRequired, "ncclGetVersion", api.ncclGetVersion);
//   symbols.resolve(core::Need::kOptional, "ncclGetLastError", api.ncclGetLastError);  // nullptr when absent
//   if (auto st = symbols.status(); !st) return st.error();
//       // "libm.so.6 lacks required NCCL functions (ncclGetVersion); install libnccl2"
//
// Policy, stated once for every library gpudoc loads: it is never closed (no dlclose). Vendor
// libraries leave threads, exit handlers or driver state behind (NCCL's proxy threads, CUDA state in
// cuBLASLt and NVML) that would run unmapped code after a dlclose; a crash at exit seen on a 2-GPU
// H200 is suspected to be NVML's. A DynamicLibrary is therefore a plain handle that
// owns nothing: the mapping lives until the process ends, and a library that turns out to lack a
// required function stays mapped too (unloading it buys nothing and risks its destructors).
#pragma once

#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.hpp"

namespace gpudoc::core {

// How to find one library.
struct LibrarySpec {
  std::string what;                     // the library's name in messages: "NCCL", "cuBLASLt"
  std::vector<std::string> candidates;  // sonames (searched by the dynamic loader) or paths, tried in order
  std::string env_override;             // an environment variable that, when set and not empty, names
                                        // the only file tried ("GPUDOC_NCCL_LIBRARY"); empty: none
  std::string hint;                     // appended to every error: what to do, what still works
};

// A loaded library (never closed; see the policy above). Copyable; thread-safe to read.
class DynamicLibrary {
 public:
  DynamicLibrary(const LibrarySpec& spec, std::string file, void* handle)
      : what_(spec.what), hint_(spec.hint), file_(std::move(file)), handle_(handle) {}

  [[nodiscard]] const std::string& what() const noexcept { return what_; }
  [[nodiscard]] const std::string& hint() const noexcept { return hint_; }
  // The candidate (or override) that loaded, as given: "libnccl.so.2".
  [[nodiscard]] const std::string& file() const noexcept { return file_; }
  [[nodiscard]] void* handle() const noexcept { return handle_; }

  // The address of `name`, or nullptr when the library lacks it.
  [[nodiscard]] void* find(const char* name) const;

 private:
  std::string what_;
  std::string hint_;
  std::string file_;
  void* handle_;
};

// Opens the library `spec` describes: $env_override's file alone when that variable is set and not
// empty, else the first candidate the dynamic loader can open (RTLD_NOW | RTLD_LOCAL: the library's
// symbols never satisfy anyone else's lookups). Errors: kEnvironment, "cannot load <what> from
// <file> (<dlerror>); <hint>" — "from <VAR>=<file>" for an override, "from any of <a>, <b> (none
// found)" for several candidates (or the first reason other than a missing file: a wrong
// architecture, a missing dependency). kInternal when spec has no candidate. Thread-safe: loads are
// serialized so each caller reads its own dlerror().
[[nodiscard]] Result<DynamicLibrary> open_library(const LibrarySpec& spec);

// The lower steps of open_library, for a loader that searches its own way and words its own
// messages (the CUPTI injection library: the program's own copy first, then a list of files).
// open_file: `file` alone, RTLD_NOW | RTLD_LOCAL; the error (kEnvironment) is dlerror()'s text and
// nothing else. find_loaded: the first of spec.candidates the process has already loaded
// (RTLD_NOLOAD: nothing new is mapped), or nullopt.
[[nodiscard]] Result<DynamicLibrary> open_file(const LibrarySpec& spec, const std::string& file);
[[nodiscard]] std::optional<DynamicLibrary> find_loaded(const LibrarySpec& spec);

enum class Need {
  kRequired,  // the library is unusable without it: SymbolResolver::status() fails
  kOptional,  // a missing symbol is left null and only loses a nicety
};

// Fills a table of typed function pointers from one library and collects the required ones it lacks.
// Not thread-safe (one resolver per table).
class SymbolResolver {
 public:
  explicit SymbolResolver(DynamicLibrary lib) : lib_(std::move(lib)) {}

  // Sets `out` (a function pointer) to the symbol `name`, or to nullptr when absent; a missing
  // kRequired symbol is remembered for status(). dlsym returns an object pointer; copying its bits
  // avoids the object-to-function pointer cast that ISO C++ only conditionally supports.
  template <class Fn>
  void resolve(Need need, const char* name, Fn& out) {
    void* sym = lib_.find(name);
    static_assert(sizeof(sym) == sizeof(out), "a function pointer the size of a data pointer");
    std::memcpy(&out, &sym, sizeof(out));
    if (sym == nullptr && need == Need::kRequired) missing_.emplace_back(name);
  }

  // The kRequired symbols not found so far, in the order asked.
  [[nodiscard]] const std::vector<std::string>& missing() const noexcept { return missing_; }

  // ok when every kRequired symbol was found; else kEnvironment "<file> lacks required <what>
  // functions (<a>, <b>); <hint>".
  [[nodiscard]] Status status() const;

 private:
  DynamicLibrary lib_;
  std::vector<std::string> missing_;
};

// "<file> lacks required <what> functions (<a>, <b>)" followed by "; <hint>" when hint is not empty:
// the one wording of a library (or an injected function table, file "the ... function table") that
// lacks what gpudoc needs. kEnvironment.
[[nodiscard]] Error missing_symbols_error(const std::string& file, const std::string& what,
                                          const std::vector<std::string>& missing, const std::string& hint);

}  // namespace gpudoc::core
