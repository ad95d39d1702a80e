#include "slice/inject/compute_cap.hpp"

#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "slice/inject/runtime.hpp"

namespace gpudoc::slice::inject {
namespace {

// The NVML subset the controller reads (nvml.h, driver 580).
struct NvmlProcessSample {
  unsigned int pid;
  unsigned long long time_stamp;  // µs
  unsigned int sm_util;
  unsigned int mem_util;
  unsigned int enc_util;
  unsigned int dec_util;
};
using NvmlDevice = void*;
using NvmlInit = int (*)();
using NvmlByIndex = int (*)(unsigned int, NvmlDevice*);
using NvmlByUuid = int (*)(const char*, NvmlDevice*);
using NvmlProcessUtil = int (*)(NvmlDevice, NvmlProcessSample*, unsigned int*, unsigned long long);

struct Controller {
  pthread_once_t once = PTHREAD_ONCE_INIT;
  std::uint32_t percent = 0;
  NvmlProcessUtil util = nullptr;
  NvmlDevice device = nullptr;
  double duty = 1.0;  // read by launch hooks (atomically), written by the controller thread
};

Controller& controller() {
  alignas(Controller) static unsigned char storage[sizeof(Controller)];
  static Controller* c = new (storage) Controller();
  return *c;
}

// The NVML device the job's CUDA device 0 is: CUDA_VISIBLE_DEVICES' first entry (index or UUID).
NvmlDevice open_device(void* nvml) {
  auto by_index = reinterpret_cast<NvmlByIndex>(real_dlsym()(nvml, "nvmlDeviceGetHandleByIndex_v2"));
  auto by_uuid = reinterpret_cast<NvmlByUuid>(real_dlsym()(nvml, "nvmlDeviceGetHandleByUUID"));
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  char first[96] = {};
  if (visible != nullptr) std::strncpy(first, visible, sizeof(first) - 1);
  if (char* comma = std::strchr(first, ',')) *comma = '\0';
  NvmlDevice device = nullptr;
  if (first[0] == 'G' && by_uuid != nullptr && by_uuid(first, &device) == 0) return device;
  const unsigned int index = first[0] >= '0' && first[0] <= '9' ? static_cast<unsigned int>(std::atoi(first)) : 0;
  if (by_index != nullptr && by_index(index, &device) == 0) return device;
  return nullptr;
}

// The slice's share of the GPU in the samples since `*last` (percent), or -1 without samples.
double measure(NvmlProcessUtil util, NvmlDevice device, unsigned long long* last) {
  NvmlProcessSample samples[128];
  unsigned int count = 128;
  const int rc = util(device, samples, &count, *last);
  if (rc != 0 || count == 0) return rc == 6 ? 0 : -1;  // NVML_ERROR_NOT_FOUND: nothing ran since
  double sum = 0;
  unsigned long long newest = *last;
  // Per pid, the mean of its samples; summed over the slice's pids.
  for (unsigned int i = 0; i < count; ++i) {
    newest = std::max(newest, samples[i].time_stamp);
    if (!slice_has_process(static_cast<int>(samples[i].pid))) continue;
    unsigned int n = 0;
    double total = 0;
    bool first = true;
    for (unsigned int j = 0; j < count; ++j) {
      if (samples[j].pid != samples[i].pid) continue;
      if (j < i) first = false;
      total += samples[j].sm_util;
      ++n;
    }
    if (first && n > 0) sum += total / n;
  }
  *last = newest;
  return sum;
}

void* control_loop(void*) {
  Controller& c = controller();
  DutyController duty(static_cast<double>(c.percent));
  unsigned long long last = 0;
  double d0 = duty.duty();  // not const: clang's __atomic_store takes a non-const value pointer
  __atomic_store(&c.duty, &d0, __ATOMIC_RELEASE);
  std::int64_t before = monotonic_ns();
  for (;;) {
    usleep(500'000);
    const std::int64_t now = monotonic_ns();
    duty.update(measure(c.util, c.device, &last), static_cast<double>(now - before) * 1e-9);
    before = now;
    double d = duty.duty();
    __atomic_store(&c.duty, &d, __ATOMIC_RELEASE);
  }
}

// Runs once per process, in the first launching thread: NVML is found (or its absence said) before
// any launch passes, then the controller runs on its own thread.
void start_thread() {
  Controller& c = controller();
  void* nvml = dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL);
  auto init = nvml != nullptr ? reinterpret_cast<NvmlInit>(real_dlsym()(nvml, "nvmlInit_v2")) : nullptr;
  c.util = nvml != nullptr ? reinterpret_cast<NvmlProcessUtil>(real_dlsym()(nvml, "nvmlDeviceGetProcessUtilization"))
                           : nullptr;
  c.device = init != nullptr && c.util != nullptr && init() == 0 ? open_device(nvml) : nullptr;
  if (c.device == nullptr) {
    log_once(Message::kNoNvml, "the compute cap needs NVML's per-process utilization, which is missing; not enforced");
    return;
  }
  pthread_t thread;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  if (pthread_create(&thread, &attr, control_loop, nullptr) != 0)
    log_once(Message::kNoNvml, "the compute cap's controller thread could not start; not enforced");
  pthread_attr_destroy(&attr);
}

}  // namespace

void compute_gate(double duty, std::int64_t offset_ns) { sleep_ns(gate_wait_ns(monotonic_ns(), duty, offset_ns)); }

void start_compute_cap(std::uint32_t percent) {
  Controller& c = controller();
  c.percent = percent;
  pthread_once(&c.once, start_thread);
}

double current_duty() {
  double d = 1.0;
  __atomic_load(&controller().duty, &d, __ATOMIC_ACQUIRE);
  return d;
}

void compute_cap_after_fork() {
  Controller& c = controller();
  c.once = PTHREAD_ONCE_INIT;  // the controller thread did not survive the fork
  c.duty = 1.0;
}

}  // namespace gpudoc::slice::inject
