#include "gpu/nvml/nvml_api.hpp"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "core/dynamic_library.hpp"

namespace gpudoc::gpu::nvml {
namespace {

// The X-macro list names each function's need as kRequired / kOptional.
constexpr core::Need kRequired = core::Need::kRequired;
constexpr core::Need kOptional = core::Need::kOptional;

}  // namespace

std::vector<std::string> missing_required(const NvmlApi& api) {
  std::vector<std::string> missing;
#define GPUDOC_NVML_X(need, name, ret, params, args) \
  if ((need) == kRequired && api.name == nullptr) missing.emplace_back(#name);
  GPUDOC_NVML_FUNCTIONS(GPUDOC_NVML_X)
#undef GPUDOC_NVML_X
  (void)kOptional;
  return missing;
}

core::Result<std::unique_ptr<NvmlLibrary>> load_nvml_library(const std::string& path) {
  const core::LibrarySpec spec{std::string(kNvmlName),
                               {path.empty() ? std::string(kNvmlLibraryName) : path},
                               "",
                               fmt::format("the NVIDIA driver is not installed, too old, or its library is not on the "
                                           "loader path; {}",
                                           kWithoutNvml)};
  auto opened = core::open_library(spec);
  if (!opened) return opened.error();
  std::unique_ptr<NvmlLibrary> lib(new NvmlLibrary());
  core::SymbolResolver symbols(*opened);
#define GPUDOC_NVML_X(need, name, ret, params, args) symbols.resolve(need, #name, lib->api_.name);
  GPUDOC_NVML_FUNCTIONS(GPUDOC_NVML_X)
#undef GPUDOC_NVML_X
  if (auto st = symbols.status(); !st) return st.error();
  return lib;
}

std::optional<std::string_view> nvlink_version_name(unsigned int code) noexcept {
  switch (code) {
    case NVML_NVLINK_VERSION_1_0: return "1.0";
    case NVML_NVLINK_VERSION_2_0: return "2.0";
    case NVML_NVLINK_VERSION_2_2: return "2.2";
    case NVML_NVLINK_VERSION_3_0: return "3.0";
    case NVML_NVLINK_VERSION_3_1: return "3.1";
    case NVML_NVLINK_VERSION_4_0: return "4.0";
    case NVML_NVLINK_VERSION_5_0: return "5.0";
    default: return std::nullopt;  // INVALID, or newer than this list
  }
}

core::Error nvml_error(const NvmlApi& api, nvmlReturn_t rc, std::string_view what) {
  const char* text = api.nvmlErrorString != nullptr ? api.nvmlErrorString(rc) : nullptr;
  std::string message =
      fmt::format("{}: {} (NVML error {})", what, text != nullptr ? text : "NVML call failed", static_cast<int>(rc));
  core::ErrorKind kind = core::ErrorKind::kEnvironment;
  switch (rc) {
    case NVML_ERROR_GPU_IS_LOST:
    case NVML_ERROR_RESET_REQUIRED: kind = core::ErrorKind::kGpuLost; break;
    case NVML_ERROR_TIMEOUT: kind = core::ErrorKind::kTimeout; break;
    case NVML_ERROR_NOT_SUPPORTED:
    case NVML_ERROR_FUNCTION_NOT_FOUND:  // this driver's NVML lacks it: not supported here either
      kind = core::ErrorKind::kNotSupported;
      break;
    default:  // NO_PERMISSION, LIB_RM_VERSION_MISMATCH, DRIVER_NOT_LOADED, UNKNOWN, ...
      kind = core::ErrorKind::kEnvironment;
      break;
  }
  return core::Error(kind, std::move(message));
}

}  // namespace gpudoc::gpu::nvml
