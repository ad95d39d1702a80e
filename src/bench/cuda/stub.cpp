// Built instead of the .cu files when CUDA is off: every GPU call reports "built without CUDA",
// so every GPU benchmark is waived.
#include "bench/cuda/device.hpp"
#include "bench/cuda/hbm.hpp"
#include "bench/cuda/launch.hpp"

namespace gpudoc::bench::cuda {
namespace {
core::Error no_cuda() {
  return core::Error(core::ErrorKind::kNotSupported, "built without CUDA (configure with nvcc on the PATH, GPUDOC_CUDA=ON)");
}
}  // namespace

bool built_with_cuda() noexcept { return false; }
core::Result<int> device_count() { return no_cuda(); }
core::Result<DeviceInfo> device_info(int /*device*/) { return no_cuda(); }
core::Result<HbmTiming> run_hbm(HbmKernel /*kernel*/, const HbmOptions& /*options*/) { return no_cuda(); }
core::Result<LaunchTiming> run_launch(LaunchKind /*kind*/, const LaunchOptions& /*options*/) { return no_cuda(); }

}  // namespace gpudoc::bench::cuda
