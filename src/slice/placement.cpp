#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/dynamic_library.hpp"
#include "slice/inject/driver_api.hpp"
#include "slice/slice.hpp"

namespace gpudoc::slice {
namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

// The control daemon's endpoint: a FIFO before CUDA 13, a Unix socket from CUDA 13 (an H200 with
// driver 580 showed "Starting control daemon using socket .../control").
bool is_control_endpoint(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
}

}  // namespace

core::Result<std::uint64_t> first_gpu_memory_bytes() {
  const core::LibrarySpec spec{"the CUDA driver",
                               {"libcuda.so.1"},
                               "GPUDOC_CUDA_DRIVER",
                               "install the NVIDIA driver; gpudoc slice needs it to run a job on a GPU"};
  auto lib = core::open_library(spec);
  if (!lib) return lib.error();
  cu::cuInit_t init = nullptr;
  cu::cuDeviceTotalMem_v2_t total = nullptr;
  using DeviceGet = cu::Result (*)(cu::Device*, int);
  DeviceGet device_get = nullptr;
  core::SymbolResolver symbols(*lib);
  symbols.resolve(core::Need::kRequired, "cuInit", init);
  symbols.resolve(core::Need::kRequired, "cuDeviceGet", device_get);
  symbols.resolve(core::Need::kRequired, "cuDeviceTotalMem_v2", total);
  if (auto st = symbols.status(); !st) return st.error();
  cu::Device device = 0;
  std::size_t bytes = 0;
  cu::Result r = init(0);
  if (r == cu::kSuccess) r = device_get(&device, 0);
  if (r == cu::kSuccess) r = total(&bytes, device);
  if (r != cu::kSuccess)
    return core::Error(core::ErrorKind::kEnvironment, "the CUDA driver found no usable GPU (CUresult " +
                                                          std::to_string(r) +
                                                          "); check nvidia-smi and CUDA_VISIBLE_DEVICES");
  return static_cast<std::uint64_t>(bytes);
}

Placement choose_placement() {
  Placement p;
  const std::string visible = env_or("CUDA_VISIBLE_DEVICES", "");
  for (std::size_t start = 0; start <= visible.size();) {
    const std::size_t comma = visible.find(',', start);
    const std::string item = visible.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.rfind("MIG-", 0) == 0) p.mig_instances.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  const std::string pipe_dir = env_or("CUDA_MPS_PIPE_DIRECTORY", "/tmp/nvidia-mps");
  if (is_control_endpoint(pipe_dir + "/control")) {
    p.mechanism = Mechanism::kMps;
    p.mps_pipe_directory = pipe_dir;
    p.note = "an MPS control daemon runs (" + pipe_dir + "): its client limits apply, enforced by the driver";
  } else {
    p.note = "no MPS control daemon: limits enforced by the interception library (LD_PRELOAD)";
  }
  if (!p.mig_instances.empty())
    p.note += "; placed on MIG instance " + p.mig_instances.front() + " (MIG layout left as it is)";
  return p;
}

std::vector<std::string> mps_environment(const Limits& limits) {
  std::vector<std::string> env;
  if (limits.sm_percent > 0) env.push_back("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=" + std::to_string(limits.sm_percent));
  if (limits.memory_bytes > 0) {
    // Whole MiB, rounded down: MPS reads "<device>=<size>" with a unit (its docs write "0=1G,1=512MB"); the cap never
    // grows.
    const std::uint64_t mib = limits.memory_bytes >> 20;
    env.push_back("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=" + std::to_string(mib > 0 ? mib : 1) + "MB");
  }
  return env;
}

core::Result<std::string> find_library(const std::string& exe_dir) {
  const std::string override_path = env_or("GPUDOC_SLICE_LIBRARY", "");
  if (!override_path.empty()) {
    if (access(override_path.c_str(), R_OK) == 0) return override_path;
    return core::Error(core::ErrorKind::kEnvironment,
                       "GPUDOC_SLICE_LIBRARY names " + override_path + ", which cannot be read");
  }
  const std::string name = "libgpudoc_slice.so";
  for (const std::string& dir : {exe_dir, exe_dir + "/../lib/gpudoc", exe_dir + "/../lib/x86_64-linux-gnu/gpudoc",
                                 exe_dir + "/../lib/aarch64-linux-gnu/gpudoc"}) {
    std::error_code ec;
    const auto path = std::filesystem::weakly_canonical(dir + "/" + name, ec);
    if (!ec && access(path.c_str(), R_OK) == 0) return path.string();
  }
  return core::Error(core::ErrorKind::kEnvironment,
                     name + " was not found beside gpudoc (" + exe_dir +
                         ") or in ../lib/gpudoc; reinstall gpudoc or set GPUDOC_SLICE_LIBRARY");
}

}  // namespace gpudoc::slice
