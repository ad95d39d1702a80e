#include "gpu/backend.hpp"

#include <fmt/format.h>

namespace gpudoc::gpu {

const char* to_string(ComputeMode m) noexcept {
  switch (m) {
    case ComputeMode::kDefault: return "default";
    case ComputeMode::kExclusiveThread: return "exclusive_thread";
    case ComputeMode::kProhibited: return "prohibited";
    case ComputeMode::kExclusiveProcess: return "exclusive_process";
  }
  return "unknown";
}

core::Result<HealthFacts> Backend::health_facts(int gpu) {
  return core::Error(core::ErrorKind::kNotSupported,
                     fmt::format("GPU {}: the {} backend has no health facts", gpu, name()));
}

}  // namespace gpudoc::gpu
