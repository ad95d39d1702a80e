// gpudoc::health host — reading the machine (files, directory listings, short commands) through an
// injectable HostReader, so every host and version check runs on fixtures in tests.
//
//   health::SystemHostReader host;                    // the real machine
//   health::HostFacts h = health::collect_host(host, numa_gpus);
//   health::VersionFacts v = health::collect_versions(host, sys_info);
//
// Nothing here writes: files are only read, commands only query (ldconfig -p, python3 -c, dmesg).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "gpu/backend.hpp"
#include "health/health.hpp"

namespace gpudoc::health {

struct CommandOutput {
  int exit_code = -1;  // -1: killed (timeout) or could not start
  std::string out;     // stdout (stderr is discarded)
  bool timed_out = false;
};

class HostReader {
 public:
  virtual ~HostReader() = default;
  // The whole file; nullopt when it cannot be read.
  [[nodiscard]] virtual std::optional<std::string> read_file(const std::string& path) = 0;
  // Paths matching a glob pattern, sorted; empty when none.
  [[nodiscard]] virtual std::vector<std::string> glob(const std::string& pattern) = 0;
  // The path with symbolic links resolved; nullopt when it does not exist.
  [[nodiscard]] virtual std::optional<std::string> real_path(const std::string& path) = 0;
  // Runs argv (PATH lookup) with stdin closed, killing it after `timeout`. nullopt: not found.
  [[nodiscard]] virtual std::optional<CommandOutput> run(const std::vector<std::string>& argv,
                                                         std::chrono::milliseconds timeout) = 0;
  // The CPUs this process may run on (sched_getaffinity); empty when unknown.
  [[nodiscard]] virtual std::vector<int> allowed_cpus() = 0;
  // An environment variable; nullopt when unset.
  [[nodiscard]] virtual std::optional<std::string> env(const std::string& name) = 0;
};

// The real machine. Thread-safe.
class SystemHostReader final : public HostReader {
 public:
  [[nodiscard]] std::optional<std::string> read_file(const std::string& path) override;
  [[nodiscard]] std::vector<std::string> glob(const std::string& pattern) override;
  [[nodiscard]] std::optional<std::string> real_path(const std::string& path) override;
  [[nodiscard]] std::optional<CommandOutput> run(const std::vector<std::string>& argv,
                                                 std::chrono::milliseconds timeout) override;
  [[nodiscard]] std::vector<int> allowed_cpus() override;
  [[nodiscard]] std::optional<std::string> env(const std::string& name) override;
};

// CPU governors, allowed CPUs, each GPU's NUMA node and its CPUs, the advised sysctls.
// `gpus`: (index, NVML PCI bus id "00000000:18:00.0").
[[nodiscard]] HostFacts collect_host(HostReader& host, const std::vector<std::pair<int, std::string>>& gpus);

// The sysfs name of an NVML bus id: "00000000:18:00.0" -> "0000:18:00.0" (lower case).
[[nodiscard]] std::string sysfs_bus_id(const std::string& nvml_bus_id);

// cudart, cuBLAS, cuDNN and NCCL found through `ldconfig -p`, $LD_LIBRARY_PATH and
// /usr/local/cuda*/lib64 (versions from the files' resolved names), and, when `with_torch`,
// torch's versions through python3 (10 s timeout). Driver versions come from `system`.
[[nodiscard]] VersionFacts collect_versions(HostReader& host, const gpu::SystemInfo& system, bool with_torch);
// Only the torch part (the CLI runs it beside the load).
void collect_torch(HostReader& host, VersionFacts& out);

// XIDs in the kernel log through `dmesg` (when readable). Fills events/kernel_log_read/why_not.
void collect_kernel_xids(HostReader& host, const std::vector<std::string>& bus_ids, XidInput& out);

}  // namespace gpudoc::health
