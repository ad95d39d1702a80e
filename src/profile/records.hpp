// gpudoc::profile records — what the injection library recorded in one process, read back from its
// records-<pid>.txt (profile/record_format.hpp, docs/profile.md).
//
//   auto set = profile::read_records_file(dir + "/records-4242.txt");
//   if (!set) return set.error();              // kBadInput "records-4242.txt line 3: ..." / kIo
//   for (const auto& k : set->kernels) ...     // sorted by start
//
// Reading is tolerant where the job may have been cut short: a last line without its newline is
// skipped and counted, and `complete` says whether the E line (a clean exit) was seen. A malformed
// line anywhere else is an error naming the file and line, and so is a span no clock could have
// measured: one that ends before it starts, or lasts more than a day (kMaxSpanNs). The input is read
// under kRecordsInput: /dev/zero, an endless FIFO or a file beyond what a profile writes is refused
// at its limit, in bounded memory. Pure apart from the file read.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/file.hpp"
#include "core/result.hpp"

namespace gpudoc::profile {

// CUPTI's memcpy kinds (CUpti_ActivityMemcpyKind) and memory kinds (CUpti_ActivityMemoryKind).
enum class CopyKind : std::uint8_t { kUnknown = 0, kHtoD = 1, kDtoH = 2, kDtoD = 8, kHtoH = 9, kPtoP = 10 };
inline constexpr std::uint8_t kMemoryPageable = 1;
inline constexpr std::uint8_t kMemoryPinned = 2;

struct KernelRecord {
  std::uint64_t start_ns = 0, end_ns = 0;
  std::uint32_t device = 0, stream = 0, correlation = 0;
  int grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  std::uint32_t graph = 0;  // 0: launched on its own; else the CUDA graph it ran in
  std::string name;         // as CUPTI gave it (mangled)
};

struct CopyRecord {
  std::uint64_t start_ns = 0, end_ns = 0;
  std::uint32_t device = 0, stream = 0, correlation = 0;
  bool memset = false;
  std::uint8_t kind = 0;  // CopyKind for a memcpy
  std::uint8_t src_memory = 0, dst_memory = 0;
  std::uint64_t bytes = 0;
  std::uint32_t graph = 0;
  // A host side of the copy in pageable memory: the driver stages it and the call blocks the host.
  [[nodiscard]] bool pageable() const {
    return !memset && (src_memory == kMemoryPageable || dst_memory == kMemoryPageable);
  }
};

struct ApiRecord {
  std::uint64_t start_ns = 0, end_ns = 0;
  std::uint32_t cbid = 0, correlation = 0, thread = 0;
  bool driver = false;
  std::string name;  // from the C lines ("cudaLaunchKernel_v7000"); "cbid N" when not named
};

struct SyncRecord {
  std::uint64_t start_ns = 0, end_ns = 0;
  std::uint32_t type = 0, stream = 0, correlation = 0;
};

struct GraphLaunchRecord {
  std::uint64_t start_ns = 0, end_ns = 0;
  std::uint32_t device = 0, stream = 0, graph = 0, correlation = 0;
};

// An NVTX push/pop or start/end range, paired from its two marker records.
struct RangeRecord {
  std::uint64_t start_ns = 0, end_ns = 0;
  std::uint32_t thread = 0;
  std::string name, domain;
};

// A stretch during which kernels, copies and API calls were traced (gpudoc profile --sample): from an
// O line to the next F line; without F, to the end of the records.
struct TraceWindow {
  std::uint64_t start_ns = 0, end_ns = UINT64_MAX;
  // Where the window ends when the records end at `last` (last_end_ns): at its F line or at `last`,
  // whichever comes first (an open window ends at `last`), never before it opens.
  [[nodiscard]] std::uint64_t end_by(std::uint64_t last) const { return std::min(end_ns, std::max(last, start_ns)); }
};

// CUPTI's timestamp and the host's CLOCK_MONOTONIC, read together by the injection library (T line):
// what maps a time of one clock to the other (profile/energy.hpp).
struct ClockPair {
  std::uint64_t cupti_ns = 0, monotonic_ns = 0;
};

// A CUDA device of the process (the DEV of its records) and its PCI bus id as CUDA writes it (P line).
struct DeviceBus {
  std::uint32_t device = 0;
  std::string pci_bus_id{};
};

// One reading of a GPU's NVML total-energy counter, taken by `gpudoc profile` while the program ran
// (J line): CLOCK_MONOTONIC nanoseconds, the GPU's PCI bus id as NVML writes it, millijoules.
struct EnergyReading {
  std::uint64_t monotonic_ns = 0;
  std::string pci_bus_id{};
  std::int64_t millijoules = 0;
};

struct RecordSet {
  std::uint32_t pid = 0;
  std::uint32_t cupti_version = 0;
  std::vector<KernelRecord> kernels;  // each vector sorted by start
  std::vector<CopyRecord> copies;     // memcpy and memset
  std::vector<ApiRecord> api_calls;   // runtime and driver
  std::vector<SyncRecord> syncs;
  std::vector<GraphLaunchRecord> graph_launches;
  std::vector<RangeRecord> ranges;
  std::vector<TraceWindow> windows;   // in time order, disjoint; empty: traced throughout (no sampling)
  std::uint64_t dropped = 0;          // records CUPTI dropped for want of buffer space
  std::uint64_t over_file_limit = 0;  // records counted, not written: the file had reached its bound
  std::vector<std::string> warnings;  // the W lines, in order
  bool complete = false;              // the E line was seen: the process exited cleanly
  std::uint64_t truncated_lines = 0;  // a last line cut short (the process was killed mid-write)
  // kernel, copy and memset records without a time (CUPTI's forced flush at a sampling window's end
  // hands back a kernel still running with no end time: 0), left out of the vectors above
  std::uint64_t untimed = 0;
  std::vector<ClockPair> clock_pairs{};     // the T lines, in the order written
  std::vector<DeviceBus> device_buses{};    // the P lines
  std::vector<EnergyReading> energy{};      // the J lines, in the order written
  std::vector<std::string> energy_notes{};  // the U lines: why no counter was read
};

// What gpudoc reads of one records file (docs/limits.md): lines of at most 64 KiB (a kernel's
// mangled name is a few KiB at most), at most 1 GiB (twice the file the injection library writes by
// default, GPUDOC_PROFILE_MAX_MIB) and at most 5,000,000 lines (a default-bound file of real
// records holds about 4.5 million; a file at the limit is analysed in about 770 MB).
inline constexpr core::InputLimits kRecordsInput{.max_bytes = 1ULL << 30,
                                                 .max_line_bytes = 64 << 10,
                                                 .max_lines = 5'000'000,
                                                 .what = "CUPTI records (trace less of the run: --sample, --duration)"};
// The longest span of a kernel, copy, memset, API call, synchronization or graph launch, and of an
// NVTX range: a day. CUPTI's timestamps are nanoseconds of one clock, so a longer one (1.8e18 ns)
// is a damaged record.
inline constexpr std::uint64_t kMaxSpanNs = 86'400ULL * 1'000'000'000ULL;
// W lines kept; the library writes each problem once, so more are counted as one last warning.
inline constexpr std::size_t kMaxWarnings = 100;

// The latest end of any kernel, copy, API call or NVTX range: where a window without its F line ends.
[[nodiscard]] std::uint64_t last_end_ns(const RecordSet& set);

// Reads one process's records from `lines` (its name names the source in errors). Errors: kBadInput
// for a file that is not a gpudoc profile (no H line), a newer format version, a malformed line or
// an impossible span ("<name> line N: <why>": "a kernel that ends (4000) before it starts (5000)",
// "a kernel 1800000000000000000 ns long (over a day)"), or the limits of `lines`; kIo.
[[nodiscard]] core::Result<RecordSet> read_records(core::LineReader& lines);
// The same for records held in memory (`what` names them), under `limits`.
[[nodiscard]] core::Result<RecordSet> read_records_text(std::string_view text, const std::string& what,
                                                        const core::InputLimits& limits = kRecordsInput);
// The same for a file, read under kRecordsInput.
[[nodiscard]] core::Result<RecordSet> read_records_file(const std::string& path);

// The J lines of `readings` and the U lines of `notes`, as `gpudoc profile` appends them to a records
// file (read_records reads them back into RecordSet::energy and energy_notes).
[[nodiscard]] std::string energy_lines(const std::vector<EnergyReading>& readings,
                                       const std::vector<std::string>& notes);

}  // namespace gpudoc::profile
