// gpudoc::slice::SharedState — the memory accounting that every process of one slice shares.
//
// `gpudoc slice` creates the state file in its private mkdtemp folder (create()); each process of
// the job maps it (attach()) through the interception library, so children and forks charge one
// budget. The file holds the limits, a process-shared robust mutex, and one slot per process with
// the bytes it holds: a process that dies (killed while holding memory, or while holding the lock)
// is found by its pid and start time and its bytes are given back (reap_dead()).
//
//   std::string error;
//   auto state = slice::SharedState::create(dir + "/state", limits, &error);   // gpudoc slice
//   auto mine = slice::SharedState::attach(path, &error);                      // in the job
//   int slot = mine->register_process(getpid());
//   if (!mine->try_charge(slot, bytes)) return CUDA_ERROR_OUT_OF_MEMORY;
//   ...
//   mine->uncharge(slot, bytes);
//
// Nothing here throws or depends on the rest of gpudoc, and only snapshot() allocates: it runs
// inside the user's process. Thread-safety: every member may be called from any thread of
// any process that maps the file.
#pragma once

#include <pthread.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpudoc::slice {

inline constexpr std::uint32_t kStateMagic = 0x43494c53;  // "SLIC"
inline constexpr std::uint32_t kStateVersion = 3;         // 2: the copy-rate gate; 3: the compute window
inline constexpr int kMaxProcesses = 256;
inline constexpr std::size_t kNameBytes = 64;
inline constexpr std::size_t kCommandBytes = 256;

struct Limits {
  std::uint64_t memory_bytes = 0;  // 0: no memory cap
  std::uint32_t sm_percent = 0;    // 0: no compute cap
  // With a compute cap through the interception library: where the slice's window starts in each
  // gate period, in 1/10000 of it (choose_compute_offset: the slices' windows kept apart).
  std::uint32_t sm_window_offset_permyriad = 0;
  std::uint64_t pcie_bytes_per_second = 0;  // 0: no copy-rate cap
};

struct ProcessSlot {
  std::int32_t pid = 0;           // 0: free
  std::uint64_t start_ticks = 0;  // /proc/PID/stat start time: tells a reused pid apart
  std::uint64_t used_bytes = 0;
  std::uint64_t peak_bytes = 0;
  std::uint64_t refused = 0;  // allocations refused at the cap
};

// The file's layout. Fixed-size, no pointers: it is mapped at different addresses.
struct StateLayout {
  std::uint32_t magic;
  std::uint32_t version;
  pthread_mutex_t mutex;
  Limits limits;
  std::int32_t owner_pid;  // the gpudoc slice process
  std::int32_t mechanism;  // 0: the interception library; 1: MPS client limits
  std::int64_t created_unix_seconds;
  char name[kNameBytes];
  char command[kCommandBytes];
  std::uint64_t reaped_bytes;  // given back on behalf of processes that died holding them
  std::uint32_t reaped_processes;
  std::uint32_t recovered_locks;  // times the lock's owner died holding it
  std::int64_t copy_next_ns;      // the copy-rate gate: when the slice's copies so far end at the cap
  std::uint64_t copy_bytes;       // host<->device bytes counted against --pcie
  std::uint64_t copy_waited_ns;   // time the slice's threads waited at the gate
  ProcessSlot slots[kMaxProcesses];
};

// What `slice list` shows of one slice.
struct Snapshot {
  Limits limits;
  std::int32_t owner_pid = 0;
  std::int32_t mechanism = 0;
  std::int64_t created_unix_seconds = 0;
  std::string name;
  std::string command;
  std::uint64_t used_bytes = 0;
  std::uint64_t reaped_bytes = 0;
  std::uint32_t recovered_locks = 0;
  std::uint64_t copy_bytes = 0;
  std::uint64_t copy_waited_ns = 0;
  std::vector<ProcessSlot> processes;  // live slots only
};

class SharedState {
 public:
  // Creates `path` (O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600) and initialises it. Returns nullopt with
  // `*error` naming the path and the reason.
  static std::optional<SharedState> create(const std::string& path, const Limits& limits, const std::string& name,
                                           const std::string& command, std::string* error, int mechanism = 0);
  // Maps an existing state file (O_NOFOLLOW; size and magic checked).
  static std::optional<SharedState> attach(const std::string& path, std::string* error);
  // A state private to this process and the children it forks (MAP_SHARED|MAP_ANONYMOUS): used when
  // the library is preloaded without `gpudoc slice`, with only GPUDOC_SLICE_MEM_BYTES set.
  static std::optional<SharedState> anonymous(const Limits& limits, std::string* error);

  SharedState(SharedState&& other) noexcept;
  SharedState& operator=(SharedState&& other) noexcept;
  SharedState(const SharedState&) = delete;
  SharedState& operator=(const SharedState&) = delete;
  ~SharedState();

  [[nodiscard]] const Limits& limits() const { return layout_->limits; }
  // The process that created the state (`gpudoc slice`): one number for the whole slice.
  [[nodiscard]] std::int32_t owner_pid() const { return layout_->owner_pid; }

  // The slot of `pid` (registering it, and reaping dead processes when the table is full); -1
  // when all kMaxProcesses slots are held by live processes.
  int register_process(pid_t pid);
  // Frees the slot (a process that exits cleanly); its bytes are given back.
  void unregister_process(int slot, pid_t pid);

  // Adds `bytes` to the slot when the slice's total stays within the memory cap (dead processes are
  // reaped first when it would not); false, and the slot's refusal counted, otherwise.
  bool try_charge(int slot, std::uint64_t bytes);
  // Adds `bytes` whatever the cap (memory already allocated whose size was known only afterwards).
  void charge(int slot, std::uint64_t bytes);
  void uncharge(int slot, std::uint64_t bytes);
  [[nodiscard]] std::uint64_t used_bytes();
  [[nodiscard]] bool has_process(pid_t pid);

  // Gives back the bytes of every process that no longer runs. Returns how many were reaped.
  int reap_dead();
  [[nodiscard]] Snapshot snapshot();
  // The copy-rate cap: counts a host<->device copy of `bytes` at `now_ns` (CLOCK_MONOTONIC, the same
  // in every process) and returns how long the caller must wait before issuing it; 0 without a cap.
  [[nodiscard]] std::int64_t admit_copy(std::uint64_t bytes, std::int64_t now_ns);

  // Takes the lock, making it consistent (and reaping) when its previous owner died holding it.
  // Public for the owner-death tests; everything else locks internally.
  void lock();
  void unlock();

 private:
  explicit SharedState(StateLayout* layout) : layout_(layout) {}
  std::uint64_t used_locked() const;
  int reap_locked();
  int find_or_take_locked(pid_t pid, std::uint64_t start_ticks);
  StateLayout* layout_ = nullptr;
};

// How far ahead of the cap the slice's copies may run: a copy starts at once while the copies
// before it would finish, at the cap's rate, within this much time from now.
inline constexpr std::int64_t kCopyBurstNs = 50'000'000;

// The copy-rate gate (the generic cell rate algorithm on bytes): `next_ns` is when the copies counted
// so far would end if each went at `rate` bytes a second. A copy of `bytes` at `now_ns` may start
// once that is no more than `burst_ns` ahead; returns how long to wait for it (0: at once) and counts
// the copy. Over any window the bytes admitted are at most rate x (window + burst) plus one copy.
std::int64_t copy_wait_ns(std::int64_t& next_ns, std::int64_t now_ns, std::uint64_t bytes, std::uint64_t rate,
                          std::int64_t burst_ns = kCopyBurstNs);

// The start time of `pid` in clock ticks since boot (/proc/PID/stat field 22); 0 when it does not
// run (or /proc cannot be read).
std::uint64_t process_start_ticks(pid_t pid);

}  // namespace gpudoc::slice
