#include "cli/common.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <csignal>
#include <cstring>

#include "gpu/nvml/nvml_backend.hpp"

namespace gpudoc::cli {

core::Result<std::unique_ptr<gpu::Backend>> open_live_backend() {
  auto b = gpu::open_nvml_backend();
  if (!b)
    return core::Error(b.error().kind(),
                       b.error().message() +
                           "\n  e.g. gpudoc watch tests/data/sawtooth_p1000_d50.jsonl (a trace recorded on an H200)");
  return b;
}

void SamplerFlags::add_to(CLI::App& cmd) {
  cmd.add_option("--gpus", gpus, "GPU indices to sample (default: all), e.g. --gpus 0,2")->delimiter(',');
  cmd.add_option("--period", periods,
                 "GROUP=MS: read a metric group every MS milliseconds (0 turns it off). Groups and defaults:\n" +
                     describe_groups())
      ->delimiter(',');
  cmd.add_flag("--no-xid", no_xid, "do not listen for XID error events");
}

std::string describe_groups() {
  std::string out;
  for (gpu::MetricGroup g : gpu::all_groups()) {
    const auto& gi = gpu::info(g);
    out += fmt::format("  {:<12} {:>6} ms (min {} ms): {}\n", gi.name, gi.default_period.count(), gi.min_period.count(),
                       gi.why);
  }
  return out;
}

core::Result<telemetry::SamplerConfig> SamplerFlags::to_config(
    const std::array<std::chrono::milliseconds, gpu::kMetricGroupCount>& defaults) const {
  telemetry::SamplerConfig c;
  c.periods = defaults;
  c.gpus = gpus;
  c.read_events = !no_xid;
  for (const auto& p : periods) {
    auto eq = p.find('=');
    if (eq == std::string::npos)
      return core::Error(core::ErrorKind::kUsage, fmt::format("--period {}: expected GROUP=MS, e.g. fast=100", p));
    std::string name = p.substr(0, eq), value = p.substr(eq + 1);
    auto g = gpu::group_from_name(name);
    if (!g) {
      std::string names;
      for (auto gg : gpu::all_groups()) names += fmt::format("{}{}", names.empty() ? "" : ", ", gpu::info(gg).name);
      return core::Error(core::ErrorKind::kUsage, fmt::format("--period {}: unknown group '{}' (groups: {})", p, name, names));
    }
    long ms = 0;
    try {
      std::size_t used = 0;
      ms = std::stol(value, &used);
      if (used != value.size() || ms < 0) throw std::invalid_argument(value);
    } catch (const std::exception&) {
      return core::Error(core::ErrorKind::kUsage, fmt::format("--period {}: '{}' is not a whole number of milliseconds", p, value));
    }
    const auto& gi = gpu::info(*g);
    if (ms != 0 && ms < gi.min_period.count())
      return core::Error(core::ErrorKind::kUsage,
                         fmt::format("--period {}: {} ms is faster than the sensor allows (minimum {} ms: {})", p, ms,
                                     gi.min_period.count(), gi.why));
    c.periods[gpu::index(*g)] = std::chrono::milliseconds(ms);
  }
  return c;
}

namespace {
std::atomic<int> g_stop_requests{0};
std::atomic<int> g_forward_signal{0};

void on_stop_signal(int sig, siginfo_t* info, void*) {
  g_stop_requests.fetch_add(1);
  // SI_USER/SI_QUEUE: sent by a process (kill), so the command did not get it; the terminal's
  // Ctrl-C reaches the whole foreground group and must not be delivered twice.
  if (info != nullptr && (info->si_code == SI_USER || info->si_code == SI_QUEUE)) g_forward_signal.store(sig);
}
}  // namespace

void install_stop_handlers() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_stop_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

std::atomic<int>& stop_requests() { return g_stop_requests; }
std::atomic<int>& forward_signal() { return g_forward_signal; }

}  // namespace gpudoc::cli
