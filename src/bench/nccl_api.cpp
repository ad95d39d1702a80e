#include "bench/nccl_api.hpp"

#include <fmt/format.h>

#include <cstdlib>

#include "core/dynamic_library.hpp"

namespace gpudoc::bench::nccl {
namespace {

// The X-macro list names each function's need as kRequired / kOptional.
constexpr core::Need kRequired = core::Need::kRequired;
constexpr core::Need kOptional = core::Need::kOptional;

constexpr std::string_view kWithoutNccl =
    "the nccl.* benchmarks need NCCL 2 (install libnccl2, or set "
    "GPUDOC_NCCL_LIBRARY to a libnccl.so.2)";

}  // namespace

std::vector<std::string> missing_required(const NcclApi& api) {
  std::vector<std::string> missing;
#define GPUDOC_NCCL_X(need, name, ret, params, args) \
  if ((need) == kRequired && api.name == nullptr) missing.emplace_back(#name);
  GPUDOC_NCCL_FUNCTIONS(GPUDOC_NCCL_X)
#undef GPUDOC_NCCL_X
  (void)kOptional;
  return missing;
}

core::Result<std::unique_ptr<NcclLibrary>> load_nccl_library(const std::string& path) {
  // An explicit path is the only file tried; otherwise $GPUDOC_NCCL_LIBRARY, else the soname.
  const core::LibrarySpec spec{"NCCL",
                               {path.empty() ? std::string(kNcclLibraryName) : path},
                               path.empty() ? kNcclLibraryEnv : "",
                               std::string(kWithoutNccl)};
  auto opened = core::open_library(spec);
  if (!opened) return opened.error();
  std::unique_ptr<NcclLibrary> lib(new NcclLibrary());
  lib->path_ = opened->file();
  core::SymbolResolver symbols(*opened);
#define GPUDOC_NCCL_X(need, name, ret, params, args) symbols.resolve(need, #name, lib->api_.name);
  GPUDOC_NCCL_FUNCTIONS(GPUDOC_NCCL_X)
#undef GPUDOC_NCCL_X
  if (auto st = symbols.status(); !st) return st.error();
  return lib;
}

const core::Result<std::unique_ptr<NcclLibrary>>& shared_nccl_library() {
  static const core::Result<std::unique_ptr<NcclLibrary>> lib = load_nccl_library("");
  return lib;
}

core::Error nccl_error(const NcclApi& api, ncclResult_t rc, std::string_view what) {
  const char* text = api.ncclGetErrorString != nullptr ? api.ncclGetErrorString(rc) : nullptr;
  std::string message =
      fmt::format("{}: {} (ncclResult_t {})", what, text != nullptr ? text : "NCCL call failed", static_cast<int>(rc));
  // The last error names the cause (e.g. "Cuda failure 'out of memory'"); the comm argument is
  // unused by NCCL, so null is fine.
  if (api.ncclGetLastError != nullptr) {
    const char* last = api.ncclGetLastError(nullptr);
    if (last != nullptr && *last != '\0') message += fmt::format(" — {}", last);
  }
  core::ErrorKind kind = core::ErrorKind::kInternal;
  switch (rc) {
    case ncclUnhandledCudaError:
    case ncclSystemError:
    case ncclRemoteError: kind = core::ErrorKind::kEnvironment; break;
    default: break;
  }
  return core::Error(kind, std::move(message));
}

std::string version_string(int code) {
  if (code <= 0) return "unknown";
  // NCCL_VERSION(X,Y,Z): X*1000 + Y*100 + Z up to 2.8, X*10000 + Y*100 + Z from 2.9 on.
  if (code < 10000) return fmt::format("{}.{}.{}", code / 1000, code % 1000 / 100, code % 100);
  return fmt::format("{}.{}.{}", code / 10000, code % 10000 / 100, code % 100);
}

NvlsSetting ensure_nvls_disabled_unless_user_set() {
  constexpr const char* kName = "NCCL_NVLS_ENABLE";
  NvlsSetting s;
  if (const char* v = std::getenv(kName); v != nullptr) {
    s.value = v;
    return s;
  }
  (void)setenv(kName, "0", /*overwrite=*/0);
  const char* now = std::getenv(kName);
  s.value = now != nullptr ? now : "";
  s.set_by_gpudoc = s.value == "0";
  return s;
}

}  // namespace gpudoc::bench::nccl
