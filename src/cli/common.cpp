#include "cli/common.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <functional>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include "cli/commands.hpp"
#include "core/text.hpp"

namespace gpudoc::cli {

void print_text(std::FILE* to, std::string_view text) {
  std::fputs(core::terminal_safe(text, core::Newlines::kKeep).c_str(), to);
}

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

namespace {

// The long name of "-d,--duration": what the messages call the flag.
std::string long_name(const std::string& names) {
  const std::size_t at = names.rfind("--");
  return at == std::string::npos ? names : names.substr(at);
}

CLI::Option* add_checked(CLI::App& cmd, const std::string& names, std::function<void(double)> set,
                         const core::NumberRange& range, const std::string& help) {
  auto read = [flag = long_name(names), range, set = std::move(set)](const std::string& text) {
    auto value = core::parse_number(flag, text, range);
    if (!value) throw CLI::ValidationError(value.error().message());
    set(*value);
  };
  return cmd.add_option_function<std::string>(names, std::move(read), help + " [" + core::describe(range) + "]")
      ->type_name(range.unit == "seconds"        ? "S"
                  : range.unit == "milliseconds" ? "MS"
                                                 : "N");
}

}  // namespace

CLI::Option* add_number(CLI::App& cmd, const std::string& names, double& target, const core::NumberRange& range,
                        const std::string& help) {
  return add_checked(
      cmd, names, [&target](double v) { target = v; }, range, help);
}

CLI::Option* add_number(CLI::App& cmd, const std::string& names, int& target, const core::NumberRange& range,
                        const std::string& help) {
  return add_checked(
      cmd, names, [&target](double v) { target = static_cast<int>(v); }, range, help);
}

CLI::Option* add_number(CLI::App& cmd, const std::string& names, std::size_t& target, const core::NumberRange& range,
                        const std::string& help) {
  return add_checked(
      cmd, names, [&target](double v) { target = static_cast<std::size_t>(v); }, range, help);
}

std::optional<core::Nanos> duration_of(double seconds) {
  if (!(seconds > 0)) return std::nullopt;
  return std::chrono::duration_cast<core::Nanos>(std::chrono::duration<double>(std::min(seconds, kMaxDurationSeconds)));
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
core::StopSignal g_stop;        // the first stop signal, and how many came
int g_stop_pipe[2] = {-1, -1};  // the handler writes a byte, wait_for_stop() polls the other end

void on_stop_signal(int sig) {
  int none = 0;
  g_stop.signal.compare_exchange_strong(none, sig);
  g_stop.count.fetch_add(1);
  if (g_stop_pipe[1] >= 0) {
    const int saved = errno;  // write() is async-signal-safe; a full pipe already wakes the waiter
    [[maybe_unused]] const auto n = ::write(g_stop_pipe[1], "s", 1);
    errno = saved;
  }
}
}  // namespace

void install_stop_handlers() {
  if (g_stop_pipe[0] < 0 && ::pipe2(g_stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0) g_stop_pipe[0] = g_stop_pipe[1] = -1;
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGHUP, SIGINT, SIGTERM}) sigaction(sig, &sa, nullptr);
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
const core::StopSignal& stop_signal() { return g_stop; }

int exit_code_after_stop(int code) {
  const int sig = g_stop.signal.load();
  return sig != 0 ? core::exit_code_for_signal(sig) : code;
}

core::Result<telemetry::Live> open_live(Context& ctx, bool quiet) {
  auto live = ctx.backend.open_gpus();
  if (!live) return live.error();
  install_stop_handlers();
  if (!quiet) print_banner(*live);
  return live;
}

void print_banner(const telemetry::Live& live, std::string_view who) {
  if (!live.banner.empty()) print_text(stderr, fmt::format("{}: {}\n", who, live.banner));
}

}  // namespace gpudoc::cli
