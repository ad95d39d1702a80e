// Running a program under gpudoc's CUPTI injection library, from outside it: finding
// libgpudoc_profile.so and libcupti, starting the program with both (CUDA_INJECTION64_PATH), stopping
// it at a deadline or on a stop request, and picking the records it left.
//
//   auto library = profile::find_injection_library();            // Result<std::string>
//   auto cupti = profile::find_cupti();                            // Result<std::vector<std::string>>
//   auto code = profile::run_injected({.command = argv, .library = *library, .cupti = *cupti,
//                                      .output_dir = dir}, stop_requests);
//   std::size_t files = 0;
//   auto set = profile::pick_records(dir, files);                  // Result<RecordSet>
//
// Errors: kEnvironment for a library that is missing or cannot be read (the message says where
// gpudoc looked and which variable overrides it) and for a program that left no records.
// Thread-safety: none needed; run_injected blocks its caller until the program has ended.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "profile/records.hpp"

namespace gpudoc::profile {

// The driver loads one injection library: a tool already set up for this program (Nsight Systems
// sets CUDA_INJECTION64_PATH) would be silently displaced, and lose its data. kEnvironment naming
// the variable's value when it is set, else ok.
[[nodiscard]] core::Status no_other_injection();

// libgpudoc_profile.so: $GPUDOC_PROFILE_LIBRARY, else beside the running executable, else in
// ../lib/gpudoc (an installed gpudoc). Returns its path.
[[nodiscard]] core::Result<std::string> find_injection_library();

// Every libcupti the program might use, best first: $GPUDOC_CUPTI_LIBRARY, the CUDA toolkit's,
// the distribution's, and the one a pip-installed PyTorch brings.
[[nodiscard]] core::Result<std::vector<std::string>> find_cupti();

// "2:18" or "0.5:9.5" (seconds traced : seconds not) -> "2000:18000", what GPUDOC_PROFILE_SAMPLE
// takes; empty for anything else (each side at least 0.001 s, at most a day).
[[nodiscard]] std::string sample_to_env(const std::string& text);

struct InjectedRun {
  std::vector<std::string> command;
  std::string library;                    // libgpudoc_profile.so
  std::vector<std::string> cupti;         // find_cupti()'s list, not empty
  std::string output_dir;                 // where the injection library writes records-PID.txt
  std::string sample_env;                 // sample_to_env()'s value; empty: trace throughout
  double duration_s = 0;                  // > 0: stop the program after this many seconds
  bool stdout_to_stderr = false;          // the program's stdout goes to stderr (gpudoc's is JSON)
  std::function<void()> while_running{};  // called about every 20 ms while the program runs
};

// Runs the program with the injection library, in a process group of its own, and returns its
// exit code as a shell reports it. After `duration_s` it gets SIGINT (Python then runs its exit
// handlers, which flush CUPTI), then SIGTERM, then SIGKILL, 10 s apart, to its process group. Once
// `stop_requests` counts one, the group is stopped by core::GroupStopper (a second request: at once).
[[nodiscard]] core::Result<int> run_injected(const InjectedRun& run, const std::atomic<int>& stop_requests);

// The records file of the process that ran the most kernels in `dir` (a launcher's children each
// write one); `files` is set to how many there were. Errors: kEnvironment when there was none (no
// CUDA context) or when profiling failed in the program (its first warning).
[[nodiscard]] core::Result<RecordSet> pick_records(const std::string& dir, std::size_t& files);

// The path of process `pid`'s records file in `dir`.
[[nodiscard]] std::string records_path(const std::string& dir, std::uint32_t pid);

// How often `gpudoc profile` reads the energy counters while the program runs (docs/profile.md).
inline constexpr std::chrono::milliseconds kEnergyPeriod{100};

// Appends `set`'s energy readings and notes (energy_lines) to the records file at `path`; a last
// line cut short (no newline: the program was killed mid-write, and the reader skips it) is removed
// first, so the lines after it stay whole. Errors: kIo naming the file.
[[nodiscard]] core::Status append_energy(const std::string& path, const RecordSet& set);

struct ProfileRun {
  std::vector<std::string> command;
  std::string sample_env;         // sample_to_env()'s value; empty: trace throughout
  double duration_s = 0;          // > 0: stop the program after this many seconds
  bool stdout_to_stderr = false;  // the program's stdout goes to stderr
  std::string records_copy;       // keep the chosen records file here too; empty: not kept
};

struct Profiled {
  RecordSet records;          // of the process that ran the most kernels
  int exit_code = 0;          // the program's, as a shell reports it
  std::size_t processes = 0;  // records files written (a launcher's children each write one)
};

// `gpudoc profile -- CMD`: checks that no other tool injects, finds the injection library and
// CUPTI, runs the program under them with its records in a private folder (removed after), reads
// back the records of the process that ran the most kernels and, when asked, keeps a copy of its
// file. While the program runs, the GPUs' NVML energy counters are read (EnergySampler: each GPU at the start and the
// end, one a kEnergyPeriod in turn between; without NVML the reason is kept instead) into the records' energy and
// energy_notes, and appended to the copy (J and U lines). `stopped` is set when the program was stopped by a stop
// request before its records were written (nothing to analyse: the caller exits 128 + N). Errors: no_other_injection's,
// find_injection_library's, find_cupti's, run_injected's, pick_records', kIo (the copy).
[[nodiscard]] core::Result<Profiled> profile_program(const ProfileRun& run, const std::atomic<int>& stop_requests,
                                                     bool& stopped);

// `gpudoc profile --input FILE`: records saved earlier with --records, as a Profiled of one
// process that ran nothing now (exit code 0); copied to `copy` when not empty. Errors: kBadInput
// naming the file when it cannot be read or is not records; kIo (the copy).
[[nodiscard]] core::Result<Profiled> read_saved_records(const std::string& input, const std::string& copy);

}  // namespace gpudoc::profile
