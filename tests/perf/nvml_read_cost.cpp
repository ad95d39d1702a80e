// Where the sampler's CPU goes on a real GPU: the CPU time of each metric group's read through the
// NVML backend, of waiting for device events, and of the wake-ups themselves, each measured on its
// own thread's CPU clock while the groups run at their default periods (as the sampler runs them);
// then the CPU time of single NVML calls, and of draining the utilization buffer by the age of the
// last sample seen (does reading it less often cost less?).
//   nvml_read_cost [SECONDS] [GPU]      prints one JSON document
// Needs the NVIDIA driver (libnvidia-ml.so.1); exit 3 without it.
#include <fmt/format.h>
#include <sys/resource.h>
#include <time.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "gpu/backend.hpp"
#include "gpu/metrics.hpp"
#include "gpu/nvml/nvml_api.hpp"
#include "gpu/nvml/nvml_backend.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double process_cpu_s() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

// Mean thread-CPU microseconds of `call` over `n` calls spaced `gap` apart (not back to back: a
// sampler never calls twice in a row, and some answers are cached for a moment).
template <typename F>
double us_per_call(int n, std::chrono::milliseconds gap, F&& call) {
  double total = 0;
  for (int i = 0; i < n; ++i) {
    const double c = thread_cpu_s();
    call();
    total += thread_cpu_s() - c;
    std::this_thread::sleep_for(gap);
  }
  return 1e6 * total / n;
}

std::string single_call_costs(int gpu) {
  using namespace gpudoc::gpu::nvml;
  auto lib = load_nvml_library("");
  if (!lib) return fmt::format("\"error: {}\"", lib.error().message());
  const NvmlApi& api = (*lib)->api();
  nvmlDevice_t h{};
  if (api.nvmlDeviceGetHandleByIndex_v2(static_cast<unsigned>(gpu), &h) != NVML_SUCCESS) return "\"error: no handle\"";
  std::string out;
  auto add = [&](std::string_view name, double us) {
    out += fmt::format("{}\n    \"{}\": {:.1f}", out.empty() ? "" : ",", name, us);
  };
  const auto gap = std::chrono::milliseconds(5);
  unsigned v = 0;
  unsigned long long mask = 0;
  if (api.nvmlDeviceGetPowerUsage)
    add("nvmlDeviceGetPowerUsage", us_per_call(200, gap, [&] { api.nvmlDeviceGetPowerUsage(h, &v); }));
  if (api.nvmlDeviceGetClockInfo) {
    add("nvmlDeviceGetClockInfo(SM)", us_per_call(200, gap, [&] { api.nvmlDeviceGetClockInfo(h, NVML_CLOCK_SM, &v); }));
    add("nvmlDeviceGetClockInfo(MEM)",
        us_per_call(200, gap, [&] { api.nvmlDeviceGetClockInfo(h, NVML_CLOCK_MEM, &v); }));
  }
  if (api.nvmlDeviceGetTemperatureV) {
    add("nvmlDeviceGetTemperatureV", us_per_call(200, gap, [&] {
          nvmlTemperature_t t{};
          t.version = kNvmlTemperatureV1Version;
          t.sensorType = NVML_TEMPERATURE_GPU;
          api.nvmlDeviceGetTemperatureV(h, &t);
        }));
  }
  if (api.nvmlDeviceGetTemperature)
    add("nvmlDeviceGetTemperature",
        us_per_call(200, gap, [&] { api.nvmlDeviceGetTemperature(h, NVML_TEMPERATURE_GPU, &v); }));
  if (api.nvmlDeviceGetCurrentClocksEventReasons)
    add("nvmlDeviceGetCurrentClocksEventReasons",
        us_per_call(200, gap, [&] { api.nvmlDeviceGetCurrentClocksEventReasons(h, &mask); }));
  if (api.nvmlDeviceGetMemoryInfo) {
    nvmlMemory_t m{};
    add("nvmlDeviceGetMemoryInfo", us_per_call(200, gap, [&] { api.nvmlDeviceGetMemoryInfo(h, &m); }));
  }
  if (api.nvmlDeviceGetFieldValues) {
    for (unsigned field : {186u, 185u, 82u}) {  // POWER_INSTANT, POWER_AVERAGE, MEMORY_TEMP
      add(fmt::format("nvmlDeviceGetFieldValues({})", field), us_per_call(200, gap, [&] {
            nvmlFieldValue_t f{};
            f.fieldId = field;
            api.nvmlDeviceGetFieldValues(h, 1, &f);
          }));
    }
    add("nvmlDeviceGetFieldValues(186,82 in one call)", us_per_call(200, gap, [&] {
          nvmlFieldValue_t f[2]{};
          f[0].fieldId = 186;
          f[1].fieldId = 82;
          api.nvmlDeviceGetFieldValues(h, 2, f);
        }));
  }
  if (api.nvmlDeviceGetSamples) {
    std::vector<nvmlSample_t> buf(256);
    for (int age_ms : {0, 1000, 5000, 10000}) {
      // age 0: the whole buffer (lastSeenTimeStamp 0).
      const double us = us_per_call(10, std::chrono::milliseconds(50), [&] {
        const auto now_us =
            std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
                .count();
        unsigned count = static_cast<unsigned>(buf.size());
        nvmlValueType_t type{};
        api.nvmlDeviceGetSamples(h, NVML_GPU_UTILIZATION_SAMPLES,
                                 age_ms == 0 ? 0ULL : static_cast<unsigned long long>(now_us - age_ms * 1000LL), &type,
                                 &count, buf.data());
      });
      add(fmt::format("nvmlDeviceGetSamples(GPU utilization, last seen {} ms ago)", age_ms == 0 ? -1 : age_ms), us);
    }
    unsigned count = static_cast<unsigned>(buf.size());
    nvmlValueType_t type{};
    if (api.nvmlDeviceGetSamples(h, NVML_TOTAL_POWER_SAMPLES, 0, &type, &count, buf.data()) == NVML_SUCCESS &&
        count > 1)
      add(fmt::format("power sample buffer: entries; mean spacing ms (of {})", count),
          static_cast<double>(buf[count - 1].timeStamp - buf[0].timeStamp) / 1000.0 / (count - 1));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gpudoc;
  const double seconds = argc > 1 ? std::atof(argv[1]) : 30.0;
  const int gpu_index = argc > 2 ? std::atoi(argv[2]) : 0;
  auto opened = gpu::open_nvml_backend();
  if (!opened) {
    std::fprintf(stderr, "nvml_read_cost: %s\n", opened.error().message().c_str());
    return 3;
  }
  gpu::Backend& backend = **opened;
  if (auto info = backend.device_info(gpu_index); !info) {
    std::fprintf(stderr, "nvml_read_cost: %s\n", info.error().message().c_str());
    return 3;
  }

  // Device events on their own thread, as the sampler waits for them.
  std::atomic<bool> running{true};
  double events_cpu = 0;
  long event_waits = 0;
  std::thread events([&] {
    const double c0 = thread_cpu_s();
    while (running.load()) {
      (void)backend.wait_events(std::chrono::milliseconds(500));
      ++event_waits;
    }
    events_cpu = thread_cpu_s() - c0;
  });

  constexpr std::size_t kGroups = gpu::kMetricGroupCount;
  std::array<double, kGroups> cpu{};
  std::array<long, kGroups> calls{};
  std::array<long, kGroups> failures{};
  std::array<Clock::time_point, kGroups> due{};
  const auto start = Clock::now();
  due.fill(start);
  const double p0 = process_cpu_s();
  const double t0 = thread_cpu_s();
  double reads_cpu = 0;
  long wakeups = 0;
  const auto end = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  while (true) {
    const auto now = Clock::now();
    if (now >= end) break;
    auto next = end;
    for (gpu::MetricGroup g : gpu::all_groups()) {
      const std::size_t i = gpu::index(g);
      const auto period = gpu::info(g).default_period;
      if (due[i] <= now) {
        const double c = thread_cpu_s();
        auto r = backend.read(gpu_index, g);
        const double spent = thread_cpu_s() - c;
        cpu[i] += spent;
        reads_cpu += spent;
        ++calls[i];
        if (!r) ++failures[i];
        while (due[i] <= now) due[i] += period;
      }
      next = std::min(next, due[i]);
    }
    std::this_thread::sleep_until(next);
    ++wakeups;
  }
  const double loop_cpu = thread_cpu_s() - t0;
  running.store(false);
  events.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  const double process_cpu = process_cpu_s() - p0;

  auto pct = [&](double s) { return 100.0 * s / elapsed; };
  std::string groups;
  for (gpu::MetricGroup g : gpu::all_groups()) {
    const std::size_t i = gpu::index(g);
    groups += fmt::format(
        "{}\n    \"{}\": {{\"period_ms\": {}, \"calls\": {}, \"failures\": {}, \"us_per_call\": {:.1f}, "
        "\"percent_of_one_core\": {:.4f}}}",
        groups.empty() ? "" : ",", gpu::info(g).name, gpu::info(g).default_period.count(), calls[i], failures[i],
        calls[i] > 0 ? 1e6 * cpu[i] / static_cast<double>(calls[i]) : 0.0, pct(cpu[i]));
  }
  std::printf(
      "{\n  \"gpu\": %d,\n  \"seconds\": %.2f,\n  \"groups\": {%s\n  },\n"
      "  \"reads_percent\": %.4f,\n  \"loop_besides_reads_percent\": %.4f,\n  \"wakeups\": %ld,\n"
      "  \"us_per_wakeup_besides_reads\": %.2f,\n  \"event_thread_percent\": %.4f,\n  \"event_waits\": %ld,\n"
      "  \"process_percent\": %.4f,\n  \"process_besides_both_threads_percent\": %.4f,\n"
      "  \"single_calls_us\": {%s\n  }\n}\n",
      gpu_index, elapsed, groups.c_str(), pct(reads_cpu), pct(loop_cpu - reads_cpu), wakeups,
      wakeups > 0 ? 1e6 * (loop_cpu - reads_cpu) / static_cast<double>(wakeups) : 0.0, pct(events_cpu), event_waits,
      pct(process_cpu), pct(process_cpu - loop_cpu - events_cpu), single_call_costs(gpu_index).c_str());
  return 0;
}
