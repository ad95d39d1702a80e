// gpudoc::guard::Pidfd — a handle on one process that never turns into a handle on another.
//
// A pid is a number the kernel hands out again once its process is reaped; kill(pid, sig) may then
// hit whatever process got the number. A pidfd (Linux 5.3+) refers to the process itself: once
// that process is gone, signalling through it fails with ESRCH instead of reaching a newcomer. The
// guard opens one when it starts watching a job and signals only through it:
//
//   auto job = guard::Pidfd::open(hello.pid);       // Result<Pidfd>
//   if (!job) return job.error();                   // kBadInput: no such process
//   poll_fds.push_back(job->fd());                  // readable once the process has exited
//   if (auto s = job->signal(SIGUSR1); !s) log(s.error().message());
//
// The system calls are made through syscall(2): glibc's wrappers (2.36) may be absent where gpudoc
// is built. Thread-safety: one Pidfd is used from one thread at a time.
#pragma once

#include <utility>

#include "core/result.hpp"
#include "core/temp_dir.hpp"

namespace gpudoc::guard {

class Pidfd {
 public:
  // pidfd_open(pid). Errors: kBadInput "no process with pid N" (it does not exist or was reaped),
  // kNotSupported when the kernel has no pidfd_open (before Linux 5.3), kEnvironment otherwise.
  [[nodiscard]] static core::Result<Pidfd> open(int pid);

  // pidfd_send_signal. Refused, and nothing is sent, once the process has exited (also when it
  // is a zombie not yet reaped, and always after its pid was reaped and perhaps reused). Errors:
  // kEnvironment "process N has exited" (ESRCH or exited()), "not permitted" (EPERM), or the
  // reason. Never blocks.
  [[nodiscard]] core::Status signal(int sig);

  // True once the process has exited (the pidfd is readable). Never blocks.
  [[nodiscard]] bool exited() const;
  // The descriptor, for poll(2): POLLIN when the process exits. Owned by this object.
  [[nodiscard]] int fd() const { return fd_.get(); }
  // The pid the process had when the pidfd was opened (for messages only).
  [[nodiscard]] int pid() const { return pid_; }

 private:
  Pidfd(core::UniqueFd fd, int pid) : fd_(std::move(fd)), pid_(pid) {}
  core::UniqueFd fd_;
  int pid_ = 0;
};

}  // namespace gpudoc::guard
