// gpudoc::testing::as_unprivileged — runs a piece of a test as a user without privileges, the way
// another local user (or gpudoc itself as a normal user) meets the files: CI runs the tests as
// root, which no file mode stops.
//
//   int code = as_unprivileged([&] { return can_write(path) ? 1 : 0; });   // the function's return
//
// As root: fork, drop to nobody (uid and gid 65534) in the child, run `fn` there and return its
// result (an exit code, 0..255; 255 when the fork or the drop failed). As another user: run `fn`
// in this process (the caller then uses file modes to take access away). Paths `fn` touches must
// be reachable by nobody: see open_to_everyone().
#pragma once

#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>

namespace gpudoc::testing {

inline constexpr uid_t kNobody = 65534;

inline bool running_as_root() { return ::geteuid() == 0; }

inline int as_unprivileged(const std::function<int()>& fn) {
  if (!running_as_root()) return fn();
  const pid_t pid = ::fork();
  if (pid < 0) return 255;
  if (pid == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(kNobody) != 0 || ::setuid(kNobody) != 0) ::_exit(255);
    ::_exit(fn() & 0xff);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 255;
}

// Lets every user enter `dir` and the folders above it up to the root (a test's mkdtemp folder
// is 0700): read and search, never write.
inline void open_to_everyone(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  for (fs::path p = dir; !p.empty() && p != p.root_path(); p = p.parent_path()) {
    std::error_code ec;
    fs::permissions(p,
                    fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                        fs::perms::others_exec,
                    fs::perm_options::add, ec);
  }
}

}  // namespace gpudoc::testing
