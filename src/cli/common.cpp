#include "cli/common.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

namespace gpudoc::cli {

void SamplerFlags::add_to(CLI::App& cmd, std::string_view defaults_note) {
  cmd.add_option("--gpus", gpus, "GPU indices to sample (default: all), e.g. --gpus 0,2")
      ->delimiter(',')
      ->allow_extra_args(false);
  cmd.add_option("--period", periods,
                 "GROUP=MS: read a metric group every MS milliseconds (0 turns it off). Groups and defaults:\n" +
                     gpu::describe_groups() + (defaults_note.empty() ? "" : "\n" + std::string(defaults_note)))
      ->delimiter(',')
      ->allow_extra_args(false);
  cmd.add_flag("--no-xid", no_xid, "do not listen for XID error events");
}

core::Result<std::optional<core::Nanos>> parse_duration(double seconds, std::string_view flag) {
  if (!std::isfinite(seconds) || seconds < 0 || seconds > kMaxDurationSeconds)
    return core::Error(
        core::ErrorKind::kUsage,
        fmt::format("{} {}: expected a finite number of seconds from 0 to {:g} (leave it out to run until "
                    "the end or Ctrl-C)",
                    flag, seconds, kMaxDurationSeconds));
  if (seconds == 0) return std::optional<core::Nanos>();
  return std::optional<core::Nanos>(std::chrono::duration_cast<core::Nanos>(std::chrono::duration<double>(seconds)));
}

core::Result<telemetry::SamplerConfig> SamplerFlags::to_config(
    const std::array<std::chrono::milliseconds, gpu::kMetricGroupCount>& defaults) const {
  telemetry::SamplerConfig c;
  c.periods = defaults;
  c.gpus = gpus;
  c.read_events = !no_xid;
  for (const auto& p : periods) {
    auto period = gpu::parse_group_period(p);
    if (!period) return core::Error(core::ErrorKind::kUsage, "--period " + period.error().message());
    c.periods[gpu::index(period->first)] = period->second;
  }
  return c;
}

namespace {
baseline::StopSignal g_stop;  // the first stop signal, and how many came
std::atomic<int> g_forward_signal{0};
int g_stop_pipe[2] = {-1, -1};  // the handler writes a byte, wait_for_stop() polls the other end

void on_stop_signal(int sig, siginfo_t* info, void*) {
  int none = 0;
  g_stop.signal.compare_exchange_strong(none, sig);
  g_stop.count.fetch_add(1);
  // SI_USER/SI_QUEUE: sent by a process (kill), so the command did not get it; the terminal's
  // Ctrl-C reaches the whole foreground group and must not be delivered twice.
  if (info != nullptr && (info->si_code == SI_USER || info->si_code == SI_QUEUE)) g_forward_signal.store(sig);
  if (g_stop_pipe[1] >= 0) {
    const int saved = errno;  // write() is async-signal-safe; a full pipe already wakes the waiter
    [[maybe_unused]] const auto n = ::write(g_stop_pipe[1], "s", 1);
    errno = saved;
  }
}
}  // namespace

void install_stop_handlers(std::initializer_list<int> signals) {
  if (g_stop_pipe[0] < 0 && ::pipe2(g_stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0) g_stop_pipe[0] = g_stop_pipe[1] = -1;
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_stop_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int sig : signals) sigaction(sig, &sa, nullptr);
}

std::atomic<int>& stop_requests() { return g_stop.count; }

bool wait_for_stop(core::Nanos timeout) {
  if (g_stop.count.load() > 0) return true;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(std::max(timeout, core::Nanos(0))).count();
  if (g_stop_pipe[0] < 0) {  // no pipe (out of descriptors): sleep in short steps
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (g_stop.count.load() == 0 && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return g_stop.count.load() > 0;
  }
  pollfd p{.fd = g_stop_pipe[0], .events = POLLIN, .revents = 0};
  (void)::poll(&p, 1, static_cast<int>(std::min<long long>(ms, 1LL << 30)));  // EINTR: the count says
  return g_stop.count.load() > 0;  // the byte stays in the pipe: every later wait returns at once
}
std::atomic<int>& forward_signal() { return g_forward_signal; }
const baseline::StopSignal& stop_signal() { return g_stop; }

}  // namespace gpudoc::cli
