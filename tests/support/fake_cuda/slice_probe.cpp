// slice_probe: a stand-in CUDA program for the slice tests. It reaches the driver the ways real
// programs do — bound at link time, dlsym on dlopen("libcuda.so.1") as the CUDA runtime does, and
// cuGetProcAddress (v1, _v2, and _v2 found through itself) — and prints what each allocation
// cost the slice and the driver, one line each:
//
//   slice_probe paths          "PATH METHOD charged=N driver=N after_free=N"
//   slice_probe oom BYTES      "oom PATH METHOD rc=N" for one allocation of BYTES on each path
//   slice_probe info           "info free=N total=N device_total=N"
//   slice_probe hold BYTES     allocates BYTES, prints "held", waits to be killed
//   slice_probe launch N       N launches on each launch path; "launched=TOTAL" as the driver saw
//   slice_probe fork BYTES     parent and child each allocate BYTES; the child exits without
//                              freeing; the parent then asks for the cap minus BYTES
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "slice/inject/driver_api.hpp"

namespace cu = gpudoc::slice::cu;

extern "C" {
cu::Result cuInit(unsigned int);
cu::Result cuMemAlloc(cu::DevicePtrV1*, unsigned int);
cu::Result cuMemAlloc_v2(cu::DevicePtr*, std::size_t);
cu::Result cuMemAllocPitch(cu::DevicePtrV1*, unsigned int*, unsigned int, unsigned int, unsigned int);
cu::Result cuMemAllocPitch_v2(cu::DevicePtr*, std::size_t*, std::size_t, std::size_t, unsigned int);
cu::Result cuMemAllocManaged(cu::DevicePtr*, std::size_t, unsigned int);
cu::Result cuMemAllocAsync(cu::DevicePtr*, std::size_t, cu::Stream);
cu::Result cuMemAllocAsync_ptsz(cu::DevicePtr*, std::size_t, cu::Stream);
cu::Result cuMemAllocFromPoolAsync(cu::DevicePtr*, std::size_t, cu::MemoryPool, cu::Stream);
cu::Result cuMemAllocFromPoolAsync_ptsz(cu::DevicePtr*, std::size_t, cu::MemoryPool, cu::Stream);
cu::Result cuMemCreate(cu::MemHandle*, std::size_t, const cu::MemAllocationPropHead*, unsigned long long);
cu::Result cuMemRelease(cu::MemHandle);
cu::Result cuMemFree(cu::DevicePtrV1);
cu::Result cuMemFree_v2(cu::DevicePtr);
cu::Result cuMemFreeAsync(cu::DevicePtr, cu::Stream);
cu::Result cuMemFreeAsync_ptsz(cu::DevicePtr, cu::Stream);
cu::Result cuMemGetInfo_v2(std::size_t*, std::size_t*);
cu::Result cuDeviceTotalMem_v2(std::size_t*, cu::Device);
cu::Result cuGetProcAddress(const char*, void**, int, unsigned long long);
cu::Result cuGetProcAddress_v2(const char*, void**, int, unsigned long long, int*);
}

namespace {

constexpr std::uint64_t kMiB = 1ULL << 20;

struct Direct {
  const char* name;
  void* fn;
};
#define DIRECT(name) \
  { #name, reinterpret_cast < void*>(&name) }
const Direct kDirect[] = {
    DIRECT(cuMemAlloc),
    DIRECT(cuMemAlloc_v2),
    DIRECT(cuMemAllocPitch),
    DIRECT(cuMemAllocPitch_v2),
    DIRECT(cuMemAllocManaged),
    DIRECT(cuMemAllocAsync),
    DIRECT(cuMemAllocAsync_ptsz),
    DIRECT(cuMemAllocFromPoolAsync),
    DIRECT(cuMemAllocFromPoolAsync_ptsz),
    DIRECT(cuMemCreate),
    DIRECT(cuMemRelease),
    DIRECT(cuMemFree),
    DIRECT(cuMemFree_v2),
    DIRECT(cuMemFreeAsync),
    DIRECT(cuMemFreeAsync_ptsz),
};
#undef DIRECT

// One allocation path: the exported names, and what cuGetProcAddress is asked for.
struct Path {
  const char* label;
  const char* alloc;  // exported symbol
  const char* alloc_base;
  const char* free;
  const char* free_base;
  int version;
  bool per_thread;
};
const Path kPaths[] = {
    {"alloc_v2", "cuMemAlloc_v2", "cuMemAlloc", "cuMemFree_v2", "cuMemFree", 12000, false},
    {"alloc_v1", "cuMemAlloc", "cuMemAlloc", "cuMemFree", "cuMemFree", 3000, false},
    {"pitch_v2", "cuMemAllocPitch_v2", "cuMemAllocPitch", "cuMemFree_v2", "cuMemFree", 12000, false},
    {"pitch_v1", "cuMemAllocPitch", "cuMemAllocPitch", "cuMemFree", "cuMemFree", 3000, false},
    {"managed", "cuMemAllocManaged", "cuMemAllocManaged", "cuMemFree_v2", "cuMemFree", 12000, false},
    {"async", "cuMemAllocAsync", "cuMemAllocAsync", "cuMemFreeAsync", "cuMemFreeAsync", 12000, false},
    {"async_ptsz", "cuMemAllocAsync_ptsz", "cuMemAllocAsync", "cuMemFreeAsync_ptsz", "cuMemFreeAsync", 12000, true},
    {"pool", "cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync", "cuMemFreeAsync", "cuMemFreeAsync", 12000, false},
    {"pool_ptsz", "cuMemAllocFromPoolAsync_ptsz", "cuMemAllocFromPoolAsync", "cuMemFreeAsync_ptsz", "cuMemFreeAsync",
     12000, true},
    {"create", "cuMemCreate", "cuMemCreate", "cuMemRelease", "cuMemRelease", 12000, false},
};
const char* const kMethods[] = {"direct", "dlsym", "proc_v2", "proc_v1", "proc_self"};

void* g_driver = nullptr;

void* resolve(const std::string& method, const char* symbol, const char* base, int version, bool per_thread) {
  const unsigned long long flags = per_thread ? cu::kProcAddressPerThreadDefaultStream : 0;
  void* fn = nullptr;
  if (method == "direct") {
    for (const Direct& d : kDirect)
      if (std::strcmp(d.name, symbol) == 0) fn = d.fn;
  } else if (method == "dlsym") {
    fn = dlsym(g_driver, symbol);
  } else if (method == "proc_v2" || method == "proc_self") {
    auto get = reinterpret_cast<cu::cuGetProcAddress_v2_t>(dlsym(g_driver, "cuGetProcAddress_v2"));
    if (method == "proc_self") {
      void* self = nullptr;
      int status = 0;
      if (get("cuGetProcAddress", &self, 12000, 0, &status) != cu::kSuccess) return nullptr;
      get = reinterpret_cast<cu::cuGetProcAddress_v2_t>(self);
    }
    int status = 0;
    if (get(base, &fn, version, flags, &status) != cu::kSuccess) fn = nullptr;
  } else if (method == "proc_v1") {
    auto get = reinterpret_cast<cu::cuGetProcAddress_t>(dlsym(g_driver, "cuGetProcAddress"));
    if (get(base, &fn, version, flags) != cu::kSuccess) fn = nullptr;
  }
  return fn;
}

std::uint64_t slice_used() {
  std::size_t free_bytes = 0, total = 0;
  if (cuMemGetInfo_v2(&free_bytes, &total) != cu::kSuccess) return ~0ULL;
  return total - free_bytes;
}

std::uint64_t driver_used() {
  auto fn = reinterpret_cast<std::uint64_t (*)()>(dlsym(g_driver, "gpudoc_fake_cuda_used_bytes"));
  return fn != nullptr ? fn() : 0;
}

// Allocates `bytes` on `path` with functions found by `method`; returns the driver's code and
// the pointer or handle.
cu::Result allocate(const Path& path, const std::string& method, std::uint64_t bytes, cu::DevicePtr* key) {
  void* fn = resolve(method, path.alloc, path.alloc_base, path.version, path.per_thread);
  if (fn == nullptr) return -1;
  const std::string label = path.label;
  if (label == "alloc_v2") return reinterpret_cast<cu::cuMemAlloc_v2_t>(fn)(key, bytes);
  if (label == "managed") return reinterpret_cast<cu::cuMemAllocManaged_t>(fn)(key, bytes, 1);
  if (label.rfind("async", 0) == 0) return reinterpret_cast<cu::cuMemAllocAsync_t>(fn)(key, bytes, nullptr);
  if (label.rfind("pool", 0) == 0)
    return reinterpret_cast<cu::cuMemAllocFromPoolAsync_t>(fn)(key, bytes, nullptr, nullptr);
  if (label == "alloc_v1" || label == "pitch_v1") {
    cu::DevicePtrV1 p = 0;
    unsigned int pitch = 0;
    const auto b = static_cast<unsigned int>(bytes);
    const cu::Result r = label == "alloc_v1"
                             ? reinterpret_cast<cu::cuMemAlloc_t>(fn)(&p, b)
                             : reinterpret_cast<cu::cuMemAllocPitch_t>(fn)(&p, &pitch, 1000, b / 1024, 4);
    *key = p;
    return r;
  }
  if (label == "pitch_v2") {
    std::size_t pitch = 0;
    return reinterpret_cast<cu::cuMemAllocPitch_v2_t>(fn)(key, &pitch, 1000, bytes / 1024, 4);
  }
  cu::MemAllocationPropHead prop{1, 0, {cu::kMemLocationTypeDevice, 0}};
  return reinterpret_cast<cu::cuMemCreate_t>(fn)(key, bytes, &prop, 0);
}

cu::Result release(const Path& path, const std::string& method, std::uint64_t key) {
  const bool v1 = std::strcmp(path.free, "cuMemFree") == 0;
  void* fn = resolve(method, path.free, path.free_base, path.version, path.per_thread);
  if (fn == nullptr) return -1;
  if (v1) return reinterpret_cast<cu::cuMemFree_t>(fn)(static_cast<cu::DevicePtrV1>(key));
  if (std::strncmp(path.free, "cuMemFreeAsync", 14) == 0)
    return reinterpret_cast<cu::cuMemFreeAsync_t>(fn)(key, nullptr);
  if (std::strcmp(path.free, "cuMemRelease") == 0) return reinterpret_cast<cu::cuMemRelease_t>(fn)(key);
  return reinterpret_cast<cu::cuMemFree_v2_t>(fn)(key);
}

int run_paths() {
  for (const Path& path : kPaths) {
    for (const char* method : kMethods) {
      const std::uint64_t slice0 = slice_used(), driver0 = driver_used();
      cu::DevicePtr key = 0;
      const cu::Result r = allocate(path, method, kMiB, &key);
      const std::uint64_t charged = slice_used() - slice0, driver = driver_used() - driver0;
      const cu::Result f = r == cu::kSuccess ? release(path, method, key) : r;
      std::printf("%s %s rc=%d charged=%llu driver=%llu free_rc=%d after_free=%llu\n", path.label, method, r,
                  static_cast<unsigned long long>(charged), static_cast<unsigned long long>(driver), f,
                  static_cast<unsigned long long>(slice_used() - slice0));
    }
  }
  return 0;
}

int run_oom(std::uint64_t bytes) {
  for (const Path& path : kPaths) {
    for (const char* method : kMethods) {
      cu::DevicePtr key = 0;
      const cu::Result r = allocate(path, method, bytes, &key);
      if (r == cu::kSuccess) (void)release(path, method, key);
      std::printf("oom %s %s rc=%d\n", path.label, method, r);
    }
  }
  return 0;
}

int run_info() {
  std::size_t free_bytes = 0, total = 0, device_total = 0;
  const cu::Result a = cuMemGetInfo_v2(&free_bytes, &total);
  const cu::Result b = cuDeviceTotalMem_v2(&device_total, 0);
  std::printf("info rc=%d,%d free=%zu total=%zu device_total=%zu\n", a, b, free_bytes, total, device_total);
  return 0;
}

// Launches `count` kernels through every launch entry point the runtime can be handed.
int run_launch(std::uint64_t count) {
  const char* const names[][2] = {
      {"cuLaunchKernel", "0"}, {"cuLaunchKernel", "2"}, {"cuGraphLaunch", "0"}, {"cuGraphLaunch", "2"}};
  auto get = reinterpret_cast<cu::cuGetProcAddress_v2_t>(dlsym(g_driver, "cuGetProcAddress_v2"));
  auto launches = reinterpret_cast<std::uint64_t (*)()>(dlsym(g_driver, "gpudoc_fake_cuda_launches"));
  for (const auto& n : names) {
    void* fn = nullptr;
    int status = 0;
    if (get(n[0], &fn, 12000, n[1][0] == '2' ? cu::kProcAddressPerThreadDefaultStream : 0, &status) != cu::kSuccess)
      return 1;
    for (std::uint64_t i = 0; i < count; ++i) {
      if (std::strcmp(n[0], "cuGraphLaunch") == 0)
        (void)reinterpret_cast<cu::cuGraphLaunch_t>(fn)(nullptr, nullptr);
      else
        (void)reinterpret_cast<cu::cuLaunchKernel_t>(fn)(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr);
    }
  }
  std::printf("launched=%llu\n", static_cast<unsigned long long>(launches()));
  return 0;
}

// Copies `bytes` ten times through each copy entry point (found with cuGetProcAddress, plain and
// per-thread) and says how long each ten took: host<->device ones are held to the slice's rate,
// device-to-device ones are not.
int run_copy(std::uint64_t bytes) {
  auto get = reinterpret_cast<cu::cuGetProcAddress_v2_t>(dlsym(g_driver, "cuGetProcAddress_v2"));
  auto copied = reinterpret_cast<std::uint64_t (*)()>(dlsym(g_driver, "gpudoc_fake_cuda_copied_bytes"));
  cu::DevicePtr dev = 0, dev2 = 0;
  if (cuMemAlloc_v2(&dev, 1 << 20) != cu::kSuccess || cuMemAlloc_v2(&dev2, 1 << 20) != cu::kSuccess) return 1;
  static char host[64];
  const auto host_ptr = reinterpret_cast<cu::DevicePtr>(&host[0]);
  const char* const names[] = {"cuMemcpyHtoD", "cuMemcpyDtoH",  "cuMemcpyHtoDAsync", "cuMemcpyDtoHAsync",
                               "cuMemcpy",     "cuMemcpyAsync", "cuMemcpy d2d"};
  for (const char* name : names) {
    for (const unsigned long long flags : {0ULL, cu::kProcAddressPerThreadDefaultStream}) {
      const std::string base = std::string(name).substr(0, std::string(name).find(' '));
      const bool d2d = std::string(name).find("d2d") != std::string::npos;
      void* fn = nullptr;
      int status = 0;
      if (get(base.c_str(), &fn, 12000, flags, &status) != cu::kSuccess) return 1;
      const std::uint64_t before = copied();
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < 10; ++i) {
        if (base == "cuMemcpyHtoD") (void)reinterpret_cast<cu::cuMemcpyHtoD_v2_t>(fn)(dev, host, bytes);
        if (base == "cuMemcpyDtoH") (void)reinterpret_cast<cu::cuMemcpyDtoH_v2_t>(fn)(host, dev, bytes);
        if (base == "cuMemcpyHtoDAsync")
          (void)reinterpret_cast<cu::cuMemcpyHtoDAsync_v2_t>(fn)(dev, host, bytes, nullptr);
        if (base == "cuMemcpyDtoHAsync")
          (void)reinterpret_cast<cu::cuMemcpyDtoHAsync_v2_t>(fn)(host, dev, bytes, nullptr);
        if (base == "cuMemcpy") (void)reinterpret_cast<cu::cuMemcpy_t>(fn)(dev, d2d ? dev2 : host_ptr, bytes);
        if (base == "cuMemcpyAsync")
          (void)reinterpret_cast<cu::cuMemcpyAsync_t>(fn)(dev, d2d ? dev2 : host_ptr, bytes, nullptr);
      }
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("copy name=%s%s flags=%llu seconds=%.3f driver_bytes=%llu\n", base.c_str(), d2d ? "_d2d" : "", flags,
                  s, static_cast<unsigned long long>(copied() - before));
    }
  }
  return 0;
}

int run_hold(std::uint64_t bytes) {
  cu::DevicePtr p = 0;
  const cu::Result r = cuMemAlloc_v2(&p, bytes);
  std::printf("held rc=%d\n", r);
  std::fflush(stdout);
  for (;;) pause();
}

int run_fork(std::uint64_t bytes) {
  cu::DevicePtr p = 0;
  const cu::Result first = cuMemAlloc_v2(&p, bytes);
  std::printf("parent rc=%d used=%llu\n", first, static_cast<unsigned long long>(slice_used()));
  std::fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    cu::DevicePtr c = 0;
    const cu::Result r = cuMemAlloc_v2(&c, bytes);
    std::printf("child rc=%d used=%llu\n", r, static_cast<unsigned long long>(slice_used()));
    std::fflush(stdout);
    _exit(0);  // no clean-up: the slice must give the child's bytes back by itself
  }
  int status = 0;
  waitpid(child, &status, 0);
  std::size_t free_bytes = 0, total = 0;
  (void)cuMemGetInfo_v2(&free_bytes, &total);
  cu::DevicePtr q = 0;
  const cu::Result r = cuMemAlloc_v2(&q, total - bytes);
  std::printf("after rc=%d used=%llu\n", r, static_cast<unsigned long long>(slice_used()));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  g_driver = dlopen("libcuda.so.1", RTLD_NOW);
  if (g_driver == nullptr || cuInit(0) != cu::kSuccess || argc < 2) {
    std::fprintf(stderr, "slice_probe: no driver or no scenario\n");
    return 3;
  }
  const std::string what = argv[1];
  const std::uint64_t bytes = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 0;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (what == "paths") return run_paths();
  if (what == "oom") return run_oom(bytes);
  if (what == "info") return run_info();
  if (what == "hold") return run_hold(bytes);
  if (what == "launch") return run_launch(bytes);
  if (what == "fork") return run_fork(bytes);
  if (what == "copy") return run_copy(bytes);
  std::fprintf(stderr, "slice_probe: unknown scenario %s\n", what.c_str());
  return 2;
}
