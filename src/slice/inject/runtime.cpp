#include "slice/inject/runtime.hpp"

#include <dlfcn.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <unordered_map>

#include "slice/inject/compute_cap.hpp"
#include "slice/inject/driver_api.hpp"
#include "slice/inject/shared_state.hpp"

namespace gpudoc::slice::inject {
namespace {

constexpr int kHookCount = static_cast<int>(Hook::kCount);

struct Process {
  DlsymFn dlsym = nullptr;
  void* driver = nullptr;
  void* reals[kHookCount] = {};
  pthread_once_t driver_once = PTHREAD_ONCE_INIT;
  std::optional<SharedState> state;
  int slot = -1;  // this process's slot in the shared state; -1 until registered
  pid_t slot_pid = 0;
  pthread_mutex_t map_mutex = PTHREAD_MUTEX_INITIALIZER;
  std::unordered_map<std::uint64_t, std::uint64_t>* pointers = nullptr;  // never freed: used until exit
  std::unordered_map<std::uint64_t, std::uint64_t>* handles = nullptr;
  bool logged[static_cast<int>(Message::kCount)] = {};
};

Process& process() {
  // Never destroyed: hooks and the unload handler may run after static destructors at exit.
  alignas(Process) static unsigned char storage[sizeof(Process)];
  static Process* p = new (storage) Process();
  return *p;
}

void write_stderr(const char* text) {
  const std::size_t n = std::strlen(text);
  std::size_t done = 0;
  while (done < n) {
    const ssize_t w = write(STDERR_FILENO, text + done, n - done);
    if (w <= 0) return;
    done += static_cast<std::size_t>(w);
  }
}

void load_driver() {
  Process& p = process();
  p.driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (p.driver == nullptr) p.driver = dlopen("libcuda.so.1", RTLD_LAZY);
  if (p.driver == nullptr || p.dlsym == nullptr) {
    log_once(Message::kNoDriver, "libcuda.so.1 could not be loaded; CUDA calls fail as without a driver");
    return;
  }
  for (int i = 0; i < kHookCount; ++i) {
    void* fn = p.dlsym(p.driver, kHooks[i].symbol);
    __atomic_store_n(&p.reals[i], fn, __ATOMIC_RELEASE);
  }
}

int own_slot() {
  Process& p = process();
  if (!p.state) return -1;
  // Read and written by any thread: a stale pair only costs one more lookup of the same slot.
  const pid_t pid = getpid();
  const int slot = __atomic_load_n(&p.slot, __ATOMIC_ACQUIRE);
  if (slot >= 0 && __atomic_load_n(&p.slot_pid, __ATOMIC_ACQUIRE) == pid) return slot;
  const int mine = p.state->register_process(pid);
  if (mine < 0) log_once(Message::kNoSlot, "the slice's process table is full; this process's allocations are refused");
  __atomic_store_n(&p.slot_pid, pid, __ATOMIC_RELEASE);
  __atomic_store_n(&p.slot, mine, __ATOMIC_RELEASE);
  return mine;
}

void open_state() {
  Process& p = process();
  std::string error;
  const char* path = std::getenv("GPUDOC_SLICE_STATE");
  const char* mem = std::getenv("GPUDOC_SLICE_MEM_BYTES");
  if (path != nullptr && *path != '\0') {
    p.state = SharedState::attach(path, &error);
  } else if (mem != nullptr && *mem != '\0') {
    Limits limits;
    limits.memory_bytes = std::strtoull(mem, nullptr, 10);
    p.state = SharedState::anonymous(limits, &error);
  } else {
    return;  // preloaded without a slice: every call passes through
  }
  if (!p.state) log_once(Message::kBadState, (error + "; no limit is enforced").c_str());
}

void after_fork_in_child() {
  // The child has no CUDA context of its parent's: it starts with no allocations of its own, and
  // another thread may have held the map's lock at fork.
  Process& p = process();
  __atomic_store_n(&p.slot, -1, __ATOMIC_RELEASE);
  __atomic_store_n(&p.slot_pid, 0, __ATOMIC_RELEASE);
  pthread_mutex_init(&p.map_mutex, nullptr);
  if (p.pointers != nullptr) p.pointers->clear();
  if (p.handles != nullptr) p.handles->clear();
  compute_cap_after_fork();
}

void resolve_dlsym() {
  Process& p = process();
  for (const char* version : {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17"}) {
    p.dlsym = reinterpret_cast<DlsymFn>(dlvsym(RTLD_NEXT, "dlsym", version));
    if (p.dlsym != nullptr) return;
  }
}

__attribute__((constructor)) void on_load() {
  resolve_dlsym();
  try {
    open_state();
  } catch (...) {
    log_once(Message::kBadState, "out of memory while opening the slice state; no limit is enforced");
  }
  pthread_atfork(nullptr, nullptr, after_fork_in_child);
}

__attribute__((destructor)) void on_unload() {
  Process& p = process();
  if (p.state && p.slot >= 0 && p.slot_pid == getpid()) p.state->unregister_process(p.slot, p.slot_pid);
}

}  // namespace

DlsymFn real_dlsym() { return process().dlsym; }

void* real_function(Hook hook) {
  Process& p = process();
  pthread_once(&p.driver_once, load_driver);
  return __atomic_load_n(&p.reals[static_cast<int>(hook)], __ATOMIC_ACQUIRE);
}

void note_real_function(int index, void* fn) {
  if (index < 0 || index >= kHookCount) return;
  void* expected = nullptr;
  __atomic_compare_exchange_n(&process().reals[index], &expected, fn, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

std::uint64_t memory_cap() {
  const Process& p = process();
  return p.state ? p.state->limits().memory_bytes : 0;
}

bool reserve(std::uint64_t bytes) {
  Process& p = process();
  if (!p.state) return true;
  if (p.state->try_charge(own_slot(), bytes)) return true;
  log_once(Message::kRefused, "an allocation over the slice's memory cap was refused with CUDA_ERROR_OUT_OF_MEMORY");
  return false;
}

void charge_unchecked(std::uint64_t bytes) {
  Process& p = process();
  if (p.state) p.state->charge(own_slot(), bytes);
}

void release(std::uint64_t bytes) {
  Process& p = process();
  if (p.state) p.state->uncharge(own_slot(), bytes);
}

std::uint64_t slice_used() {
  Process& p = process();
  return p.state ? p.state->used_bytes() : 0;
}

void register_self() {
  if (process().state) (void)own_slot();
}

bool track(Kind kind, std::uint64_t key, std::uint64_t bytes) {
  Process& p = process();
  if (!p.state) return true;
  pthread_mutex_lock(&p.map_mutex);
  bool ok = true;
  try {
    auto*& map = kind == Kind::kPointer ? p.pointers : p.handles;
    if (map == nullptr) map = new std::unordered_map<std::uint64_t, std::uint64_t>();
    (*map)[key] = bytes;
  } catch (...) {
    ok = false;
  }
  pthread_mutex_unlock(&p.map_mutex);
  if (!ok) log_once(Message::kTrackingFailed, "out of host memory while recording an allocation; it is not charged");
  return ok;
}

std::optional<std::uint64_t> untrack(Kind kind, std::uint64_t key) {
  Process& p = process();
  if (!p.state) return std::nullopt;
  std::optional<std::uint64_t> bytes;
  pthread_mutex_lock(&p.map_mutex);
  auto* map = kind == Kind::kPointer ? p.pointers : p.handles;
  if (map != nullptr) {
    auto it = map->find(key);
    if (it != map->end()) {
      bytes = it->second;
      map->erase(it);
    }
  }
  pthread_mutex_unlock(&p.map_mutex);
  return bytes;
}

void before_launch() {
  Process& p = process();
  if (!p.state) return;
  const std::uint32_t percent = p.state->limits().sm_percent;
  if (percent == 0 || percent >= 100) return;
  start_compute_cap(percent);
  const auto offset_ns =
      static_cast<std::int64_t>(p.state->limits().sm_window_offset_permyriad) * kGatePeriodNs / 10000;
  compute_gate(current_duty(), offset_ns);
}

bool copy_cap_on() {
  Process& p = process();
  return p.state && p.state->limits().pcie_bytes_per_second > 0;
}

void before_copy(std::uint64_t bytes) {
  Process& p = process();
  if (!p.state || bytes == 0 || p.state->limits().pcie_bytes_per_second == 0) return;
  sleep_ns(p.state->admit_copy(bytes, monotonic_ns()));
}

std::int64_t monotonic_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

void sleep_ns(std::int64_t ns) {
  if (ns <= 0) return;
  timespec left{.tv_sec = static_cast<time_t>(ns / 1'000'000'000), .tv_nsec = static_cast<long>(ns % 1'000'000'000)};
  while (nanosleep(&left, &left) != 0 && errno == EINTR) {
  }
}

bool is_host_pointer(std::uint64_t ptr) {
  static cu::cuPointerGetAttribute_t get = [] {
    Process& p = process();
    (void)real_function(Hook::cuInit);  // loads the driver
    return p.driver == nullptr || p.dlsym == nullptr
               ? nullptr
               : reinterpret_cast<cu::cuPointerGetAttribute_t>(p.dlsym(p.driver, "cuPointerGetAttribute"));
  }();
  if (get == nullptr) return false;  // cannot tell: not counted
  unsigned int type = 0;
  if (get(&type, cu::kPointerAttributeMemoryType, ptr) != cu::kSuccess) return true;  // pageable host memory
  return type == cu::kMemoryTypeHost;
}

bool slice_has_process(int pid) {
  Process& p = process();
  return p.state && p.state->has_process(pid);
}

void log_once(Message id, const char* text) {
  bool* flag = &process().logged[static_cast<int>(id)];
  if (__atomic_exchange_n(flag, true, __ATOMIC_ACQ_REL)) return;
  write_stderr("gpudoc slice: ");
  write_stderr(text);
  write_stderr("\n");
}

}  // namespace gpudoc::slice::inject
