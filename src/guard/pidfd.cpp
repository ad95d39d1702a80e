#include "guard/pidfd.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

// The generic numbers, the same on every architecture since Linux 5.1/5.3, for headers that
// predate them.
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

namespace gpudoc::guard {

core::Result<Pidfd> Pidfd::open(int pid) {
  if (pid <= 0) return core::Error(core::ErrorKind::kBadInput, fmt::format("no process with pid {}", pid));
  const long fd = ::syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0U);
  if (fd < 0) {
    const int err = errno;
    if (err == ESRCH) return core::Error(core::ErrorKind::kBadInput, fmt::format("no process with pid {}", pid));
    if (err == ENOSYS)
      return core::Error(core::ErrorKind::kNotSupported,
                         "this kernel has no pidfd_open (Linux 5.3 or later is needed to signal a job safely)");
    return core::Error(core::ErrorKind::kEnvironment,
                       fmt::format("opening a pidfd for process {}: {}", pid, std::strerror(err)));
  }
  return Pidfd(core::UniqueFd(static_cast<int>(fd)), pid);
}

core::Status Pidfd::signal(int sig) {
  if (!fd_.valid()) return core::Error(core::ErrorKind::kInternal, "signalling through a closed pidfd");
  if (exited()) return core::Error(core::ErrorKind::kEnvironment, fmt::format("process {} has exited", pid_));
  if (::syscall(SYS_pidfd_send_signal, fd_.get(), sig, nullptr, 0U) == 0) return core::ok_status();
  const int err = errno;
  if (err == ESRCH) return core::Error(core::ErrorKind::kEnvironment, fmt::format("process {} has exited", pid_));
  if (err == EPERM)
    return core::Error(core::ErrorKind::kEnvironment,
                       fmt::format("signalling process {}: not permitted (another user's process)", pid_));
  return core::Error(core::ErrorKind::kEnvironment,
                     fmt::format("signalling process {} with signal {}: {}", pid_, sig, std::strerror(err)));
}

bool Pidfd::exited() const {
  if (!fd_.valid()) return true;
  pollfd p{fd_.get(), POLLIN, 0};
  for (;;) {
    const int n = ::poll(&p, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    return n > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)) != 0;
  }
}

}  // namespace gpudoc::guard
