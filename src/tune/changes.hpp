// gpudoc::tune changes — what `gpudoc tune` may change in how a job is launched, and which of those
// changes a diagnosis points to. Every change needs no edit of the job's code and is undone by
// launching the job as before: an environment variable, the CPUs the job may run on, or a named
// patch of the opt-in Python shim (python/gpudoc/tune.py). Advice that would change the machine
// (sysctls, transparent huge pages, the CPU governor) is reported, never applied. Pure: no I/O.
//
//   tune::Evidence e;                           // the diagnosis, the machine, the command
//   e.findings = {"sawtooth"};
//   e.allowed_cpus = {0, 1, ..., 15};
//   e.python = true;
//   tune::Picked p = tune::pick(e, {});         // changes by layer, what is not tried and why
//
// docs/tune.md has the table of changes, what points to each and why.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpudoc::tune {

// The layers, in the order they are tuned: a change kept in one stays on for the next.
enum class Layer { kProcess = 0, kCuda = 1, kNccl = 2, kFramework = 3 };
inline constexpr int kLayerCount = 4;
[[nodiscard]] const char* to_string(Layer layer) noexcept;         // "process", "cuda", "nccl", "framework"
[[nodiscard]] std::string_view layer_title(Layer layer) noexcept;  // "process and OS", ...

// One change of how the job is launched.
struct Change {
  std::string id{};  // stable: "omp_threads_1", "loader_workers_pinned", "tf32"
  // The family `--only` may name; alternatives of one knob exclude each other (at most one is kept).
  std::string knob{};
  Layer layer = Layer::kProcess;
  std::vector<std::string> env{};      // "NAME=VALUE"
  std::vector<int> cpus{};             // the CPUs the job may run on; empty: unchanged
  std::vector<std::string> patches{};  // the shim's patches ("workers=8", "pin_memory")
  bool numerics = false;               // may change results (TF32, lower precision)
  std::string what{};                  // what it changes, in a few words
  std::string why{};                   // what in the diagnosis or the machine points to it
  int priority = 1;                    // 0: the diagnosis's own cure; 1: worth a try; dropped first when short
  // What it adds to the start of a trial (a compile), in seconds: the plan counts it, and a trial's
  // time limit allows for it.
  double start_extra_s = 0;
};

// A change gpudoc knows but does not try on this job, and why.
struct NotTried {
  std::string id{};
  Layer layer = Layer::kProcess;
  std::string why{};
};

// Advice only: what the machine's setting is and what could be tried by its administrator.
struct Advice {
  std::string id{};       // "thp", "cpu_governor", "sysctl:vm.swappiness"
  std::string title{};    // "Transparent huge pages"
  std::string current{};  // "always"
  std::string advice{};   // the command, for an administrator
  std::string why{};      // why gpudoc does not apply or measure it
};

// What the shim's `observe` patch saw the job do in the plain run (python/gpudoc/tune.py).
struct ShimSeen {
  bool observed = false;  // the plain run ran under the observing shim
  bool torch = false;     // the job imported torch
  std::string torch_version{};
  bool compile = false;      // that torch has torch.compile
  int dataloaders = 0;       // DataLoaders made
  int iterable_loaders = 0;  // of them, over an IterableDataset
  int max_workers = 0;       // the most workers one had
  bool pinned = false;       // every one pinned its memory
  int cuda_modules = 0;      // modules with parameters moved to a CUDA device
  int conv_modules = 0;      // of them, with 2-D convolutions
};

// What the changes are picked from: the diagnosis of the job's plain run, the machine, the command.
struct Evidence {
  bool diagnosed = false;
  std::string why_not_diagnosed{};      // when not diagnosed
  std::vector<std::string> findings{};  // the diagnosis's finding ids (every severity)
  std::string plateau_kind{};           // the plateau finding's kind ("launch_bound", "busy_idle"), when one
  // A sawtooth faster than the utilization sensor, or a plateau that may be one: launches or host
  // work, the telemetry cannot tell which.
  bool gaps_unresolved = false;
  int gpus = 0;                                            // GPUs the job's machine shows (the backend's count)
  int gpus_used = 0;                                       // GPUs the diagnosis saw at work
  std::vector<std::pair<int, std::string>> gpu_bus_ids{};  // those GPUs: (NVML index, PCI bus id)
  bool nvlink = false;                                     // the used GPUs have NVLink links
  std::vector<int> allowed_cpus{};                         // the CPUs the job may run on now
  std::optional<int> gpu_numa_node{};                      // the node of the GPUs the job used, when they share one
  std::vector<int> gpu_node_cpus{};                        // that node's CPUs
  int numa_nodes = 1;                                      // nodes with CPUs
  bool python = false;                                     // the command runs a Python program the shim can start
  std::string why_not_python{};                            // when not
  ShimSeen seen{};                           // what the shim saw the job do, when its plain run ran under it
  std::map<std::string, std::string> env{};  // the variables the changes set, as the job would see them
  std::map<std::string, int> governors{};    // CPU governor -> CPUs
  std::string thp{};                         // transparent huge pages: the selected mode ("madvise")
  std::map<std::string, std::string> sysctls{};
};

struct PickOptions {
  std::vector<std::string> only{};  // ids or knobs: exactly these (still subject to the machine's limits)
};

struct Picked {
  std::vector<Change> changes{};  // in layer order, the diagnosis's cures first within a layer
  std::vector<NotTried> not_tried{};
  std::vector<Advice> advice{};
};

[[nodiscard]] Picked pick(const Evidence& evidence, const PickOptions& options);

// Every change id and knob gpudoc knows (for --only's check and the docs).
[[nodiscard]] std::vector<std::string> known_names();

// What torch.compile is expected to add to a trial's start (a first compile of a model's step,
// reduce-overhead's CUDA Graph recording); a trial that compiles may take three times that more.
inline constexpr double kCompileStartS = 45;

// The variable NCCL_NVLS_ENABLE=0 is set in every trial, the unchanged job's included: NVLink
// multicast stays off on shared machines (docs/tune.md).
inline constexpr std::string_view kAlwaysEnv = "NCCL_NVLS_ENABLE=0";

// "0-3,8,10-11" from {0,1,2,3,8,10,11} (taskset -c's form).
[[nodiscard]] std::string cpulist(const std::vector<int>& cpus);

}  // namespace gpudoc::tune
