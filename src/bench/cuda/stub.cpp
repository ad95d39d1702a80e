// Built instead of the .cu files when CUDA is off: every GPU call reports "built without CUDA",
// so every GPU benchmark is waived.
#include "bench/cuda/device.hpp"
#include "bench/cuda/gemm.hpp"
#include "bench/cuda/hbm.hpp"
#include "bench/cuda/launch.hpp"
#include "bench/cuda/nccl.hpp"
#include "bench/cuda/p2p.hpp"
#include "bench/cuda/pcie.hpp"

namespace gpudoc::bench::cuda {
namespace {
core::Error no_cuda() {
  return core::Error(core::ErrorKind::kNotSupported,
                     "built without CUDA (configure with nvcc on the PATH, GPUDOC_CUDA=ON)");
}
}  // namespace

bool built_with_cuda() noexcept { return false; }
core::Result<int> device_count() { return no_cuda(); }
core::Result<DeviceInfo> device_info(int /*device*/) { return no_cuda(); }
core::Result<HbmTiming> run_hbm(HbmKernel /*kernel*/, const HbmOptions& /*options*/) { return no_cuda(); }
core::Result<LaunchTiming> run_launch(LaunchKind /*kind*/, const LaunchOptions& /*options*/) { return no_cuda(); }
core::Result<bool> can_access_peer(int /*device*/, int /*peer*/) { return no_cuda(); }
core::Result<P2pCopyTiming> run_p2p_copy(int /*src*/, int /*dst*/, bool /*bidirectional*/,
                                         const P2pCopyOptions& /*options*/) {
  return no_cuda();
}
core::Result<P2pLatencyTiming> run_p2p_latency(int /*reader*/, int /*owner*/, const P2pLatencyOptions& /*options*/) {
  return no_cuda();
}
core::Result<CollectiveTiming> run_collective(const nccl::NcclApi& /*api*/, Collective /*kind*/,
                                              const CollectiveOptions& /*options*/) {
  return no_cuda();
}
core::Result<std::string> load_cublaslt() { return no_cuda(); }
core::Result<GemmTiming> run_gemm(const GemmOptions& /*options*/) { return no_cuda(); }
const char* to_string(HostMemory memory) noexcept { return memory == HostMemory::kPinned ? "pinned" : "pageable"; }
core::Result<PcieTiming> run_pcie(PcieDirection /*direction*/, HostMemory /*memory*/, const PcieOptions& /*options*/) {
  return no_cuda();
}

}  // namespace gpudoc::bench::cuda
