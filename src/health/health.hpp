// gpudoc::health — is this GPU node healthy and set up right? Pure checks over facts.
//
// The CLI (cmd_health.cpp) gathers the inputs — each GPU's HealthFacts and DeviceInfo through the
// gpu::Backend, what the GPU did during a short load, XID events, and host facts through a
// HostReader (host.hpp) — and hands them to the checks here. Every check returns CheckResults:
// pass / info / warn / fail / skip, a catalog finding id (area "health", docs/findings.md), the
// evidence in words and numbers, and the next step. Nothing here changes a setting.
//
//   health::GpuInput in;                                  // filled by the collector or a test
//   in.facts = fake.default_health_facts();
//   auto results = health::check_gpu(in);                 // persistence, ECC, PCIe, clocks, ...
//   bool failed = health::any_failed(results);            // exit 1
//
// Thresholds are the device's own (NVML's slowdown/shutdown temperatures, max clocks, max PCIe
// link, default power limit), never fixed degrees or watts; each is named in docs/methodology.md.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "findings/finding.hpp"
#include "gpu/backend.hpp"

namespace gpudoc::health {

// Ordered by how bad: the worst status of a list is its max. kSkip: could not be checked
// (unsupported, unreadable) — never counted as a pass. kInfo: advice only.
enum class Status { kSkip = 0, kPass = 1, kInfo = 2, kWarn = 3, kFail = 4 };
[[nodiscard]] const char* to_string(Status s) noexcept;  // "skip", "pass", "info", "warn", "fail"

struct CheckResult {
  std::string check;       // "ecc", "pcie_link", ... (short, for the table)
  std::optional<int> gpu;  // absent for host-wide checks
  Status status = Status::kPass;
  std::string finding_id;                  // a catalog id of area "health"
  std::string evidence;                    // one line with the numbers
  std::string next_step;                   // what to do; empty on pass
  std::vector<findings::Evidence> values;  // the numbers behind it (stored, plotted by report)
};

[[nodiscard]] bool any_failed(const std::vector<CheckResult>& results);
// `gpudoc health --gate`'s one line: "" when no check failed, else each failed check as
// "CHECK on GPU N: EVIDENCE" (host-wide checks without "on GPU"), joined with "; " — what a Slurm
// prolog writes as the node's drain reason. Newlines in the evidence become spaces.
[[nodiscard]] std::string gate_reason(const std::vector<CheckResult>& results);
[[nodiscard]] Status worst(const std::vector<CheckResult>& results);
[[nodiscard]] nlohmann::json to_json(const CheckResult& r);

// ---- What the GPU did while gpudoc's own short load ran (or idle, when it did not) --------------
struct LoadSample {
  double t_s = 0;  // seconds since the load started
  std::optional<double> sm_clock_mhz;
  std::optional<std::uint64_t> clock_event_reasons;
  std::optional<double> temperature_celsius;
  std::optional<double> memory_temperature_celsius;
  std::optional<double> power_watts;
  std::optional<int> pcie_link_generation;
  std::optional<int> pcie_link_width;
};

struct LoadTelemetry {
  bool ran = false;                 // the load ran on this GPU
  std::string why_not;              // "--no-load", "built without CUDA", the CUDA error
  double warmup_s = 1.0;            // samples before this are ignored (clocks ramp up)
  std::vector<LoadSample> samples;  // during the load, or idle readings without one
};

// Everything check_gpu needs about one GPU.
struct GpuInput {
  int gpu = 0;
  gpu::DeviceInfo info;
  std::optional<gpu::HealthFacts> facts;  // absent: the backend could not read them
  std::string facts_error;                // why they are absent
  std::optional<core::Error> lost;        // kGpuLost seen anywhere during the check
  LoadTelemetry load;
};

// All per-GPU checks: gpu_lost, persistence_mode, compute_mode, mig, ecc, row_remapping,
// retired_pages, temperature, power, clocks, pcie_link, nvlink. A lost GPU yields only gpu_lost.
[[nodiscard]] std::vector<CheckResult> check_gpu(const GpuInput& in);

// Clocks under load: the median SM clock of the load samples after warm-up is within 3 % of the
// maximum SM clock. Below: fail when thermal / hardware slowdown / power brake reasons were seen,
// warn otherwise (power cap, or no reason). Without a load: skip.
inline constexpr double kClockTolerance = 0.03;

// ---- XID errors -----------------------------------------------------------------------------------
// NVIDIA's XID catalog sorts each XID by the action it needs first (its "Resolution Bucket
// (Immediate Action)"): RESTART_APP -> kApplication, RESET_GPU -> kResetGpu, RESTART_BM -> kReboot,
// IGNORE -> kInformational. Numbers gpudoc's table does not list are kUnknown.
enum class XidClass { kApplication, kResetGpu, kReboot, kInformational, kUnknown };
[[nodiscard]] const char* to_string(XidClass c) noexcept;  // "application", "reset_gpu", "reboot", ...
[[nodiscard]] XidClass classify_xid(std::uint64_t xid) noexcept;
// kResetGpu or kReboot: no work on the GPU can be trusted until it is reset (the guard's fatal XIDs).
[[nodiscard]] bool xid_needs_reset(std::uint64_t xid) noexcept;
[[nodiscard]] std::string_view xid_description(std::uint64_t xid) noexcept;  // "" when not listed
// The catalog's immediate action for `xid`, verbatim ("RESTART_BM", "WORKFLOW_XID_48"); "" when not listed.
[[nodiscard]] std::string_view xid_catalog_action(std::uint64_t xid) noexcept;
// XID 154 carries the recovery action the driver now wants in its log line.
inline constexpr std::uint64_t kXidRecoveryActionChanged = 154;

struct XidEvent {
  std::optional<int> gpu;  // absent when its PCI address matches no GPU
  std::uint64_t xid = 0;
  std::string source;  // "nvml" (while gpudoc ran) or "kernel_log"
  std::string text;    // the kernel log line, when from there
};
// classify_xid, except that an XID 154 with its log line is classed by the action the line names
// ("... to 0x2 (Node Reboot Required)" -> kReboot, "GPU Reset Required"/"Drain and Reset" ->
// kResetGpu, "None" -> kInformational, anything else -> kUnknown).
[[nodiscard]] XidClass classify_xid_event(const XidEvent& e);

// Parses "NVRM: Xid (PCI:0000:18:00): 79, pid=..., ..." lines; `bus_ids` are the GPUs' NVML PCI
// bus ids ("00000000:18:00.0") in GPU order, to map each line to a GPU.
[[nodiscard]] std::vector<XidEvent> parse_kernel_log_xids(std::string_view log,
                                                          const std::vector<std::string>& bus_ids);

struct XidInput {
  std::vector<XidEvent> events;
  bool nvml_events_watched = false;  // the NVML event API was armed while gpudoc ran
  bool kernel_log_read = false;
  std::string kernel_log_why_not;  // "dmesg: Operation not permitted"
};
// One result per GPU with XIDs (the worst class decides), or one pass for the node.
[[nodiscard]] std::vector<CheckResult> check_xids(const XidInput& in, int gpu_count);

// ---- Versions -------------------------------------------------------------------------------------
struct LibraryVersion {
  std::string name;     // "cudart", "cublas", "cudnn", "nccl"
  std::string path;     // the file found
  std::string version;  // "12.4.127"; empty when only the soname major is known
};
struct VersionFacts {
  std::string driver_version;       // "580.159.03"
  std::string cuda_driver_version;  // CUDA the driver supports: "13.0"
  std::vector<LibraryVersion> libraries;
  std::optional<std::string> torch_version;
  std::optional<std::string> torch_cuda_version;   // torch.version.cuda: "12.8"
  std::optional<std::string> torch_cudnn_version;  // "91002"
  std::string torch_why_not;                       // "python3 not found", "no torch", "timed out"
};
// Fails when a CUDA runtime (a library's or torch's) has a newer major version than the driver
// supports; warns on a newer minor of the same major (minor version compatibility: runs, but PTX
// compiled for the newer minor cannot be JIT-compiled by this driver).
[[nodiscard]] std::vector<CheckResult> check_versions(const VersionFacts& v);

// ---- Host ----------------------------------------------------------------------------------------
struct GpuNuma {
  int gpu = 0;
  std::string pci_bus_id;
  std::optional<int> numa_node;  // absent: unreadable; -1: the platform reports none
  std::vector<int> node_cpus;    // the node's cpulist
};
struct HostFacts {
  std::map<std::string, int> governors;  // governor -> CPU count; empty: no cpufreq
  std::vector<int> allowed_cpus;         // sched_getaffinity; empty: unknown
  std::vector<GpuNuma> gpus;
  std::map<std::string, std::string> sysctls;  // "vm.swappiness" -> "60"; only the readable ones
};
// cpu_governor (warn when not every CPU runs "performance"), numa (warn when a GPU's node has
// none of the CPUs this process may run on), sysctl (info: the value and what it affects).
[[nodiscard]] std::vector<CheckResult> check_host(const HostFacts& h);

// The sysctls the health check shows, with what each affects.
struct SysctlAdvice {
  std::string_view name;
  std::string_view path;
  std::string_view affects;
};
[[nodiscard]] const std::vector<SysctlAdvice>& sysctl_advice();

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}; malformed parts are skipped.
[[nodiscard]] std::vector<int> parse_cpulist(std::string_view s);

}  // namespace gpudoc::health
