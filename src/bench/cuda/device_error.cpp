// The explanation of a failed device count (cuda/device.hpp). Plain C++, built with and without
// CUDA, so that its test runs everywhere.
#include <string>

#include "bench/cuda/device.hpp"

namespace gpudoc::bench::cuda {

std::string cuda_version_string(int code) {
  if (code <= 0) return "none";
  return std::to_string(code / 1000) + "." + std::to_string(code % 1000 / 10);
}

core::Error explain_device_count_failure(DeviceCountFailure failure, const DriverFacts& facts,
                                         const std::string& cuda_message) {
  auto env = [](std::string m) { return core::Error(core::ErrorKind::kEnvironment, std::move(m)); };
  if (failure != DeviceCountFailure::kOther && !facts.libcuda_loaded) {
    // The runtime reports a missing libcuda as an insufficient driver; say what it is.
    if (facts.libcuda_error.empty() || facts.libcuda_error.find("No such file") != std::string::npos)
      return env(std::string("no NVIDIA driver is installed (") + kLibcudaName + " not found)");
    return env(std::string("the NVIDIA driver's ") + kLibcudaName + " cannot be loaded: " + facts.libcuda_error);
  }
  if (failure == DeviceCountFailure::kInsufficientDriver && facts.driver_version > 0 &&
      facts.driver_version < facts.runtime_version)
    return env("the NVIDIA driver is older than gpudoc's CUDA runtime: the driver supports CUDA " +
               cuda_version_string(facts.driver_version) + ", the runtime is CUDA " +
               cuda_version_string(facts.runtime_version) + "; install a newer driver (" + cuda_message + ")");
  if (failure == DeviceCountFailure::kNoDevice) return env("no NVIDIA GPU is visible (" + cuda_message + ")");
  return env(cuda_message);
}

}  // namespace gpudoc::bench::cuda
