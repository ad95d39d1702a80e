// gpudoc::slice — the parts of `gpudoc slice` that run outside the job: reading the limits a
// person types, choosing the mechanism (NVIDIA MPS when its control daemon runs, else the
// interception library), creating the slice's private folder and shared state, running the job in
// it, and listing the slices that run now.
//
//   auto mem = slice::parse_size("40G");            // 40 GiB, in bytes
//   auto sm = slice::parse_percent("80%");          // 80
//   slice::Request req{limits, "infer", {"python3", "serve.py"}};
//   auto code = slice::run(req, slice::find_library(exe_dir).value());   // the job's exit code
//   auto slices = slice::list();                   // every slice of this user, with its processes
//
// Errors (core::Result): kBadInput for a malformed or impossible limit (naming the flag and the
// value), kEnvironment for no CUDA driver or no interception library. Thread-safety: none needed
// (one command at a time); run() blocks until the job ends.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "slice/inject/shared_state.hpp"

namespace gpudoc::slice {

// "40G", "40GiB", "512M", "1.5T", "4096" (bytes). K/M/G/T with or without "i"/"iB" are binary
// (1024-based, as nvidia-smi and PyTorch count GPU memory); KB/MB/GB/TB are decimal. Zero,
// negative, and sizes over 2^63 are kBadInput. `flag` names the option in messages.
[[nodiscard]] core::Result<std::uint64_t> parse_size(std::string_view text, std::string_view flag);
// "80%" or "80": 1..100.
[[nodiscard]] core::Result<std::uint32_t> parse_percent(std::string_view text, std::string_view flag);
// "12G", "12GB/s", "800M/s": bytes per second (sizes as parse_size).
[[nodiscard]] core::Result<std::uint64_t> parse_rate(std::string_view text, std::string_view flag);
// The limits of `gpudoc slice --mem SIZE --sm PERCENT --pcie RATE` from the flags' texts (empty: not
// given). Errors: kUsage when none is given (the message shows each flag), else parse_size's,
// parse_percent's or parse_rate's.
[[nodiscard]] core::Result<Limits> limits_from_text(const std::string& mem, const std::string& sm,
                                                    const std::string& pcie);

// The total memory of the job's first GPU (as CUDA numbers them), in bytes, read through the CUDA
// driver (libcuda.so.1, or the file GPUDOC_CUDA_DRIVER names). kEnvironment when there is no driver
// or no GPU.
[[nodiscard]] core::Result<std::uint64_t> first_gpu_memory_bytes();
// Whether `limits` asks for no more memory than the GPU has (`gpu_bytes`, first_gpu_memory_bytes()):
// a cap above it would never bind, and the person meant something else. `mem` is the --mem text, as
// the message quotes it. Errors: kBadInput "--mem 200G: more than the GPU's 140.4 GiB (150754820096
// bytes)".
[[nodiscard]] core::Status check_memory_fits(const Limits& limits, const std::string& mem, std::uint64_t gpu_bytes);

enum class Mechanism {
  kInterception,  // LD_PRELOAD of libgpudoc_slice.so; accounting in the slice's shared state
  kMps,           // an MPS control daemon runs: its client limits, enforced by the driver
};
struct Placement {
  Mechanism mechanism = Mechanism::kInterception;
  std::string mps_pipe_directory;          // with kMps
  std::vector<std::string> mig_instances;  // MIG-... entries of CUDA_VISIBLE_DEVICES: reported, never changed
  std::string note;                        // one line for the person: why this mechanism
};
// MPS when CUDA_MPS_PIPE_DIRECTORY (or /tmp/nvidia-mps) holds the control daemon's pipe.
[[nodiscard]] Placement choose_placement();
// The variables that make an MPS client honour `limits`.
[[nodiscard]] std::vector<std::string> mps_environment(const Limits& limits);
// What a person is told before the job starts about what `placement` enforces of `limits` and what
// it cannot: lines for stderr, each starting "gpudoc slice: "; empty when there is nothing to say.
[[nodiscard]] std::string enforcement_notes(const Limits& limits, const Placement& placement);

// Where a new slice's compute window goes (interception library, --sm): its start in each gate period,
// in 1/10000 of the period, so that its part [start, start + cap) overlaps least the parts `taken` by
// the slices that run (start, length; in 1/10000, on a circle of 10000): 0 when nothing is taken,
// else the first free gap wide enough, else the start with the least overlap (caps over 100 % in all).
struct ComputePart {
  std::uint32_t start = 0, length = 0;
};
[[nodiscard]] std::uint32_t choose_compute_offset(std::uint32_t cap_percent, const std::vector<ComputePart>& taken);

// libgpudoc_slice.so: GPUDOC_SLICE_LIBRARY, else beside the gpudoc executable, else
// ../lib/gpudoc/ and ../lib/<multiarch>/gpudoc/ from it. kEnvironment when none exists.
[[nodiscard]] core::Result<std::string> find_library(const std::string& exe_dir);

struct Request {
  Limits limits;
  std::string name;
  std::vector<std::string> command;
};
// Runs the command in a new slice, in a process group of its own, and returns its exit status as a
// shell reports it (128+N when killed by signal N). The slice's folder (mkdtemp, 0700) and state
// live as long as the job. Once `stop_requests` (counted by the caller's signal handlers) is not
// 0, the job's group is stopped by the stop policy (core::GroupStopper: SIGTERM, SIGKILL after
// the grace period or at a second request), and run returns when the group is gone.
[[nodiscard]] core::Result<int> run(const Request& request, const Placement& placement, const std::string& library,
                                    const std::atomic<int>* stop_requests = nullptr);

// Everything `gpudoc slice` settles before the job starts: the limits from the flags' texts (as
// limits_from_text), that they fit the first GPU, the mechanism, and the interception library
// (found from `exe_dir`) when it is the mechanism. The slice is named `name`, else after the
// command's program. Errors: limits_from_text's, first_gpu_memory_bytes', check_memory_fits',
// find_library's.
struct Plan {
  Request request;
  Placement placement;
  std::string library;  // empty with MPS
};
struct PlanInput {
  std::string mem{}, sm{}, pcie{};  // the flags' texts; empty: not given
  std::string name{};
  std::vector<std::string> command{};
};
[[nodiscard]] core::Result<Plan> plan(const PlanInput& input, const std::string& exe_dir);

struct Listed {
  std::string folder;
  bool owner_running = false;  // false: gpudoc slice is gone (killed); the folder is left over
  Snapshot state;
};
// The slices of this user under `base` (default: the temporary folder), oldest first.
[[nodiscard]] std::vector<Listed> list(const std::string& base = {});

}  // namespace gpudoc::slice
