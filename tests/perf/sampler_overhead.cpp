// CPU cost of the recording loop itself (sampler threads + trace writer), with the fake backend:
// everything gpudoc does per sample except the driver calls. Real-time, default periods.
//   bench_sampler_overhead [SECONDS] [GPUS]
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>

#include "core/clock.hpp"
#include "gpu/fake/fake_backend.hpp"
#include "telemetry/recorder.hpp"

namespace {
double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}
}  // namespace

int main(int argc, char** argv) {
  using namespace gpudoc;
  double seconds = argc > 1 ? std::atof(argv[1]) : 20.0;
  int gpus = argc > 2 ? std::atoi(argv[2]) : 1;
  core::SystemClock clock;
  gpu::FakeBackend fake(clock, gpus);
  telemetry::RecordOptions opt;
  opt.output_path = "/dev/null";
  opt.duration = std::chrono::duration_cast<core::Nanos>(std::chrono::duration<double>(seconds));
  opt.sampler.read_events = false;
  std::atomic<int> stop{0};
  double c0 = cpu_seconds();
  auto r = telemetry::record(fake, clock, opt, stop);
  double c1 = cpu_seconds();
  if (!r) {
    std::fprintf(stderr, "%s\n", r.error().message().c_str());
    return 3;
  }
  std::printf(
      "{\"gpus\": %d, \"seconds\": %.1f, \"sample_lines\": %llu, \"cpu_percent_of_one_core\": %.3f, \"per_gpu\": "
      "%.3f}\n",
      gpus, r->duration_s, static_cast<unsigned long long>(r->sample_lines), 100.0 * (c1 - c0) / r->duration_s,
      100.0 * (c1 - c0) / r->duration_s / gpus);
  return 0;
}
