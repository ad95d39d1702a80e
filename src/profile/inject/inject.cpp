// libgpudoc_profile.so: the CUPTI injection library `gpudoc profile` loads into an unmodified CUDA
// program through CUDA_INJECTION64_PATH. The CUDA driver calls InitializeInjection() when the program
// creates its first context; from then on CUPTI's activity records (kernels, copies, memsets, API
// calls, synchronizations, graph launches, NVTX ranges) are written as text lines
// (profile/record_format.hpp) to records-<pid>.txt in the folder $GPUDOC_PROFILE_DIR names.
//
// It lives inside someone else's process, often a Python interpreter with its own libstdc++: it
// links libstdc++ statically, exports only InitializeInjection, never throws, never exits, never
// aborts. A problem is logged once on stderr, written as a W line, and the program goes on
// unprofiled. CUPTI is loaded with dlopen (the files in $GPUDOC_PROFILE_CUPTI, then the default
// search), so the library loads, and fails cleanly, where CUPTI is missing.
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/dynamic_library.hpp"
#include "profile/inject/cupti_api.hpp"
#include "profile/record_format.hpp"

namespace gpudoc::profile::inject {
namespace {

constexpr std::size_t kBufferBytes = 4u << 20;  // one CUPTI buffer; CUPTI wants 8-byte alignment
constexpr std::size_t kDefaultBudgetMiB = 64;   // all buffers in flight at once
constexpr std::size_t kFlushBytes = 1u << 20;   // the text buffer is written out beyond this
constexpr std::uint64_t kDefaultFileMiB = 512;  // records file bound; GPUDOC_PROFILE_MAX_MIB changes it
constexpr std::uint32_t kFlushMs = 500;         // the library's thread flushes CUPTI's buffers this often

struct State {
  CuptiApi api;
  std::mutex mu;  // guards everything below
  int fd = -1;
  std::string out;
  std::unordered_set<unsigned> named_runtime, named_driver;
  unsigned long long dropped = 0;
  bool warned = false;
  std::atomic<std::size_t> buffers_in_flight{0};
  std::size_t max_buffers = kDefaultBudgetMiB * (1u << 20) / kBufferBytes;
  // The file's bound: beyond it records are counted (an X LIMIT line at exit), not written, so a long
  // job cannot fill the disk nor the analysis's memory.
  std::uint64_t max_file_bytes = kDefaultFileMiB << 20;
  std::uint64_t written = 0;
  unsigned long long over_limit = 0;           // records counted, not written: the file is at its bound
  unsigned long long over_limit_reported = 0;  // of which already written as X LIMIT lines
  std::atomic<bool> disabled{false};           // after fork() in the child, or after a failure
  std::atomic<bool> buses_written{false};      // the P lines are out (device_bus_lines)
  pid_t pid = 0;
  RecordedKinds kinds;   // GPUDOC_PROFILE_KINDS
  SampleWindows sample;  // GPUDOC_PROFILE_SAMPLE; on_ms == 0: traced throughout
  std::vector<std::pair<uint32_t, bool>> runtime_filter, driver_filter;  // API calls: callback id, recorded
  std::atomic<bool> toggle_failed{false};                                // a sampling toggle CUPTI refused (said once)
};

State& state() {
  static State* s = new State();  // never destroyed: CUPTI's thread may call in during exit
  return *s;
}

void write_out_locked(State& s) {
  std::size_t done = 0;
  while (s.fd >= 0 && done < s.out.size()) {
    const ssize_t n = ::write(s.fd, s.out.data() + done, s.out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // disk full: the records are lost, the program goes on
    done += static_cast<std::size_t>(n);
  }
  s.written += done;
  s.out.clear();
}

// Logs once on stderr; every message also goes into the file as a W line.
void warn(State& s, const std::string& message) {
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.warned) std::fprintf(stderr, "gpudoc profile: %s\n", message.c_str());
  s.warned = true;
  s.out += "W\t";
  append_escaped(s.out, message);
  s.out += '\n';
  write_out_locked(s);
}

std::string cupti_error(State& s, const char* call, CUptiResult r) {
  const char* text = nullptr;
  if (s.api.cuptiGetResultString == nullptr || s.api.cuptiGetResultString(r, &text) != CUPTI_SUCCESS || text == nullptr)
    text = "unknown error";
  return std::string(call) + " failed: " + text + " (CUPTI error " + std::to_string(static_cast<int>(r)) + ")";
}

void field(std::string& o, unsigned long long v) {
  o += '\t';
  o += std::to_string(v);
}
void field_signed(std::string& o, long long v) {
  o += '\t';
  o += std::to_string(v);
}
void text_field(std::string& o, const char* v) {
  o += '\t';
  append_escaped(o, v == nullptr ? "" : v);
}

// A T line: CUPTI's clock and CLOCK_MONOTONIC read together (the monotonic time is the mean of one
// read before and one after), so `gpudoc profile`, which stamps its energy readings with
// CLOCK_MONOTONIC, can place them on CUPTI's clock. Appended to the text buffer; `flush` writes it.
void clock_pair_locked(State& s, bool flush) {
  timespec before{}, after{};
  uint64_t cupti = 0;
  clock_gettime(CLOCK_MONOTONIC, &before);
  const bool ok = s.api.cuptiGetTimestamp(&cupti) == CUPTI_SUCCESS;
  clock_gettime(CLOCK_MONOTONIC, &after);
  if (!ok) return;
  const auto ns = [](const timespec& t) {
    return static_cast<unsigned long long>(t.tv_sec) * 1'000'000'000ULL + static_cast<unsigned long long>(t.tv_nsec);
  };
  s.out += 'T';
  field(s.out, cupti);
  field(s.out, ns(before) + (ns(after) - ns(before)) / 2);
  s.out += '\n';
  if (flush) write_out_locked(s);
}

// P lines: the PCI bus id of each CUDA device, from the driver this process has loaded (the driver
// called InitializeInjection), so `gpudoc profile` can tell which GPU's energy counter is the
// profiled device's. Returns false while the driver is not ready yet (the caller tries again).
bool device_bus_lines(State& s) {
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (cuda == nullptr) return true;  // not loaded under that name: nothing to say
  using GetCount = int (*)(int*);
  using GetBusId = int (*)(char*, int, int);
  auto count_fn = reinterpret_cast<GetCount>(dlsym(cuda, "cuDeviceGetCount"));
  auto bus_fn = reinterpret_cast<GetBusId>(dlsym(cuda, "cuDeviceGetPCIBusId"));
  int count = 0;
  const bool ready = count_fn != nullptr && bus_fn != nullptr && count_fn(&count) == 0;
  if (ready && !s.buses_written.exchange(true)) {
    std::lock_guard<std::mutex> lock(s.mu);
    for (int d = 0; d < count; ++d) {
      char bus[64] = {};
      if (bus_fn(bus, static_cast<int>(sizeof bus) - 1, d) != 0) continue;
      s.out += 'P';
      field(s.out, static_cast<unsigned long long>(d));
      text_field(s.out, bus);
      s.out += '\n';
    }
    write_out_locked(s);
  }
  dlclose(cuda);
  return ready || count_fn == nullptr || bus_fn == nullptr;
}

void append_api_name(State& s, char domain, unsigned cbid) {
  auto& seen = domain == 'R' ? s.named_runtime : s.named_driver;
  if (!seen.insert(cbid).second) return;
  const char* name = nullptr;
  const auto dom = domain == 'R' ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
  if (s.api.cuptiGetCallbackName(dom, cbid, &name) != CUPTI_SUCCESS) name = nullptr;
  s.out += 'C';
  s.out += '\t';
  s.out += domain;
  field(s.out, cbid);
  text_field(s.out, name);
  s.out += '\n';
}

void append_kernel(std::string& o, const CUpti_ActivityKernel10& k) {
  o += 'K';
  field(o, k.start), field(o, k.end), field(o, k.deviceId), field(o, k.streamId), field(o, k.correlationId);
  field_signed(o, k.gridX), field_signed(o, k.gridY), field_signed(o, k.gridZ);
  field_signed(o, k.blockX), field_signed(o, k.blockY), field_signed(o, k.blockZ);
  field(o, k.graphId);
  text_field(o, k.name);
  o += '\n';
}

void append_record(State& s, const CUpti_Activity* r) {
  std::string& o = s.out;
  switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      append_kernel(o, *reinterpret_cast<const CUpti_ActivityKernel10*>(r));
      return;
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto& m = *reinterpret_cast<const CUpti_ActivityMemcpy6*>(r);
      o += 'M';
      field(o, m.start), field(o, m.end), field(o, m.deviceId), field(o, m.streamId), field(o, m.correlationId);
      field(o, m.copyKind), field(o, m.srcKind), field(o, m.dstKind), field(o, m.bytes), field(o, m.graphId);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto& m = *reinterpret_cast<const CUpti_ActivityMemset4*>(r);
      o += 'S';
      field(o, m.start), field(o, m.end), field(o, m.deviceId), field(o, m.streamId), field(o, m.correlationId);
      field(o, m.bytes), field(o, m.memoryKind), field(o, m.graphId);
      break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto& a = *reinterpret_cast<const CUpti_ActivityAPI*>(r);
      const char domain = r->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? 'R' : 'D';
      append_api_name(s, domain, a.cbid);
      o += domain;
      field(o, a.start), field(o, a.end), field(o, a.cbid), field(o, a.correlationId), field(o, a.threadId);
      break;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto& y = *reinterpret_cast<const CUpti_ActivitySynchronization2*>(r);
      o += 'Y';
      field(o, y.start), field(o, y.end), field(o, y.type), field(o, y.streamId), field(o, y.correlationId);
      break;
    }
    case CUPTI_ACTIVITY_KIND_GRAPH_TRACE: {
      const auto& g = *reinterpret_cast<const CUpti_ActivityGraphTrace2*>(r);
      o += 'G';
      field(o, g.start), field(o, g.end), field(o, g.deviceId), field(o, g.streamId), field(o, g.graphId);
      field(o, g.correlationId);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MARKER: {
      const auto& m = *reinterpret_cast<const CUpti_ActivityMarker2*>(r);
      o += 'N';
      field(o, m.flags), field(o, m.id), field(o, m.timestamp), field(o, m.objectId.pt.threadId);
      text_field(o, m.name), text_field(o, m.domain);
      break;
    }
    default: return;  // a kind this library did not enable (CUPTI may add some of its own)
  }
  o += '\n';
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  State& s = state();
  *max_records = 0;
  *buffer = nullptr;
  *size = 0;
  // Bounded: beyond the budget CUPTI gets no buffer and drops records, which it counts (X lines).
  if (s.buffers_in_flight.load() >= s.max_buffers) return;
  void* p = std::aligned_alloc(8, kBufferBytes);
  if (p == nullptr) return;
  s.buffers_in_flight.fetch_add(1);
  *buffer = static_cast<uint8_t*>(p);
  *size = kBufferBytes;
}

// The records counted over the file's bound since the last X LIMIT line, as one more X LIMIT line (the
// reader sums them). Written with every buffer, not only at exit: a Python program stopped by SIGINT
// dies by re-raising the signal after its own finalisation, and C exit handlers never run (on the
// H200, a 10-minute run reached the bound after 23 s and reported 0 records left out).
void report_over_limit_locked(State& s) {
  if (s.over_limit == s.over_limit_reported) return;
  s.out += "X\tLIMIT";
  field(s.out, s.over_limit - s.over_limit_reported);
  s.out += '\n';
  s.over_limit_reported = s.over_limit;
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t /*size*/, size_t valid) {
  State& s = state();
  if (!s.disabled.load()) {
    std::lock_guard<std::mutex> lock(s.mu);
    CUpti_Activity* record = nullptr;
    while (s.api.cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
      if (s.written >= s.max_file_bytes) {
        ++s.over_limit;
        continue;
      }
      append_record(s, record);
      if (s.out.size() > kFlushBytes) write_out_locked(s);
    }
    report_over_limit_locked(s);
    size_t dropped = 0;
    if (s.api.cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped > 0) {
      s.dropped += dropped;
      s.out += "X\tDROPPED";
      field(s.out, dropped);
      s.out += '\n';
    }
    write_out_locked(s);
  }
  std::free(buffer);
  s.buffers_in_flight.fetch_sub(1);
}

void at_exit() {
  State& s = state();
  if (s.disabled.load() || getpid() != s.pid) return;
  s.api.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  // A program shorter than the thread's first flush has no P lines yet.
  if (!s.buses_written.load()) device_bus_lines(s);
  uint64_t now = 0;
  s.api.cuptiGetTimestamp(&now);
  std::lock_guard<std::mutex> lock(s.mu);
  report_over_limit_locked(s);
  clock_pair_locked(s, false);
  s.out += 'E';
  field(s.out, now);
  field(s.out, s.dropped + s.over_limit);
  s.out += '\n';
  write_out_locked(s);
}

// A child made by fork() shares the file; only the process that opened it writes (the child's CUDA
// is unusable anyway until it execs, and an exec'd CUDA program opens its own file).
void in_forked_child() { state().disabled.store(true); }

void CUPTIAPI ignore_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

// The files to try: each of $GPUDOC_PROFILE_CUPTI (':'-separated), then the loader's own search.
// Returns "" when CUPTI is loaded with every required function, else what is missing.
std::string load_cupti(State& s) {
  // A CUPTI the program already loaded (PyTorch brings its own) is the one to use: two copies of
  // CUPTI in one process would both hook the driver.
  const core::LibrarySpec spec{"CUPTI", {"libcupti.so.13", "libcupti.so.12", "libcupti.so"}, "", ""};
  std::optional<core::DynamicLibrary> lib = core::find_loaded(spec);
  std::string list = std::getenv(kEnvCuptiPath) != nullptr ? std::getenv(kEnvCuptiPath) : "";
  list += ":libcupti.so.13:libcupti.so";
  std::string tried;
  std::size_t pos = 0;
  while (!lib && pos <= list.size()) {
    const std::size_t end = std::min(list.find(':', pos), list.size());
    const std::string file = list.substr(pos, end - pos);
    pos = end + 1;
    if (file.empty()) continue;
    auto opened = core::open_file(spec, file);
    if (opened)
      lib = *opened;
    else
      tried += (tried.empty() ? "" : "; ") + file + ": " + opened.error().message();
  }
  if (!lib) return "cannot load CUPTI (" + tried + "); the program runs unprofiled";
  core::SymbolResolver symbols(*lib);
#define GPUDOC_CUPTI_RESOLVE(req, name, ret, params) \
  symbols.resolve((req) ? core::Need::kRequired : core::Need::kOptional, #name, s.api.name);
  GPUDOC_CUPTI_FUNCTIONS(GPUDOC_CUPTI_RESOLVE)
#undef GPUDOC_CUPTI_RESOLVE
  if (!symbols.missing().empty()) {
    std::string missing;
    for (const std::string& name : symbols.missing()) missing += (missing.empty() ? "" : ", ") + name;
    return "the CUPTI library found lacks " + missing + "; the program runs unprofiled";
  }
  // NVTX hands its ranges to the library NVTX_INJECTION64_PATH names (gpudoc points it at a CUPTI
  // it found); when the CUPTI in use is another file (the program's own), NVTX must load that one,
  // or the ranges would reach a second, idle copy of CUPTI. NVTX reads the variable at its first call.
  link_map* map = nullptr;
  if (dlinfo(lib->handle(), RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      *map->l_name == '/')
    setenv("NVTX_INJECTION64_PATH", map->l_name, 1);
  return {};
}

// records-<pid>.txt in the parent's private folder, created new (O_EXCL|O_NOFOLLOW): a file or link
// already there is never opened. Without the variable (the library loaded by hand) nothing is done.
bool open_output(State& s) {
  const char* dir = std::getenv(kEnvOutputDir);
  if (dir == nullptr || *dir == '\0') {
    std::fprintf(stderr, "gpudoc profile: %s is not set; the program runs unprofiled\n", kEnvOutputDir);
    return false;
  }
  const std::string path = std::string(dir) + "/records-" + std::to_string(s.pid) + ".txt";
  s.fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_APPEND, 0600);
  if (s.fd < 0) {
    std::fprintf(stderr, "gpudoc profile: cannot create %s: %s; the program runs unprofiled\n", path.c_str(),
                 std::strerror(errno));
    return false;
  }
  if (const char* mib = std::getenv(kEnvBufferMiB); mib != nullptr && std::atoi(mib) > 0)
    s.max_buffers = std::max<std::size_t>(2, static_cast<std::size_t>(std::atoi(mib)) * (1u << 20) / kBufferBytes);
  if (const char* mib = std::getenv(kEnvMaxFileMiB); mib != nullptr && std::atoll(mib) > 0)
    s.max_file_bytes = static_cast<std::uint64_t>(std::atoll(mib)) << 20;
  s.kinds = RecordedKinds::parse(std::getenv(kEnvKinds));
  if (!SampleWindows::parse(std::getenv(kEnvSample), s.sample)) s.sample = {};
  return true;
}

// Whether an API call matters to the analysis: it launches, copies, sets, synchronizes, allocates,
// records or waits on an event, or calls back into the host. Tracing every runtime and driver call
// slows a PyTorch training step by a large share (about 20 calls per kernel: cudaGetDevice,
// cudaGetLastError, cuKernelGetName, ...; docs/results/profile.md).
bool api_that_matters(const char* name) {
  if (name == nullptr) return false;
  for (const char* word : {"Launch", "Memcpy", "Memset", "Synchronize", "Malloc", "MemAlloc", "Free", "HostAlloc",
                           "HostRegister", "EventRecord", "StreamWaitEvent", "AddCallback", "MemPrefetch"})
    if (std::strstr(name, word) != nullptr) return true;
  return false;
}

// Which API calls to record, call by call: those that matter on, every other off. Decided once.
void choose_api_calls(State& s) {
  for (uint32_t cbid = 1; s.kinds.runtime && cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE; ++cbid) {
    const char* name = nullptr;
    s.runtime_filter.emplace_back(
        cbid, s.api.cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &name) == CUPTI_SUCCESS &&
                  api_that_matters(name));
  }
  for (uint32_t cbid = 1; s.kinds.driver && cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid) {
    const char* name = nullptr;
    s.driver_filter.emplace_back(
        cbid,
        s.api.cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, cbid, &name) == CUPTI_SUCCESS && api_that_matters(name));
  }
}

// The API calls are recorded as Kineto records them: the RUNTIME and DRIVER kinds on, then the
// filters call by call; enabling a kind resets its filters (CUPTI's header says so), so they are set
// again after every enable. Returns how many calls are recorded. (Switching the calls on one by one
// with the kinds off, and toggling those switches for sampling, lost every API record of a run on an
// H200 whenever the program's first CUDA call fell in an off window.)
std::size_t filter_api_calls(State& s) {
  std::size_t kept = 0;
  for (const auto& [cbid, keep] : s.runtime_filter)
    kept += s.api.cuptiActivityEnableRuntimeApi(cbid, keep ? 1 : 0) == CUPTI_SUCCESS && keep ? 1 : 0;
  for (const auto& [cbid, keep] : s.driver_filter)
    kept += s.api.cuptiActivityEnableDriverApi(cbid, keep ? 1 : 0) == CUPTI_SUCCESS && keep ? 1 : 0;
  return kept;
}

// The activity kinds and whether each is recorded.
std::array<std::pair<CUpti_ActivityKind, bool>, 8> activity_kinds(const RecordedKinds& k) {
  return {{{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, true},
           {CUPTI_ACTIVITY_KIND_RUNTIME, k.runtime},
           {CUPTI_ACTIVITY_KIND_DRIVER, k.driver},
           {CUPTI_ACTIVITY_KIND_MEMCPY, k.memcpy},
           {CUPTI_ACTIVITY_KIND_MEMSET, k.memset},
           {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, k.sync},
           {CUPTI_ACTIVITY_KIND_GRAPH_TRACE, k.graph},
           {CUPTI_ACTIVITY_KIND_MARKER, k.marker}}};
}

// An O (tracing on) or F (off) line at CUPTI's clock, written at once.
void window_line(State& s, char kind) {
  uint64_t now = 0;
  s.api.cuptiGetTimestamp(&now);
  std::lock_guard<std::mutex> lock(s.mu);
  s.out += kind;
  field(s.out, now);
  s.out += '\n';
  write_out_locked(s);
}

// Sampling: every kind recorded but the NVTX markers off for off_ms, on again for on_ms, over and
// over (torch.profiler's schedule does the same with CUPTI: enable and disable between cycles). After
// disabling, a forced flush, as CUPTI's guide asks between disabling a kind and enabling it again:
// without it, on an H200, a window after the first often came back with no kernel records at all.
// The flush hands back a kernel still running with no end time; the reader counts and skips it.
void set_tracing(State& s, bool on) {
  CUptiResult failed = CUPTI_SUCCESS;
  for (const auto& [kind, recorded] : activity_kinds(s.kinds)) {
    if (!recorded || kind == CUPTI_ACTIVITY_KIND_MARKER) continue;  // the markers time every step
    const CUptiResult r = on ? s.api.cuptiActivityEnable(kind) : s.api.cuptiActivityDisable(kind);
    if (r != CUPTI_SUCCESS) failed = r;
  }
  if (on) filter_api_calls(s);
  if (!on) {
    const CUptiResult r = s.api.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (r != CUPTI_SUCCESS) failed = r;
  }
  if (failed != CUPTI_SUCCESS && !s.toggle_failed.exchange(true))
    warn(s, cupti_error(s, on ? "turning tracing on for a window" : "turning tracing off between windows", failed));
}

std::int64_t monotonic_ms() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::int64_t>(t.tv_sec) * 1000 + t.tv_nsec / 1'000'000;
}

void sleep_ms(std::int64_t ms) {
  if (ms <= 0) return;
  timespec t{static_cast<time_t>(ms / 1000), static_cast<long>(ms % 1000) * 1'000'000L};
  while (nanosleep(&t, &t) != 0 && errno == EINTR) {
  }
}

// The library's own thread. Every kFlushMs a default flush: CUPTI's periodic flush hands back only
// full buffers (cupti_activity.h), so a partly filled one would wait for the exit handler, which a
// crashing or SIGKILLed program never runs; the default flush hands back every buffer whose records
// are complete. With --sample it also opens and closes the windows: everything but the NVTX markers
// off for off_ms, on again for on_ms, over and over.
void* background(void*) {
  State& s = state();
  const bool sampling = s.sample.on_ms > 0;
  bool tracing = true;
  std::int64_t next_flush = monotonic_ms() + kFlushMs;
  std::int64_t next_toggle = sampling ? monotonic_ms() + s.sample.on_ms : INT64_MAX;
  int buses_left = 20;  // flushes at which to try the P lines until the driver answers
  for (;;) {
    sleep_ms(std::min(next_flush, next_toggle) - monotonic_ms());
    if (s.disabled.load() || getpid() != s.pid) return nullptr;
    const std::int64_t now = monotonic_ms();
    if (now >= next_toggle) {
      if (tracing) {
        window_line(s, 'F');  // before disabling: the window never claims records it does not hold
        set_tracing(s, false);
      } else {
        set_tracing(s, true);
        window_line(s, 'O');  // after enabling, for the same reason
      }
      tracing = !tracing;
      next_toggle = now + (tracing ? s.sample.on_ms : s.sample.off_ms);
    }
    if (now >= next_flush) {
      s.api.cuptiActivityFlushAll(0);
      next_flush = now + kFlushMs;
      if (buses_left > 0 && (s.buses_written.load() || device_bus_lines(s))) buses_left = 0;
      if (buses_left > 0) --buses_left;
      std::lock_guard<std::mutex> lock(s.mu);
      clock_pair_locked(s, true);
    }
  }
}

void start_background(State& s) {
  if (s.sample.on_ms > 0 && s.api.cuptiActivityDisable == nullptr) {
    warn(s, "this CUPTI has no cuptiActivityDisable; --sample ignored, traced throughout");
    s.sample = {};
  }
  if (s.sample.on_ms > 0) window_line(s, 'O');
  pthread_t thread;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  // Without the thread a window opened above never closes (traced throughout, analysed as such), and
  // the last records wait for the exit handler.
  if (pthread_create(&thread, &attr, background, nullptr) != 0)
    warn(s, "the library's thread could not start: traced throughout, and a crash loses the last records");
  pthread_attr_destroy(&attr);
}

bool start_activity(State& s) {
  uint32_t version = 0;
  s.api.cuptiGetVersion(&version);
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.out += "H\t";
    s.out += kRecordMagic;
    field(s.out, kRecordFormatVersion), field(s.out, static_cast<unsigned>(s.pid)), field(s.out, version);
    s.out += '\n';
    clock_pair_locked(s, false);
    write_out_locked(s);
  }
  // A subscriber of our own: when torch.profiler or Nsight already holds CUPTI this is where it shows.
  CUpti_SubscriberHandle subscriber{};
  if (const CUptiResult r = s.api.cuptiSubscribe(&subscriber, ignore_callback, nullptr); r != CUPTI_SUCCESS) {
    warn(s, r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
                ? "another CUPTI client (torch.profiler, Nsight Systems or Nsight Compute) already holds CUPTI in "
                  "this process; profile without it"
                : cupti_error(s, "cuptiSubscribe", r));
    return false;
  }
  if (const CUptiResult r = s.api.cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
      r != CUPTI_SUCCESS) {
    warn(s, cupti_error(s, "cuptiActivityRegisterCallbacks", r));
    return false;
  }
  for (const auto& [kind, on] : activity_kinds(s.kinds)) {
    if (!on) continue;
    if (const CUptiResult r = s.api.cuptiActivityEnable(kind); r != CUPTI_SUCCESS) {
      // A kind this CUPTI or GPU does not offer loses only its records; the rest goes on.
      warn(s, cupti_error(s, ("cuptiActivityEnable(kind " + std::to_string(static_cast<int>(kind)) + ")").c_str(), r));
      if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) return false;
    }
  }
  choose_api_calls(s);
  if ((s.kinds.runtime || s.kinds.driver) && filter_api_calls(s) == 0)
    warn(s, "no runtime or driver API call could be traced; idle causes will read as host work");
  // Full buffers reach the file at once; the library's thread flushes the others every kFlushMs, so
  // a job that crashes or is killed with SIGKILL leaves all but its last moments readable.
  if (s.api.cuptiActivityFlushPeriod != nullptr) s.api.cuptiActivityFlushPeriod(kFlushMs);
  start_background(s);
  return true;
}

}  // namespace
}  // namespace gpudoc::profile::inject

extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  using namespace gpudoc::profile::inject;
  static std::atomic<bool> once{false};
  if (once.exchange(true)) return 1;
  State& s = state();
  s.pid = getpid();
  if (!open_output(s)) return 1;  // nowhere to write: nothing to do, the program runs as usual
  const std::string error = load_cupti(s);
  if (!error.empty()) {
    warn(s, error);
    s.disabled.store(true);
    return 1;
  }
  if (!start_activity(s)) {
    s.disabled.store(true);
    return 1;
  }
  pthread_atfork(nullptr, nullptr, in_forked_child);
  std::atexit(at_exit);
  return 1;
}
