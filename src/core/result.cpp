#include "core/result.hpp"

namespace gpudoc::core {

int exit_code(ErrorKind kind) noexcept {
  switch (kind) {
    case ErrorKind::kUsage:
    case ErrorKind::kBadInput:
    case ErrorKind::kIo: return kExitUsage;
    case ErrorKind::kEnvironment:
    case ErrorKind::kNotSupported:
    case ErrorKind::kGpuLost:
    case ErrorKind::kTimeout: return kExitEnvironment;
    case ErrorKind::kInternal: return kExitInternal;
  }
  return kExitInternal;
}

const char* to_string(ErrorKind kind) noexcept {
  switch (kind) {
    case ErrorKind::kUsage: return "usage";
    case ErrorKind::kBadInput: return "bad_input";
    case ErrorKind::kEnvironment: return "environment";
    case ErrorKind::kNotSupported: return "not_supported";
    case ErrorKind::kGpuLost: return "gpu_lost";
    case ErrorKind::kTimeout: return "timeout";
    case ErrorKind::kIo: return "io";
    case ErrorKind::kInternal: return "internal";
  }
  return "internal";
}

}  // namespace gpudoc::core
