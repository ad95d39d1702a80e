// gpudoc::core::PrivateDir — one private folder per run for every temporary file gpudoc makes.
//
// gpudoc often runs as root on shared nodes. A name another user can guess in a shared temporary
// folder (/tmp/gpudoc-<pid>.py) lets that user plant a symlink (root then overwrites any file) or a
// FIFO (root then runs what the user writes into it). So every temporary file lives in a folder
// made by mkdtemp (mode 0700, a name nobody can guess, owned by gpudoc's user), and files inside
// it are created with O_CREAT|O_EXCL|O_NOFOLLOW.
//
//   auto dir = core::PrivateDir::create("gpudoc-baseline");   // $TMPDIR/gpudoc-baseline-Xy12Ab
//   if (!dir) return dir.error();                              // kIo names the folder and why
//   auto fd = core::create_new_file(dir->file("probe.py"));    // Result<UniqueFd>
//   ...                                                        // the folder and its files go with `dir`
//
// A run killed with SIGKILL cannot remove its folder. So each folder holds a record of the process
// that made it (kOwnerFile: its pid, its start time from /proc/PID/stat and its pid namespace), and
// every PrivateDir::create first removes the folders in its base that a dead process left: named
// gpudoc-*, owned by this user, mode 0700, with an owner record whose process is gone (no such pid,
// or the pid now names a process started at another time: pids are used again), recorded in this
// pid namespace. A folder without a record (being made, kept, or made by another version) is never
// touched, nor is one whose owner cannot be told gone. See remove_orphaned_dirs.
//
// Thread-safety: a PrivateDir is owned by one thread at a time; create_new_file is thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "core/result.hpp"

namespace gpudoc::core {

// An owned file descriptor, closed on destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd();
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  [[nodiscard]] int get() const { return fd_; }
  [[nodiscard]] bool valid() const { return fd_ >= 0; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

// The file in a private folder that names the process that made it: "PID START_TICKS PID_NS\n".
inline constexpr const char* kOwnerFile = ".gpudoc-owner";

// What a later run does with a folder whose maker died without removing it: kRemove (the default)
// writes the owner record, so the folder is swept; kLeave writes none, for a folder that others
// may still use after its maker is gone (a slice's state, which the job's processes keep using).
enum class WhenOrphaned { kRemove, kLeave };

class PrivateDir {
 public:
  // Makes `<base>/<prefix>-XXXXXX` with mkdtemp (mode 0700), after removing what dead runs left in
  // base (remove_orphaned_dirs). base: $TMPDIR when set and not empty, else /tmp. Errors: kIo
  // "creating a private temporary folder in BASE: <reason>" (also when the owner record cannot be
  // written; the folder is then removed).
  [[nodiscard]] static Result<PrivateDir> create(std::string_view prefix, std::string base = {},
                                                 WhenOrphaned orphaned = WhenOrphaned::kRemove);

  // Removes the folder and everything in it, unless keep() was called.
  ~PrivateDir();
  PrivateDir(PrivateDir&& other) noexcept;
  PrivateDir& operator=(PrivateDir&& other) noexcept;
  PrivateDir(const PrivateDir&) = delete;
  PrivateDir& operator=(const PrivateDir&) = delete;

  [[nodiscard]] const std::string& path() const { return path_; }
  // `path()/name`; name must be a plain file name (no '/').
  [[nodiscard]] std::string file(std::string_view name) const;
  // Leaves the folder in place when this object goes (e.g. a trace the user asked to keep); its
  // owner record goes, so no later run sweeps it.
  void keep();

 private:
  explicit PrivateDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
  bool keep_ = false;
};

// The base folder for temporary files: $TMPDIR when set and not empty, else /tmp.
[[nodiscard]] std::string temp_base();

// Removes each folder in `base` (default temp_base()) left by a gpudoc run that is gone: its name
// starts with "gpudoc-", it is a directory (not a link) owned by this effective user with no
// permission for group or others, and its kOwnerFile (a regular file of this user) names a process
// of this pid namespace that no longer runs, or a pid that now belongs to a process with another
// start time. Nothing is removed when /proc cannot be read. Returns how many were removed.
std::size_t remove_orphaned_dirs(const std::string& base = {});

// Creates `path` as a new regular file, mode 0600, open for writing: O_CREAT|O_EXCL|O_NOFOLLOW|
// O_CLOEXEC, so an existing file, symlink or FIFO at that name is never opened or followed.
// Errors: kIo "creating PATH: <reason>" (EEXIST: "... already exists").
[[nodiscard]] Result<UniqueFd> create_new_file(const std::string& path);

// Writes all of `content` to `fd` (retrying short writes and EINTR). Errors: kIo "writing WHAT:
// <reason>".
[[nodiscard]] Status write_all(int fd, std::string_view content, std::string_view what);

}  // namespace gpudoc::core
