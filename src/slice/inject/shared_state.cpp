#include "slice/inject/shared_state.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace gpudoc::slice {
namespace {

void copy_text(char* out, std::size_t size, const std::string& text) {
  const std::size_t n = text.size() < size - 1 ? text.size() : size - 1;
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

std::string reason(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

StateLayout* map_fd(int fd) {
  void* p = mmap(nullptr, sizeof(StateLayout), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return p == MAP_FAILED ? nullptr : static_cast<StateLayout*>(p);
}

bool init_layout(StateLayout* layout, const Limits& limits, const std::string& name, const std::string& command,
                 int mechanism) {
  std::memset(static_cast<void*>(layout), 0, sizeof(StateLayout));  // the mapping's bytes, then set below
  pthread_mutexattr_t attr;
  if (pthread_mutexattr_init(&attr) != 0) return false;
  bool ok = pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED) == 0 &&
            pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST) == 0 &&
            pthread_mutex_init(&layout->mutex, &attr) == 0;
  pthread_mutexattr_destroy(&attr);
  if (!ok) return false;
  layout->limits = limits;
  layout->owner_pid = static_cast<std::int32_t>(getpid());
  layout->mechanism = mechanism;
  layout->created_unix_seconds = static_cast<std::int64_t>(std::time(nullptr));
  copy_text(layout->name, sizeof(layout->name), name);
  copy_text(layout->command, sizeof(layout->command), command);
  layout->version = kStateVersion;
  __atomic_store_n(&layout->magic, kStateMagic, __ATOMIC_RELEASE);  // last: a reader sees all or nothing
  return true;
}

bool alive(const ProcessSlot& slot) { return slot.pid > 0 && process_start_ticks(slot.pid) == slot.start_ticks; }

}  // namespace

std::uint64_t process_start_ticks(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[1024];
  const ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  // The command name (field 2) may hold spaces and ')': fields are counted after the last ')'.
  const char* p = std::strrchr(buf, ')');
  if (p == nullptr) return 0;
  if (p[1] == ' ' && p[2] == 'Z') return 0;  // a zombie no longer holds GPU memory
  for (int field = 2; field < 22 && p != nullptr; ++field) p = std::strchr(p + 1, ' ');
  if (p == nullptr) return 0;
  return std::strtoull(p + 1, nullptr, 10);
}

std::optional<SharedState> SharedState::create(const std::string& path, const Limits& limits, const std::string& name,
                                               const std::string& command, std::string* error, int mechanism) {
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    *error = reason("creating the slice state", path);
    return std::nullopt;
  }
  StateLayout* layout = nullptr;
  if (ftruncate(fd, sizeof(StateLayout)) != 0 || (layout = map_fd(fd)) == nullptr) {
    *error = reason("sizing and mapping the slice state", path);
    close(fd);
    return std::nullopt;
  }
  close(fd);
  if (!init_layout(layout, limits, name, command, mechanism)) {
    *error = "initialising the slice state's process-shared robust mutex in " + path;
    munmap(layout, sizeof(StateLayout));
    return std::nullopt;
  }
  return SharedState(layout);
}

std::optional<SharedState> SharedState::attach(const std::string& path, std::string* error) {
  const int fd = open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    *error = reason("opening the slice state", path);
    return std::nullopt;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<std::size_t>(st.st_size) != sizeof(StateLayout)) {
    *error = "the slice state " + path + " is not a state file of this gpudoc version (size differs)";
    close(fd);
    return std::nullopt;
  }
  StateLayout* layout = map_fd(fd);
  close(fd);
  if (layout == nullptr) {
    *error = reason("mapping the slice state", path);
    return std::nullopt;
  }
  if (__atomic_load_n(&layout->magic, __ATOMIC_ACQUIRE) != kStateMagic || layout->version != kStateVersion) {
    *error = "the slice state " + path + " is not a state file of this gpudoc version";
    munmap(layout, sizeof(StateLayout));
    return std::nullopt;
  }
  return SharedState(layout);
}

std::optional<SharedState> SharedState::anonymous(const Limits& limits, std::string* error) {
  void* p = mmap(nullptr, sizeof(StateLayout), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    *error = std::string("mapping an anonymous slice state: ") + std::strerror(errno);
    return std::nullopt;
  }
  auto* layout = static_cast<StateLayout*>(p);
  if (!init_layout(layout, limits, "", "", 0)) {
    *error = "initialising an anonymous slice state's mutex";
    munmap(p, sizeof(StateLayout));
    return std::nullopt;
  }
  return SharedState(layout);
}

SharedState::SharedState(SharedState&& other) noexcept : layout_(other.layout_) { other.layout_ = nullptr; }

SharedState& SharedState::operator=(SharedState&& other) noexcept {
  if (this != &other) {
    if (layout_ != nullptr) munmap(layout_, sizeof(StateLayout));
    layout_ = other.layout_;
    other.layout_ = nullptr;
  }
  return *this;
}

SharedState::~SharedState() {
  if (layout_ != nullptr) munmap(layout_, sizeof(StateLayout));
}

void SharedState::lock() {
  const int rc = pthread_mutex_lock(&layout_->mutex);
  if (rc == EOWNERDEAD) {
    // The owner died inside a critical section. Every update under the lock is a single store to
    // one slot's counters, so the data is whole; the dead process's bytes go back below.
    pthread_mutex_consistent(&layout_->mutex);
    layout_->recovered_locks += 1;
    reap_locked();
  }
}

void SharedState::unlock() { pthread_mutex_unlock(&layout_->mutex); }

std::uint64_t SharedState::used_locked() const {
  std::uint64_t total = 0;
  for (const ProcessSlot& s : layout_->slots) total += s.pid > 0 ? s.used_bytes : 0;
  return total;
}

int SharedState::reap_locked() {
  int reaped = 0;
  for (ProcessSlot& s : layout_->slots) {
    if (s.pid <= 0 || alive(s)) continue;
    layout_->reaped_bytes += s.used_bytes;
    layout_->reaped_processes += 1;
    s = ProcessSlot{};
    ++reaped;
  }
  return reaped;
}

int SharedState::find_or_take_locked(pid_t pid, std::uint64_t start_ticks) {
  int free_slot = -1;
  for (int i = 0; i < kMaxProcesses; ++i) {
    const ProcessSlot& s = layout_->slots[i];
    if (s.pid == pid && s.start_ticks == start_ticks) return i;
    if (s.pid == 0 && free_slot < 0) free_slot = i;
  }
  if (free_slot >= 0) layout_->slots[free_slot] = ProcessSlot{static_cast<std::int32_t>(pid), start_ticks, 0, 0, 0};
  return free_slot;
}

int SharedState::register_process(pid_t pid) {
  const std::uint64_t start = process_start_ticks(pid);
  lock();
  int slot = find_or_take_locked(pid, start);
  if (slot < 0 && reap_locked() > 0) slot = find_or_take_locked(pid, start);
  unlock();
  return slot;
}

void SharedState::unregister_process(int slot, pid_t pid) {
  if (slot < 0 || slot >= kMaxProcesses) return;
  lock();
  if (layout_->slots[slot].pid == pid) layout_->slots[slot] = ProcessSlot{};
  unlock();
}

bool SharedState::try_charge(int slot, std::uint64_t bytes) {
  if (slot < 0 || slot >= kMaxProcesses) return false;
  lock();
  const std::uint64_t cap = layout_->limits.memory_bytes;
  bool fits = cap == 0 || (bytes <= cap && used_locked() <= cap - bytes);
  if (!fits && reap_locked() > 0) fits = used_locked() <= cap - bytes;
  ProcessSlot& s = layout_->slots[slot];
  if (fits) {
    s.used_bytes += bytes;
    if (s.used_bytes > s.peak_bytes) s.peak_bytes = s.used_bytes;
  } else {
    s.refused += 1;
  }
  unlock();
  return fits;
}

void SharedState::charge(int slot, std::uint64_t bytes) {
  if (slot < 0 || slot >= kMaxProcesses) return;
  lock();
  ProcessSlot& s = layout_->slots[slot];
  s.used_bytes += bytes;
  if (s.used_bytes > s.peak_bytes) s.peak_bytes = s.used_bytes;
  unlock();
}

void SharedState::uncharge(int slot, std::uint64_t bytes) {
  if (slot < 0 || slot >= kMaxProcesses) return;
  lock();
  ProcessSlot& s = layout_->slots[slot];
  s.used_bytes = s.used_bytes > bytes ? s.used_bytes - bytes : 0;
  unlock();
}

std::uint64_t SharedState::used_bytes() {
  lock();
  const std::uint64_t used = used_locked();
  unlock();
  return used;
}

bool SharedState::has_process(pid_t pid) {
  lock();
  bool found = false;
  for (const ProcessSlot& s : layout_->slots) found = found || s.pid == pid;
  unlock();
  return found;
}

int SharedState::reap_dead() {
  lock();
  const int reaped = reap_locked();
  unlock();
  return reaped;
}

std::int64_t copy_wait_ns(std::int64_t& next_ns, std::int64_t now_ns, std::uint64_t bytes, std::uint64_t rate,
                          std::int64_t burst_ns) {
  if (rate == 0) return 0;
  const std::int64_t start = next_ns > now_ns ? next_ns : now_ns;
  const long double cost = static_cast<long double>(bytes) * 1e9L / static_cast<long double>(rate);
  constexpr long double kMaxCost = 1e15L;  // 11.6 days: no copy is charged more, and nothing overflows
  next_ns = start + static_cast<std::int64_t>(cost < kMaxCost ? cost : kMaxCost);
  const std::int64_t wait = start - now_ns - burst_ns;
  return wait > 0 ? wait : 0;
}

std::int64_t SharedState::admit_copy(std::uint64_t bytes, std::int64_t now_ns) {
  const std::uint64_t rate = layout_->limits.pcie_bytes_per_second;
  if (rate == 0) return 0;
  lock();
  const std::int64_t wait = copy_wait_ns(layout_->copy_next_ns, now_ns, bytes, rate);
  layout_->copy_bytes += bytes;
  layout_->copy_waited_ns += static_cast<std::uint64_t>(wait);
  unlock();
  return wait;
}

Snapshot SharedState::snapshot() {
  Snapshot out;
  lock();
  out.limits = layout_->limits;
  out.owner_pid = layout_->owner_pid;
  out.mechanism = layout_->mechanism;
  out.created_unix_seconds = layout_->created_unix_seconds;
  out.name.assign(layout_->name, strnlen(layout_->name, sizeof(layout_->name)));
  out.command.assign(layout_->command, strnlen(layout_->command, sizeof(layout_->command)));
  out.used_bytes = used_locked();
  out.reaped_bytes = layout_->reaped_bytes;
  out.recovered_locks = layout_->recovered_locks;
  out.copy_bytes = layout_->copy_bytes;
  out.copy_waited_ns = layout_->copy_waited_ns;
  for (const ProcessSlot& s : layout_->slots)
    if (s.pid > 0) out.processes.push_back(s);
  unlock();
  return out;
}

}  // namespace gpudoc::slice
