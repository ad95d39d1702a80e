// FakeNvml — a scripted NVML function table for the NVML backend's unit tests.
//
// Expanded from GPUDOC_NVML_FUNCTIONS, like the real loader, so every function the backend can call
// has a fake and a call counter; adding a function to the list adds it here. Each function is a
// std::function named as in nvml.h; an unscripted one answers NVML_ERROR_NOT_SUPPORTED. A name in
// `missing` is left null in the table, as if the driver's library lacked that symbol.
//
//   FakeNvml fake;                              // 1 GPU; init, count and handles succeed
//   fake.nvmlDeviceGetPowerUsage = [](nvmlDevice_t, unsigned int* mw) { *mw = 81310; return NVML_SUCCESS; };
//   auto backend = open_nvml_backend({.clock = &clock, .api = &fake.table()});
//   EXPECT_EQ(fake.calls("nvmlDeviceGetPowerUsage"), 1);
//
// One FakeNvml at a time (the C function pointers reach it through a global).
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>

#include "gpu/nvml/nvml_api.hpp"

namespace gpudoc::gpu::nvml::testing {

class FakeNvml {
 public:
  explicit FakeNvml(unsigned int device_count = 1);
  ~FakeNvml();
  FakeNvml(const FakeNvml&) = delete;
  FakeNvml& operator=(const FakeNvml&) = delete;

#define GPUDOC_NVML_X(need, name, ret, params, args) std::function<ret params> name;
  GPUDOC_NVML_FUNCTIONS(GPUDOC_NVML_X)
#undef GPUDOC_NVML_X

  // Symbols to leave out of table(), by name.
  std::set<std::string> missing;

  // The table to inject; rebuilt on each call so `missing` edits take effect.
  [[nodiscard]] const NvmlApi& table();
  // How many times the backend called `name`.
  [[nodiscard]] int calls(const std::string& name) const;
  void count(const char* name) { ++calls_[name]; }

  // The GPU falls off the bus mid-read: after the next `n` per-device calls (nvmlDevice*, other
  // than getting the count and handles), every per-device call answers NVML_ERROR_GPU_IS_LOST
  // without running its script, as the driver does once it has lost a GPU.
  void lose_gpu_after(int n) { device_calls_left_ = n; }
  // Used by the trampolines: counts one per-device call down; true once the GPU is lost.
  [[nodiscard]] bool lost_on_this_call();

  // The handle the fake gives GPU i, and back.
  [[nodiscard]] static nvmlDevice_t handle(unsigned int i);
  [[nodiscard]] static int index_of(nvmlDevice_t h);

  [[nodiscard]] static FakeNvml* current();

 private:
  NvmlApi table_;
  std::map<std::string, int> calls_;
  int device_calls_left_ = -1;  // -1: never lost
};

}  // namespace gpudoc::gpu::nvml::testing
