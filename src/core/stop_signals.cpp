#include "core/stop_signals.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <thread>

namespace gpudoc::core {

namespace {
StopSignal g_stop;              // the first stop signal, and how many came
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
void ignore_broken_pipe(int) {}
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

bool wait_for_stop(Nanos timeout) {
  if (g_stop.count.load() > 0) return true;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(std::max(timeout, Nanos(0))).count();
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
const StopSignal& stop_signal() { return g_stop; }

void survive_broken_pipe() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = ignore_broken_pipe;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGPIPE, &sa, nullptr);
}

int exit_code_after_stop(int code) {
  const int sig = g_stop.signal.load();
  return sig != 0 ? exit_code_for_signal(sig) : code;
}

}  // namespace gpudoc::core
