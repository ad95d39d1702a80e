// The NVML backend against a scripted NVML (FakeNvml): conversions, incremental buffers, probing,
// error paths. No GPU needed; tests/gpu/nvml_live_test.cpp checks the same on a real one.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

#include "core/clock.hpp"
#include "fake_nvml.hpp"
#include "gpu/backend.hpp"
#include "gpu/metrics.hpp"
#include "gpu/nvml/nvml_api.hpp"
#include "gpu/nvml/nvml_backend.hpp"

namespace gpudoc::gpu {
namespace {

using namespace std::chrono_literals;
using namespace nvml;  // NOLINT(google-build-using-namespace)
using nvml::testing::FakeNvml;
using ::testing::HasSubstr;

constexpr unsigned long long kUsPerSample = 200'000;  // the driver's 200 ms utilization period

// A function that answers `v` through its one out-parameter.
template <class T>
auto gives(T v) {
  return [v](nvmlDevice_t, T* out) {
    *out = v;
    return NVML_SUCCESS;
  };
}
auto clock_gives(unsigned int sm, unsigned int mem) {
  return [sm, mem](nvmlDevice_t, nvmlClockType_t type, unsigned int* out) {
    *out = type == NVML_CLOCK_SM ? sm : mem;
    return NVML_SUCCESS;
  };
}

std::optional<double> value_of(const GroupReading& r, Metric m) {
  std::optional<double> v;
  for (const auto& s : r.metrics)
    if (s.metric == m) v = s.value;
  return v;
}

// Lower case on purpose: ctest's -R is case-sensitive, and `ctest -R nvml` should select these.
class nvml_backend : public ::testing::Test {  // NOLINT(readability-identifier-naming)
 protected:
  std::unique_ptr<Backend> open(FakeNvml& fake) {
    auto r = open_nvml_backend({.library_path = {}, .clock = &clock_, .api = &fake.table()});
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() ? std::move(r).value() : nullptr;
  }
  [[nodiscard]] unsigned long long now_us() const {
    return static_cast<unsigned long long>(clock_.unix_now_ns() / 1000);
  }

  core::ManualClock clock_;
};

// ---- Opening ---------------------------------------------------------------------------------

TEST_F(nvml_backend, MissingLibraryIsAnEnvironmentErrorThatPointsToReplay) {
  auto r = open_nvml_backend({.library_path = "/nonexistent/libnvidia-ml.so.1", .clock = &clock_, .api = nullptr});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind(), core::ErrorKind::kEnvironment);
  EXPECT_THAT(r.error().message(), HasSubstr("/nonexistent/libnvidia-ml.so.1"));
  EXPECT_THAT(r.error().message(), HasSubstr("replaying recorded traces"));
}

TEST_F(nvml_backend, LibraryWithoutNvmlSymbolsNamesTheMissingFunctions) {
  // A real shared library that is not NVML: the loader's dlsym path, no required symbol found.
  auto r = open_nvml_backend({.library_path = "libm.so.6", .clock = &clock_, .api = nullptr});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind(), core::ErrorKind::kEnvironment);
  EXPECT_THAT(r.error().message(), HasSubstr("nvmlInit_v2"));
  EXPECT_THAT(r.error().message(), HasSubstr("nvmlDeviceGetHandleByIndex_v2"));
}

TEST_F(nvml_backend, InjectedTableWithoutARequiredFunctionIsRefused) {
  FakeNvml fake;
  fake.missing = {"nvmlDeviceGetCount_v2"};
  auto r = open_nvml_backend({.library_path = {}, .clock = &clock_, .api = &fake.table()});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind(), core::ErrorKind::kEnvironment);
  EXPECT_THAT(r.error().message(), HasSubstr("nvmlDeviceGetCount_v2"));
}

TEST_F(nvml_backend, InitFailureIsAnEnvironmentErrorWithNvmlsReason) {
  for (nvmlReturn_t rc : {NVML_ERROR_DRIVER_NOT_LOADED, NVML_ERROR_NO_PERMISSION, NVML_ERROR_LIB_RM_VERSION_MISMATCH}) {
    FakeNvml fake;
    fake.nvmlInit_v2 = [rc] { return rc; };
    auto r = open_nvml_backend({.library_path = {}, .clock = &clock_, .api = &fake.table()});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().kind(), core::ErrorKind::kEnvironment);
    EXPECT_THAT(r.error().message(), HasSubstr("initializing NVML"));
    if (rc == NVML_ERROR_DRIVER_NOT_LOADED) {
      EXPECT_THAT(r.error().message(), HasSubstr("Driver Not Loaded"));
    }
    EXPECT_EQ(fake.calls("nvmlShutdown"), 0) << "no shutdown for an init that failed";
  }
}

TEST_F(nvml_backend, ZeroDevicesIsNotAnError) {
  FakeNvml fake(0);
  auto b = open(fake);
  ASSERT_TRUE(b);
  EXPECT_EQ(*b->device_count(), 0);
  EXPECT_EQ(b->device_info(0).error().kind(), core::ErrorKind::kBadInput);
  EXPECT_EQ(b->read(0, MetricGroup::kFast).error().kind(), core::ErrorKind::kBadInput);
}

TEST_F(nvml_backend, ShutdownOnDestruction) {
  FakeNvml fake;
  { auto b = open(fake); }
  EXPECT_EQ(fake.calls("nvmlInit_v2"), 1);
  EXPECT_EQ(fake.calls("nvmlShutdown"), 1);
}

// ---- The one conversion ------------------------------------------------------------------------

TEST_F(nvml_backend, ReturnCodesConvertToTheDocumentedKinds) {
  FakeNvml fake;
  const NvmlApi& api = fake.table();
  const std::vector<std::pair<nvmlReturn_t, core::ErrorKind>> cases = {
      {NVML_ERROR_GPU_IS_LOST, core::ErrorKind::kGpuLost},
      {NVML_ERROR_RESET_REQUIRED, core::ErrorKind::kGpuLost},
      {NVML_ERROR_TIMEOUT, core::ErrorKind::kTimeout},
      {NVML_ERROR_NOT_SUPPORTED, core::ErrorKind::kNotSupported},
      {NVML_ERROR_FUNCTION_NOT_FOUND, core::ErrorKind::kNotSupported},
      {NVML_ERROR_NO_PERMISSION, core::ErrorKind::kEnvironment},
      {NVML_ERROR_LIB_RM_VERSION_MISMATCH, core::ErrorKind::kEnvironment},
      {NVML_ERROR_DRIVER_NOT_LOADED, core::ErrorKind::kEnvironment},
      {NVML_ERROR_UNKNOWN, core::ErrorKind::kEnvironment},
      {NVML_ERROR_INVALID_ARGUMENT, core::ErrorKind::kEnvironment},
  };
  for (const auto& [rc, kind] : cases) {
    core::Error e = nvml_error(api, rc, "reading power");
    EXPECT_EQ(e.kind(), kind) << rc;
    EXPECT_THAT(e.message(), HasSubstr("reading power: "));
    EXPECT_THAT(e.message(), HasSubstr("(NVML error " + std::to_string(static_cast<int>(rc)) + ")"));
  }
  EXPECT_THAT(nvml_error(api, NVML_ERROR_GPU_IS_LOST, "x").message(), HasSubstr("GPU is lost"));
  // Without nvmlErrorString there is still a message.
  fake.missing = {"nvmlErrorString"};
  EXPECT_THAT(nvml_error(fake.table(), NVML_ERROR_TIMEOUT, "x").message(), HasSubstr("NVML error 10"));
}

// ---- kUtilization: the 200 ms buffer, drained incrementally --------------------------------------

// The driver's utilization ring: one sample per 200 ms, `depth` deep. Sample k has timestamp
// base + k * 200 ms. Each read returns samples from a little before lastSeenTimeStamp (overlap) in
// newest-first order, as a ring might: the backend must neither lose nor repeat one.
struct UtilizationRing {
  unsigned long long base_us = 0;
  long long newest = 0;  // index of the newest sample taken so far
  long long depth = 70;
  int overlap = 2;

  [[nodiscard]] unsigned long long ts(long long k) const {
    return base_us + static_cast<unsigned long long>(k) * kUsPerSample;
  }
  nvmlReturn_t get(nvmlSamplingType_t type, unsigned long long last_seen, nvmlValueType_t* vt, unsigned int* count,
                   nvmlSample_t* out) const {
    *vt = NVML_VALUE_TYPE_UNSIGNED_INT;
    if (out == nullptr) {
      *count = static_cast<unsigned int>(depth);
      return NVML_SUCCESS;
    }
    bool any_new = false;
    unsigned int n = 0;
    for (long long k = newest; k > newest - depth && n < *count; --k) {
      if (ts(k) + overlap * kUsPerSample <= last_seen) break;
      any_new = any_new || ts(k) > last_seen;
      out[n].timeStamp = ts(k);
      out[n].sampleValue.uiVal = static_cast<unsigned int>((type == NVML_GPU_UTILIZATION_SAMPLES ? k : 3 * k) % 101);
      ++n;
    }
    if (!any_new) return NVML_ERROR_NOT_FOUND;
    *count = n;
    return NVML_SUCCESS;
  }
};

TEST_F(nvml_backend, UtilizationSamplesAreDrainedWithoutLossOrRepeat) {
  FakeNvml fake;
  UtilizationRing ring;
  // Sample 0 is 50 ms before the backend opens: history that must not be returned.
  ring.base_us = now_us() - 50'000;
  fake.nvmlDeviceGetSamples = [&ring](nvmlDevice_t, nvmlSamplingType_t type, unsigned long long last,
                                      nvmlValueType_t* vt, unsigned int* count,
                                      nvmlSample_t* out) { return ring.get(type, last, vt, count, out); };
  auto b = open(fake);
  ASSERT_TRUE(b);

  std::vector<std::int64_t> gpu_times;
  std::vector<double> gpu_values;
  std::vector<std::int64_t> mem_times;
  auto drain = [&] {
    auto r = b->read(0, MetricGroup::kUtilization);
    ASSERT_TRUE(r.ok()) << r.error().message();
    for (const auto& s : r->metrics) {
      if (s.metric == Metric::kGpuUtilizationPercent) {
        gpu_times.push_back(s.time_unix_ns);
        gpu_values.push_back(s.value);
      } else if (s.metric == Metric::kMemoryUtilizationPercent) {
        mem_times.push_back(s.time_unix_ns);
      }
    }
  };
  drain();  // nothing after open yet
  EXPECT_TRUE(gpu_times.empty());
  for (int i = 0; i < 10; ++i) {
    ring.newest += 5;  // the driver took 5 more samples (1 s)
    drain();
  }
  ASSERT_EQ(gpu_times.size(), 50U);
  ASSERT_EQ(mem_times.size(), 50U);
  for (std::size_t i = 0; i < gpu_times.size(); ++i) {
    // Samples 1..50, each exactly once, in order, with the driver's own timestamp.
    EXPECT_EQ(gpu_times[i], static_cast<std::int64_t>(ring.ts(static_cast<long long>(i) + 1)) * 1000) << i;
    EXPECT_EQ(gpu_values[i], static_cast<double>((i + 1) % 101));
  }
  EXPECT_EQ(mem_times, gpu_times);

  // Fall 150 samples behind (30 s) with a deeper ring: the buffer grows and nothing is lost.
  ring.depth = 300;
  ring.newest += 150;
  drain();
  ASSERT_EQ(gpu_times.size(), 200U);
  for (std::size_t i = 1; i < gpu_times.size(); ++i) {
    EXPECT_EQ(gpu_times[i] - gpu_times[i - 1], static_cast<std::int64_t>(kUsPerSample) * 1000) << i;
  }
  drain();  // nothing new: an empty reading, not an error
  EXPECT_EQ(gpu_times.size(), 200U);
}

// Seen on an H200 (driver 580.159.04): read while its newest 200 ms period is still open, the
// driver returns that sample, then rewrites it with a timestamp ~0.2 ms later, so the next read
// hands the same period back as "newer". It must be counted once.
TEST_F(nvml_backend, UtilizationSampleRewrittenByTheDriverIsCountedOnce) {
  FakeNvml fake;
  const unsigned long long t0 = now_us();
  std::vector<nvmlSample_t> ring;
  auto sample = [](unsigned long long ts, unsigned int v) {
    nvmlSample_t x{};
    x.timeStamp = ts;
    x.sampleValue.uiVal = v;
    return x;
  };
  ring = {sample(t0 + 200'000, 10), sample(t0 + 400'000, 20)};
  fake.nvmlDeviceGetSamples = [&ring](nvmlDevice_t, nvmlSamplingType_t, unsigned long long last, nvmlValueType_t* vt,
                                      unsigned int* count, nvmlSample_t* out) {
    *vt = NVML_VALUE_TYPE_UNSIGNED_INT;
    unsigned int n = 0;
    for (const auto& x : ring)
      if (x.timeStamp > last && n < *count) out[n++] = x;
    if (n == 0) return NVML_ERROR_NOT_FOUND;
    *count = n;
    return NVML_SUCCESS;
  };
  auto b = open(fake);
  std::vector<std::int64_t> times;
  auto drain = [&] {
    auto r = b->read(0, MetricGroup::kUtilization);
    ASSERT_TRUE(r.ok()) << r.error().message();
    for (const auto& m : r->metrics)
      if (m.metric == Metric::kGpuUtilizationPercent) times.push_back(m.time_unix_ns);
  };
  drain();
  ASSERT_EQ(times.size(), 2U);
  // The driver rewrites its newest entry 0.26 ms later, then takes the next sample.
  ring = {sample(t0 + 200'000, 10), sample(t0 + 400'260, 21), sample(t0 + 600'260, 30)};
  drain();
  ASSERT_EQ(times.size(), 3U) << "the rewritten sample came back as a new one";
  EXPECT_EQ(times[2], static_cast<std::int64_t>(t0 + 600'260) * 1000);
}

TEST_F(nvml_backend, UtilizationNotFoundMeansAnEmptyReading) {
  FakeNvml fake;
  fake.nvmlDeviceGetSamples = [](nvmlDevice_t, nvmlSamplingType_t, unsigned long long, nvmlValueType_t*,
                                 unsigned int* count, nvmlSample_t* out) {
    if (out == nullptr) {
      *count = 70;
      return NVML_SUCCESS;
    }
    return NVML_ERROR_NOT_FOUND;
  };
  auto b = open(fake);
  auto r = b->read(0, MetricGroup::kUtilization);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_TRUE(r->metrics.empty());
}

// ---- kFast, capabilities, errors ---------------------------------------------------------------

TEST_F(nvml_backend, FastGroupConvertsUnits) {
  FakeNvml fake;
  fake.nvmlDeviceGetPowerUsage = gives(81310U);  // mW
  fake.nvmlDeviceGetClockInfo = clock_gives(1980, 2619);
  fake.nvmlDeviceGetTemperature = [](nvmlDevice_t, nvmlTemperatureSensors_t s, unsigned int* t) {
    *t = s == NVML_TEMPERATURE_GPU ? 27U : 999U;
    return NVML_SUCCESS;
  };
  fake.nvmlDeviceGetCurrentClocksEventReasons = gives(0x5ULL);
  fake.nvmlDeviceGetMemoryInfo = [](nvmlDevice_t, nvmlMemory_t* m) {
    *m = nvmlMemory_t{150'754'820'096ULL, 150'000'000'000ULL, 754'820'096ULL};
    return NVML_SUCCESS;
  };
  auto b = open(fake);
  auto r = b->read(0, MetricGroup::kFast);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_DOUBLE_EQ(*value_of(*r, Metric::kPowerWatts), 81.31);
  EXPECT_EQ(*value_of(*r, Metric::kSmClockMhz), 1980);
  EXPECT_EQ(*value_of(*r, Metric::kMemoryClockMhz), 2619);
  EXPECT_EQ(*value_of(*r, Metric::kGpuTemperatureCelsius), 27);
  EXPECT_EQ(*value_of(*r, Metric::kClockEventReasonsMask), 5);
  for (const auto& s : r->metrics) EXPECT_EQ(s.time_unix_ns, clock_.unix_now_ns());
  EXPECT_EQ(fake.calls("nvmlDeviceGetCurrentClocksThrottleReasons"), 0);
  // Memory in use is the slow group's (nvmlDeviceGetMemoryInfo costs ~30 us on an H200): the fast
  // read, ten times a second, does not call it.
  EXPECT_FALSE(value_of(*r, Metric::kMemoryUsedBytes).has_value());
  const int memory_calls = fake.calls("nvmlDeviceGetMemoryInfo");  // the capability probe's
  ASSERT_TRUE(b->read(0, MetricGroup::kFast).ok());
  EXPECT_EQ(fake.calls("nvmlDeviceGetMemoryInfo"), memory_calls);
  auto slow = b->read(0, MetricGroup::kSlow);
  ASSERT_TRUE(slow.ok()) << slow.error().message();
  EXPECT_EQ(*value_of(*slow, Metric::kMemoryUsedBytes), 754'820'096.0);
  // Free memory (DCGM's FB_FREE) from the same call: one call a read for both.
  EXPECT_EQ(*value_of(*slow, Metric::kMemoryFreeBytes), 150'000'000'000.0);
  EXPECT_EQ(fake.calls("nvmlDeviceGetMemoryInfo"), memory_calls + 1);
}

TEST_F(nvml_backend, NotSupportedMetricIsProbedOnceAndNeverPolledAgain) {
  FakeNvml fake;
  // Power is left unscripted: the fake answers NOT_SUPPORTED.
  fake.nvmlDeviceGetClockInfo = clock_gives(1500, 2600);
  int temperature_calls = 0;
  fake.nvmlDeviceGetTemperature = [&](nvmlDevice_t, nvmlTemperatureSensors_t, unsigned int* t) {
    // Supported when probed, then the driver says otherwise: dropped after that one failure.
    *t = 30;
    return ++temperature_calls == 1 ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
  };
  auto b = open(fake);
  auto caps = b->capabilities(0);
  ASSERT_TRUE(caps.ok());
  EXPECT_FALSE(caps->test(index(Metric::kPowerWatts)));
  EXPECT_TRUE(caps->test(index(Metric::kSmClockMhz)));
  for (int i = 0; i < 10; ++i) {
    auto r = b->read(0, MetricGroup::kFast);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_FALSE(value_of(*r, Metric::kPowerWatts));
    EXPECT_FALSE(value_of(*r, Metric::kGpuTemperatureCelsius));
    EXPECT_TRUE(value_of(*r, Metric::kSmClockMhz));
  }
  EXPECT_EQ(fake.calls("nvmlDeviceGetPowerUsage"), 1);
  EXPECT_EQ(fake.calls("nvmlDeviceGetTemperature"), 2);  // the probe and the read that said no
  EXPECT_FALSE(b->capabilities(0)->test(index(Metric::kGpuTemperatureCelsius)));
}

TEST_F(nvml_backend, GroupWithNothingSupportedIsNotSupported) {
  FakeNvml fake;  // everything but init/count/handle answers NOT_SUPPORTED
  auto b = open(fake);
  for (MetricGroup g : all_groups()) {
    auto r = b->read(0, g);
    ASSERT_FALSE(r.ok()) << info(g).name;
    EXPECT_EQ(r.error().kind(), core::ErrorKind::kNotSupported) << info(g).name;
  }
  EXPECT_TRUE(b->capabilities(0)->none());
}

TEST_F(nvml_backend, GpuLostMidRun) {
  FakeNvml fake;
  int calls = 0;
  fake.nvmlDeviceGetPowerUsage = [&](nvmlDevice_t, unsigned int* mw) {
    *mw = 100'000;
    return ++calls <= 3 ? NVML_SUCCESS : NVML_ERROR_GPU_IS_LOST;
  };
  fake.nvmlDeviceGetClockInfo = clock_gives(1500, 2600);
  auto b = open(fake);
  ASSERT_TRUE(b->read(0, MetricGroup::kFast).ok());  // probe + read: calls 1, 2
  ASSERT_TRUE(b->read(0, MetricGroup::kFast).ok());  // 3
  auto r = b->read(0, MetricGroup::kFast);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind(), core::ErrorKind::kGpuLost);
  EXPECT_THAT(r.error().message(), HasSubstr("GPU 0"));
  // Lost is not "not supported": the metric stays and the next read says lost again.
  EXPECT_EQ(b->read(0, MetricGroup::kFast).error().kind(), core::ErrorKind::kGpuLost);
}

TEST_F(nvml_backend, GpuLostBeforeOpenAffectsOnlyThatGpu) {
  FakeNvml fake(2);
  fake.nvmlDeviceGetHandleByIndex_v2 = [](unsigned int i, nvmlDevice_t* h) {
    *h = FakeNvml::handle(i);
    return i == 1 ? NVML_ERROR_GPU_IS_LOST : NVML_SUCCESS;
  };
  fake.nvmlDeviceGetPowerUsage = gives(50'000U);
  auto b = open(fake);
  EXPECT_EQ(*b->device_count(), 2);
  EXPECT_TRUE(b->read(0, MetricGroup::kFast).ok());
  EXPECT_EQ(b->read(1, MetricGroup::kFast).error().kind(), core::ErrorKind::kGpuLost);
  EXPECT_EQ(b->device_info(1).error().kind(), core::ErrorKind::kGpuLost);
}

TEST_F(nvml_backend, MetricThatFailsAloneIsLeftOut) {
  FakeNvml fake;
  fake.nvmlDeviceGetPowerUsage = gives(50'000U);
  int n = 0;
  fake.nvmlDeviceGetClockInfo = [&](nvmlDevice_t, nvmlClockType_t, unsigned int* c) {
    *c = 1000;
    return ++n <= 2 ? NVML_SUCCESS : NVML_ERROR_UNKNOWN;  // probes pass, reads fail
  };
  auto b = open(fake);
  auto r = b->read(0, MetricGroup::kFast);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(value_of(*r, Metric::kPowerWatts));
  EXPECT_FALSE(value_of(*r, Metric::kSmClockMhz));
  EXPECT_TRUE(b->capabilities(0)->test(index(Metric::kSmClockMhz))) << "a transient failure does not drop it";
}

TEST_F(nvml_backend, ReadWhereEverythingFailsReturnsTheError) {
  FakeNvml fake;
  int n = 0;
  fake.nvmlDeviceGetPowerUsage = [&](nvmlDevice_t, unsigned int* mw) {
    *mw = 1;
    return ++n == 1 ? NVML_SUCCESS : NVML_ERROR_TIMEOUT;
  };
  auto b = open(fake);
  auto r = b->read(0, MetricGroup::kFast);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind(), core::ErrorKind::kTimeout);
}

TEST_F(nvml_backend, ClockEventReasonsFallBackToTheOldThrottleName) {
  FakeNvml fake;
  fake.missing = {"nvmlDeviceGetCurrentClocksEventReasons"};
  fake.nvmlDeviceGetCurrentClocksThrottleReasons = gives(0x4ULL);
  auto b = open(fake);
  auto r = b->read(0, MetricGroup::kFast);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(*value_of(*r, Metric::kClockEventReasonsMask), 4);
}

TEST_F(nvml_backend, TemperatureFallsBackToTheVersionedCall) {
  FakeNvml fake;
  fake.missing = {"nvmlDeviceGetTemperature"};  // deprecated in NVML 13; a later driver may drop it
  fake.nvmlDeviceGetTemperatureV = [](nvmlDevice_t, nvmlTemperature_t* t) {
    if (t->version != kNvmlTemperatureV1Version) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (t->sensorType != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
    t->temperature = 33;
    return NVML_SUCCESS;
  };
  auto b = open(fake);
  auto r = b->read(0, MetricGroup::kFast);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(*value_of(*r, Metric::kGpuTemperatureCelsius), 33);
  EXPECT_EQ(kNvmlTemperatureV1Version, 0x0100000CU);
}

// ---- kGpm ----------------------------------------------------------------------------------------

struct GpmScript {
  int alloc = 0;
  std::vector<std::pair<nvmlGpmSample_t, nvmlGpmSample_t>> pairs;  // sample1, sample2 of each MetricsGet
  std::vector<unsigned int> num_metrics;
};

void script_gpm(FakeNvml& fake, GpmScript& s) {
  fake.nvmlGpmQueryDeviceSupport = [](nvmlDevice_t, nvmlGpmSupport_t* sup) {
    if (sup->version != NVML_GPM_SUPPORT_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    sup->isSupportedDevice = 1;
    return NVML_SUCCESS;
  };
  fake.nvmlGpmSampleAlloc = [&s](nvmlGpmSample_t* out) {
    std::uintptr_t v = 0x5000 + static_cast<std::uintptr_t>(++s.alloc);
    std::memcpy(out, &v, sizeof(*out));
    return NVML_SUCCESS;
  };
  fake.nvmlGpmSampleFree = [](nvmlGpmSample_t) { return NVML_SUCCESS; };
  fake.nvmlGpmSampleGet = [](nvmlDevice_t, nvmlGpmSample_t) { return NVML_SUCCESS; };
  fake.nvmlGpmMetricsGet = [&s](nvmlGpmMetricsGet_t* mg) {
    if (mg->version != NVML_GPM_METRICS_GET_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    s.pairs.emplace_back(mg->sample1, mg->sample2);
    s.num_metrics.push_back(mg->numMetrics);
    for (unsigned int i = 0; i < mg->numMetrics; ++i) {
      nvmlGpmMetric_t& m = mg->metrics[i];
      m.nvmlReturn = NVML_SUCCESS;
      switch (m.metricId) {
        case NVML_GPM_METRIC_GRAPHICS_UTIL: m.value = 97.0; break;
        case NVML_GPM_METRIC_SM_UTIL: m.value = 42.5; break;
        case NVML_GPM_METRIC_SM_OCCUPANCY: m.value = 12.0; break;
        case NVML_GPM_METRIC_ANY_TENSOR_UTIL: m.nvmlReturn = NVML_ERROR_NOT_SUPPORTED; break;
        case NVML_GPM_METRIC_DRAM_BW_UTIL: m.value = 80.0; break;
        case NVML_GPM_METRIC_PCIE_TX_PER_SEC: m.value = 100.0; break;  // MiB/s
        case NVML_GPM_METRIC_PCIE_RX_PER_SEC: m.value = 0.5; break;
        case NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC: m.value = std::numeric_limits<double>::quiet_NaN(); break;
        case NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC: m.nvmlReturn = NVML_ERROR_UNKNOWN; break;
        default: m.nvmlReturn = NVML_ERROR_INVALID_ARGUMENT; break;
      }
    }
    return NVML_SUCCESS;
  };
}

TEST_F(nvml_backend, GpmPrimesThenRefusesPairsCloserThan100ms) {
  FakeNvml fake;
  GpmScript s;
  script_gpm(fake, s);
  auto b = open(fake);
  ASSERT_TRUE(b->capabilities(0)->test(index(Metric::kGpmSmActivityPercent)));

  auto r1 = b->read(0, MetricGroup::kGpm);  // primes
  ASSERT_TRUE(r1.ok()) << r1.error().message();
  EXPECT_TRUE(r1->metrics.empty());
  EXPECT_EQ(fake.calls("nvmlGpmSampleGet"), 1);

  clock_.advance(50ms);
  auto r2 = b->read(0, MetricGroup::kGpm);  // 50 ms after the primed sample: nothing, no 0, no NaN
  ASSERT_TRUE(r2.ok());
  EXPECT_TRUE(r2->metrics.empty());
  EXPECT_EQ(fake.calls("nvmlGpmSampleGet"), 1);
  EXPECT_EQ(fake.calls("nvmlGpmMetricsGet"), 0);

  clock_.advance(60ms);  // 110 ms after the primed sample
  auto r3 = b->read(0, MetricGroup::kGpm);
  ASSERT_TRUE(r3.ok()) << r3.error().message();
  EXPECT_EQ(fake.calls("nvmlGpmSampleGet"), 2);
  ASSERT_EQ(s.pairs.size(), 1U);
  EXPECT_NE(s.pairs[0].first, s.pairs[0].second);
  EXPECT_EQ(s.num_metrics[0], 9U);
  EXPECT_DOUBLE_EQ(*value_of(*r3, Metric::kGpmGraphicsActivityPercent), 97.0);
  EXPECT_DOUBLE_EQ(*value_of(*r3, Metric::kGpmSmActivityPercent), 42.5);
  EXPECT_DOUBLE_EQ(*value_of(*r3, Metric::kGpmDramActivityPercent), 80.0);
  // MiB/s -> bytes/s.
  EXPECT_DOUBLE_EQ(*value_of(*r3, Metric::kGpmPcieTxBytesPerSecond), 100.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(*value_of(*r3, Metric::kGpmPcieRxBytesPerSecond), 0.5 * 1024 * 1024);
  EXPECT_FALSE(value_of(*r3, Metric::kGpmNvlinkRxBytesPerSecond)) << "NaN is absent";
  EXPECT_FALSE(value_of(*r3, Metric::kGpmNvlinkTxBytesPerSecond)) << "a failed metric is absent";
  EXPECT_FALSE(value_of(*r3, Metric::kGpmTensorActivityPercent));
  EXPECT_FALSE(b->capabilities(0)->test(index(Metric::kGpmTensorActivityPercent))) << "NOT_SUPPORTED drops it";
  EXPECT_TRUE(b->capabilities(0)->test(index(Metric::kGpmNvlinkTxBytesPerSecond)));

  clock_.advance(200ms);
  auto r4 = b->read(0, MetricGroup::kGpm);
  ASSERT_TRUE(r4.ok());
  ASSERT_EQ(s.pairs.size(), 2U);
  EXPECT_EQ(s.num_metrics[1], 8U) << "the dropped metric is not asked again";
  // Each window starts where the previous one ended.
  EXPECT_EQ(s.pairs[1].first, s.pairs[0].second);
}

TEST_F(nvml_backend, GpmUnsupportedDevice) {
  FakeNvml fake;
  GpmScript s;
  script_gpm(fake, s);
  fake.nvmlGpmQueryDeviceSupport = [](nvmlDevice_t, nvmlGpmSupport_t* sup) {
    sup->isSupportedDevice = 0;
    return NVML_SUCCESS;
  };
  auto b = open(fake);
  EXPECT_EQ(b->read(0, MetricGroup::kGpm).error().kind(), core::ErrorKind::kNotSupported);
  EXPECT_EQ(s.alloc, 0);
}

TEST_F(nvml_backend, MissingOptionalSymbolsMeanAbsentMetricsNotACrash) {
  FakeNvml fake;
  GpmScript s;
  script_gpm(fake, s);
  fake.nvmlDeviceGetPowerUsage = gives(50'000U);
  fake.missing = {"nvmlGpmQueryDeviceSupport",
                  "nvmlGpmSampleAlloc",
                  "nvmlGpmSampleFree",
                  "nvmlGpmSampleGet",
                  "nvmlGpmMetricsGet",
                  "nvmlDeviceGetSamples",
                  "nvmlDeviceGetTotalEnergyConsumption",
                  "nvmlDeviceGetProcessUtilization",
                  "nvmlDeviceGetComputeRunningProcesses_v3",
                  "nvmlDeviceGetComputeRunningProcesses_v2",
                  "nvmlEventSetCreate",
                  "nvmlDeviceGetMigMode",
                  "nvmlSystemGetCudaDriverVersion_v2"};
  auto b = open(fake);
  auto caps = b->capabilities(0);
  ASSERT_TRUE(caps.ok());
  EXPECT_TRUE((*caps & metrics_in(MetricGroup::kGpm)).none());
  EXPECT_FALSE(caps->test(index(Metric::kGpuUtilizationPercent)));
  EXPECT_FALSE(caps->test(index(Metric::kEnergyJoules)));
  EXPECT_TRUE(caps->test(index(Metric::kPowerWatts)));
  for (MetricGroup g : {MetricGroup::kGpm, MetricGroup::kUtilization, MetricGroup::kEnergy, MetricGroup::kProcesses}) {
    EXPECT_EQ(b->read(0, g).error().kind(), core::ErrorKind::kNotSupported) << info(g).name;
  }
  EXPECT_TRUE(b->read(0, MetricGroup::kFast).ok());
  EXPECT_TRUE(b->device_info(0).ok());
  EXPECT_TRUE(b->system_info()->cuda_driver_version.empty());
  auto ev = b->wait_events(5ms);
  ASSERT_TRUE(ev.ok());
  EXPECT_TRUE(ev->empty());
  EXPECT_EQ(s.alloc, 0);
}

// ---- kSlow, kEnergy ------------------------------------------------------------------------------

TEST_F(nvml_backend, SlowAndEnergyConvertUnits) {
  FakeNvml fake;
  const long long field_time_us = 1'780'000'000'123'456LL;
  fake.nvmlDeviceGetFieldValues = [&](nvmlDevice_t, int n, nvmlFieldValue_t* v) {
    EXPECT_EQ(n, 1);
    EXPECT_EQ(v[0].fieldId, NVML_FI_DEV_MEMORY_TEMP);
    v[0].nvmlReturn = NVML_SUCCESS;
    v[0].valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
    v[0].value.uiVal = 41;
    v[0].timestamp = field_time_us;
    return NVML_SUCCESS;
  };
  fake.nvmlDeviceGetCurrPcieLinkGeneration = gives(5U);
  fake.nvmlDeviceGetCurrPcieLinkWidth = gives(16U);
  fake.nvmlDeviceGetEnforcedPowerLimit = gives(700'000U);            // mW
  fake.nvmlDeviceGetTotalEnergyConsumption = gives(123'456'789ULL);  // mJ
  auto b = open(fake);
  auto slow = b->read(0, MetricGroup::kSlow);
  ASSERT_TRUE(slow.ok()) << slow.error().message();
  EXPECT_EQ(*value_of(*slow, Metric::kMemoryTemperatureCelsius), 41);
  EXPECT_EQ(*value_of(*slow, Metric::kPcieLinkGeneration), 5);
  EXPECT_EQ(*value_of(*slow, Metric::kPcieLinkWidth), 16);
  EXPECT_DOUBLE_EQ(*value_of(*slow, Metric::kPowerLimitWatts), 700.0);
  for (const auto& s : slow->metrics) {
    if (s.metric == Metric::kMemoryTemperatureCelsius) {
      EXPECT_EQ(s.time_unix_ns, field_time_us * 1000);
    }
  }
  auto energy = b->read(0, MetricGroup::kEnergy);
  ASSERT_TRUE(energy.ok());
  EXPECT_DOUBLE_EQ(*value_of(*energy, Metric::kEnergyJoules), 123'456.789);
}

TEST_F(nvml_backend, FieldValueNotSupportedDropsMemoryTemperature) {
  FakeNvml fake;
  fake.nvmlDeviceGetFieldValues = [](nvmlDevice_t, int, nvmlFieldValue_t* v) {
    v[0].nvmlReturn = NVML_ERROR_NOT_SUPPORTED;  // the call succeeds, the field does not
    return NVML_SUCCESS;
  };
  fake.nvmlDeviceGetCurrPcieLinkGeneration = gives(5U);
  auto b = open(fake);
  EXPECT_FALSE(b->capabilities(0)->test(index(Metric::kMemoryTemperatureCelsius)));
  ASSERT_TRUE(b->read(0, MetricGroup::kSlow).ok());
  EXPECT_EQ(fake.calls("nvmlDeviceGetFieldValues"), 1);
}

// ---- kProcesses ----------------------------------------------------------------------------------

TEST_F(nvml_backend, ProcessListGrowsOnInsufficientSizeAndMapsAbsentFields) {
  FakeNvml fake;
  constexpr unsigned int kProcs = 100;
  const auto self = static_cast<unsigned int>(getpid());
  fake.nvmlDeviceGetComputeRunningProcesses_v3 = [&](nvmlDevice_t, unsigned int* count, nvmlProcessInfo_t* infos) {
    if (infos == nullptr || *count < kProcs) {
      *count = kProcs;
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned int i = 0; i < kProcs; ++i) {
      infos[i] = nvmlProcessInfo_t{self + i, 1000ULL * i, kNvmlInvalidInstanceId, kNvmlInvalidInstanceId};
    }
    infos[1].usedGpuMemory = NVML_VALUE_NOT_AVAILABLE_ULL;
    infos[2].gpuInstanceId = 1;
    infos[2].computeInstanceId = 0;
    *count = kProcs;
    return NVML_SUCCESS;
  };
  auto b = open(fake);
  auto r = b->read(0, MetricGroup::kProcesses);
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ(r->processes.size(), kProcs);
  EXPECT_EQ(fake.calls("nvmlDeviceGetComputeRunningProcesses_v3"), 3);  // probe, too small, retry
  EXPECT_EQ(fake.calls("nvmlDeviceGetComputeRunningProcesses_v2"), 0);
  const auto& p = r->processes;
  EXPECT_EQ(p[0].pid, self);
  EXPECT_FALSE(p[0].name.empty()) << "our own /proc/PID/comm is readable";
  EXPECT_EQ(p[0].memory_used_bytes, 0U);
  EXPECT_EQ(p[5].memory_used_bytes, 5000U);
  EXPECT_FALSE(p[1].memory_used_bytes) << "NVML_VALUE_NOT_AVAILABLE is absent, not 2^64-1";
  EXPECT_FALSE(p[0].gpu_instance_id);
  EXPECT_FALSE(p[0].compute_instance_id);
  EXPECT_EQ(p[2].gpu_instance_id, 1U);
  EXPECT_EQ(p[2].compute_instance_id, 0U);
  EXPECT_FALSE(p[0].sm_utilization_percent) << "no utilization source";

  auto again = b->read(0, MetricGroup::kProcesses);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(fake.calls("nvmlDeviceGetComputeRunningProcesses_v3"), 4) << "the grown buffer is kept";
}

TEST_F(nvml_backend, ProcessUtilizationIsIncrementalOneObservationPerSample) {
  FakeNvml fake;
  fake.missing = {"nvmlDeviceGetComputeRunningProcesses_v3"};  // falls back to _v2
  fake.nvmlDeviceGetComputeRunningProcesses_v2 = [](nvmlDevice_t, unsigned int* count, nvmlProcessInfo_t* infos) {
    if (infos == nullptr || *count < 1) {
      *count = 1;
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    infos[0] = nvmlProcessInfo_t{4242, 1ULL << 30, kNvmlInvalidInstanceId, kNvmlInvalidInstanceId};
    *count = 1;
    return NVML_SUCCESS;
  };
  struct Util {
    unsigned int pid, sm, mem;
    unsigned long long ts;
  };
  const unsigned long long t0 = now_us();
  std::vector<Util> util = {
      {4242, 99, 99, t0 - 100'000},  // before open: never returned
      {4242, 40, 10, t0 + 200'000},
      {4242, 60, 30, t0 + 400'000},
      {777, 5, 1, t0 + 400'000},  // not in the compute list (e.g. a graphics client)
  };
  std::vector<unsigned long long> last_seen_args;
  fake.nvmlDeviceGetProcessUtilization = [&](nvmlDevice_t, nvmlProcessUtilizationSample_t* out, unsigned int* count,
                                             unsigned long long last) {
    last_seen_args.push_back(last);
    std::vector<nvmlProcessUtilizationSample_t> newer;
    for (const auto& u : util)
      if (u.ts > last) newer.push_back({u.pid, u.ts, u.sm, u.mem, 0, 0});
    if (out == nullptr || *count < newer.size()) {
      *count = static_cast<unsigned int>(newer.size());
      return out == nullptr && newer.empty() ? NVML_ERROR_NOT_FOUND : NVML_ERROR_INSUFFICIENT_SIZE;
    }
    if (newer.empty()) return NVML_ERROR_NOT_FOUND;
    std::copy(newer.begin(), newer.end(), out);
    *count = static_cast<unsigned int>(newer.size());
    return NVML_SUCCESS;
  };
  auto b = open(fake);
  auto r = b->read(0, MetricGroup::kProcesses);
  ASSERT_TRUE(r.ok()) << r.error().message();
  // Each driver sample newer than open is its own observation, in time order, with its own
  // timestamp; the process list's memory figure rides along.
  ASSERT_EQ(r->processes.size(), 3U);
  const ProcessSample& a = r->processes[0];
  EXPECT_EQ(a.pid, 4242U);
  EXPECT_EQ(a.memory_used_bytes, 1ULL << 30);
  EXPECT_DOUBLE_EQ(*a.sm_utilization_percent, 40.0);
  EXPECT_DOUBLE_EQ(*a.memory_utilization_percent, 10.0);
  EXPECT_EQ(a.time_unix_ns, static_cast<std::int64_t>(t0 + 200'000) * 1000);
  const ProcessSample& b2 = r->processes[1];
  EXPECT_EQ(b2.pid, 4242U);
  EXPECT_DOUBLE_EQ(*b2.sm_utilization_percent, 60.0);
  EXPECT_EQ(b2.time_unix_ns, static_cast<std::int64_t>(t0 + 400'000) * 1000);
  EXPECT_EQ(r->processes[2].pid, 777U);
  EXPECT_FALSE(r->processes[2].memory_used_bytes);
  EXPECT_DOUBLE_EQ(*r->processes[2].sm_utilization_percent, 5.0);
  EXPECT_EQ(last_seen_args.back(), t0) << "first read: only samples newer than open";

  // Nothing new: the process is still listed, without utilization.
  auto r2 = b->read(0, MetricGroup::kProcesses);
  ASSERT_TRUE(r2.ok()) << r2.error().message();
  EXPECT_EQ(last_seen_args.back(), t0 + 400'000);
  ASSERT_EQ(r2->processes.size(), 1U);
  EXPECT_FALSE(r2->processes[0].sm_utilization_percent);

  util.push_back({4242, 70, 0, t0 + 600'000});
  auto r3 = b->read(0, MetricGroup::kProcesses);
  ASSERT_TRUE(r3.ok());
  EXPECT_DOUBLE_EQ(*r3->processes[0].sm_utilization_percent, 70.0);
}

// ---- device_info, system_info ------------------------------------------------------------------

TEST_F(nvml_backend, DeviceAndSystemInfo) {
  FakeNvml fake;
  fake.nvmlDeviceGetName = [](nvmlDevice_t, char* s, unsigned int n) {
    std::snprintf(s, n, "NVIDIA H200");
    return NVML_SUCCESS;
  };
  fake.nvmlDeviceGetUUID = [](nvmlDevice_t, char* s, unsigned int n) {
    std::snprintf(s, n, "GPU-1234");
    return NVML_SUCCESS;
  };
  fake.nvmlDeviceGetPciInfo_v3 = [](nvmlDevice_t, nvmlPciInfo_t* p) {
    std::snprintf(p->busId, sizeof(p->busId), "00000000:18:00.0");
    return NVML_SUCCESS;
  };
  fake.nvmlDeviceGetMemoryInfo = [](nvmlDevice_t, nvmlMemory_t* m) {
    *m = nvmlMemory_t{150'754'820'096ULL, 0, 0};
    return NVML_SUCCESS;
  };
  fake.nvmlDeviceGetMaxClockInfo = clock_gives(1980, 3201);
  fake.nvmlDeviceGetMaxPcieLinkGeneration = gives(5U);
  fake.nvmlDeviceGetMaxPcieLinkWidth = gives(16U);
  fake.nvmlDeviceGetPowerManagementDefaultLimit = gives(700'000U);
  fake.nvmlDeviceGetTemperatureThreshold = [](nvmlDevice_t, nvmlTemperatureThresholds_t t, unsigned int* c) {
    switch (t) {
      case NVML_TEMPERATURE_THRESHOLD_SHUTDOWN: *c = 95; break;
      case NVML_TEMPERATURE_THRESHOLD_SLOWDOWN: *c = 89; break;
      case NVML_TEMPERATURE_THRESHOLD_GPU_MAX: *c = 87; break;
      case NVML_TEMPERATURE_THRESHOLD_MEM_MAX: *c = 94; break;
    }
    return NVML_SUCCESS;
  };
  fake.nvmlDeviceGetCudaComputeCapability = [](nvmlDevice_t, int* major, int* minor) {
    *major = 9;
    *minor = 0;
    return NVML_SUCCESS;
  };
  fake.nvmlDeviceGetMigMode = [](nvmlDevice_t, unsigned int* cur, unsigned int* pending) {
    *cur = NVML_DEVICE_MIG_DISABLE;
    *pending = NVML_DEVICE_MIG_DISABLE;
    return NVML_SUCCESS;
  };
  fake.nvmlSystemGetDriverVersion = [](char* s, unsigned int n) {
    std::snprintf(s, n, "580.159.03");
    return NVML_SUCCESS;
  };
  fake.nvmlSystemGetNVMLVersion = [](char* s, unsigned int n) {
    std::snprintf(s, n, "13.580.159.03");
    return NVML_SUCCESS;
  };
  fake.nvmlSystemGetCudaDriverVersion_v2 = [](int* v) {
    *v = 13000;
    return NVML_SUCCESS;
  };
  auto b = open(fake);
  auto d = b->device_info(0);
  ASSERT_TRUE(d.ok()) << d.error().message();
  EXPECT_EQ(d->name, "NVIDIA H200");
  EXPECT_EQ(d->uuid, "GPU-1234");
  EXPECT_EQ(d->pci_bus_id, "00000000:18:00.0");
  EXPECT_EQ(d->memory_total_bytes, 150'754'820'096ULL);
  EXPECT_EQ(d->sm_clock_max_mhz, 1980);
  EXPECT_EQ(d->memory_clock_max_mhz, 3201);
  EXPECT_EQ(d->pcie_link_generation_max, 5);
  EXPECT_EQ(d->pcie_link_width_max, 16);
  EXPECT_EQ(d->power_limit_default_watts, 700.0);
  EXPECT_EQ(d->temperature_slowdown_celsius, 89);
  EXPECT_EQ(d->temperature_shutdown_celsius, 95);
  EXPECT_EQ(d->temperature_gpu_max_celsius, 87);
  EXPECT_EQ(d->temperature_memory_max_celsius, 94);
  EXPECT_EQ(d->compute_capability_major, 9);
  EXPECT_EQ(d->compute_capability_minor, 0);
  EXPECT_EQ(d->mig_enabled, false);
  EXPECT_TRUE(d->mig_instances.empty());
  (void)b->device_info(0);
  EXPECT_EQ(fake.calls("nvmlDeviceGetName"), 1) << "static facts are read once";

  auto s = b->system_info();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->backend, "nvml");
  EXPECT_EQ(s->driver_version, "580.159.03");
  EXPECT_EQ(s->nvml_version, "13.580.159.03");
  EXPECT_EQ(s->cuda_driver_version, "13.0");
  fake.nvmlSystemGetCudaDriverVersion_v2 = [](int* v) {
    *v = 12080;
    return NVML_SUCCESS;
  };
  EXPECT_EQ(b->system_info()->cuda_driver_version, "12.8");
}

TEST_F(nvml_backend, MigInstancesAreListedWhenMigIsOn) {
  FakeNvml fake;
  fake.nvmlDeviceGetMigMode = [](nvmlDevice_t, unsigned int* cur, unsigned int* pending) {
    *cur = NVML_DEVICE_MIG_ENABLE;
    *pending = NVML_DEVICE_MIG_ENABLE;
    return NVML_SUCCESS;
  };
  fake.nvmlDeviceGetMaxMigDeviceCount = gives(3U);
  // MIG handles are fake handles 10, 12 (slot 1 is empty).
  fake.nvmlDeviceGetMigDeviceHandleByIndex = [](nvmlDevice_t, unsigned int i, nvmlDevice_t* mig) {
    if (i == 1) return NVML_ERROR_NOT_FOUND;
    *mig = FakeNvml::handle(10 + i);
    return NVML_SUCCESS;
  };
  fake.nvmlDeviceGetGpuInstanceId = [](nvmlDevice_t h, unsigned int* id) {
    *id = static_cast<unsigned int>(FakeNvml::index_of(h)) - 9;  // 1, 3
    return NVML_SUCCESS;
  };
  fake.nvmlDeviceGetComputeInstanceId = gives(0U);
  fake.nvmlDeviceGetUUID = [](nvmlDevice_t h, char* s, unsigned int n) {
    std::snprintf(s, n, "MIG-%d", FakeNvml::index_of(h));
    return NVML_SUCCESS;
  };
  fake.nvmlDeviceGetMemoryInfo = [](nvmlDevice_t h, nvmlMemory_t* m) {
    *m = nvmlMemory_t{FakeNvml::index_of(h) == 0 ? 140ULL << 30 : 16ULL << 30, 0, 0};
    return NVML_SUCCESS;
  };
  fake.nvmlDeviceGetAttributes_v2 = [](nvmlDevice_t, nvmlDeviceAttributes_t* a) {
    a->multiprocessorCount = 16;
    return NVML_SUCCESS;
  };
  auto b = open(fake);
  auto d = b->device_info(0);
  ASSERT_TRUE(d.ok()) << d.error().message();
  EXPECT_EQ(d->mig_enabled, true);
  ASSERT_EQ(d->mig_instances.size(), 2U);
  EXPECT_EQ(d->mig_instances[0].uuid, "MIG-10");
  EXPECT_EQ(d->mig_instances[0].gpu_instance_id, 1U);
  EXPECT_EQ(d->mig_instances[1].gpu_instance_id, 3U);
  EXPECT_EQ(d->mig_instances[1].memory_total_bytes, 16ULL << 30);
  EXPECT_EQ(d->mig_instances[1].multiprocessor_count, 16U);
}

// ---- wait_events ---------------------------------------------------------------------------------

TEST_F(nvml_backend, WithoutEventsWaitReturnsEmptyAfterTheTimeout) {
  FakeNvml fake;  // nvmlEventSetCreate answers NOT_SUPPORTED
  auto b = open(fake);
  const auto before = clock_.now();
  auto r = b->wait_events(250ms);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());
  EXPECT_EQ(clock_.now() - before, 250ms);
}

TEST_F(nvml_backend, XidEventsAreDeliveredAndTimeoutIsEmpty) {
  FakeNvml fake(2);
  nvmlEventSet_t set = nullptr;
  std::uintptr_t set_value = 0xE5E7;
  std::memcpy(&set, &set_value, sizeof(set));
  fake.nvmlEventSetCreate = [set](nvmlEventSet_t* out) {
    *out = set;
    return NVML_SUCCESS;
  };
  std::vector<int> registered;
  fake.nvmlDeviceRegisterEvents = [&](nvmlDevice_t h, unsigned long long types, nvmlEventSet_t) {
    EXPECT_EQ(types, nvmlEventTypeXidCriticalError);
    if (FakeNvml::index_of(h) == 0) return NVML_ERROR_NOT_SUPPORTED;  // skipped, not fatal
    registered.push_back(FakeNvml::index_of(h));
    return NVML_SUCCESS;
  };
  std::vector<unsigned int> timeouts;
  int pending = 2;
  fake.nvmlEventSetWait_v2 = [&](nvmlEventSet_t s, nvmlEventData_t* data, unsigned int ms) {
    EXPECT_EQ(s, set);
    timeouts.push_back(ms);
    if (pending == 0) return NVML_ERROR_TIMEOUT;
    --pending;
    data->device = FakeNvml::handle(1);
    data->eventType = nvmlEventTypeXidCriticalError;
    data->eventData = pending == 1 ? 79 : 48;
    return NVML_SUCCESS;
  };
  fake.nvmlEventSetFree = [](nvmlEventSet_t) { return NVML_SUCCESS; };
  auto b = open(fake);
  auto r = b->wait_events(1500us);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(registered, std::vector<int>{1});
  ASSERT_EQ(r->size(), 2U);
  EXPECT_EQ((*r)[0].gpu, 1);
  EXPECT_EQ((*r)[0].kind, "xid");
  EXPECT_EQ((*r)[0].code, 79U);
  EXPECT_EQ((*r)[1].code, 48U);
  EXPECT_EQ(timeouts, (std::vector<unsigned int>{2, 0, 0})) << "rounded up, then drain only";

  auto empty = b->wait_events(10ms);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  EXPECT_EQ(fake.calls("nvmlEventSetCreate"), 1);
  b.reset();
  EXPECT_EQ(fake.calls("nvmlEventSetFree"), 1);
}

}  // namespace
}  // namespace gpudoc::gpu
