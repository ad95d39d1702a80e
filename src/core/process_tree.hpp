// gpudoc::core process tree — which processes descend from a process, or belong to a process
// group, read from /proc.
//
//   std::set<pid_t> mine = core::descendants_of(::getpid());   // children, grandchildren, ...
//   bool gone = core::live_group_members(child_pgid).empty();   // zombies do not count
//
// A snapshot: processes start and end while /proc is read, so a caller that wants every process
// a command ever had reads it repeatedly and keeps the union. Processes that left the tree (a
// daemon re-parented to init) are not found by descendants_of. Thread-safe; reads every
// /proc/<pid>/stat (about a millisecond per few hundred processes).
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace gpudoc::core {

// The fields of one /proc/<pid>/stat line gpudoc uses.
struct ProcStat {
  char state = '?';  // R, S, D, Z (zombie: exited, not yet reaped), ...
  pid_t parent = 0;
  pid_t group = 0;  // process group id
  // When the process started, in clock ticks after boot (field 22); 0 when the line stops short.
  // With the pid it names one process: a pid used again later has another start time.
  unsigned long long start_ticks = 0;
};

// From "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so the last ')'
// ends it. Absent when the line is not of that form.
[[nodiscard]] std::optional<ProcStat> parse_proc_stat(std::string_view stat_line);

// pid -> its stat fields, for every process listed under `proc_root` (a fake tree in tests).
[[nodiscard]] std::map<pid_t, ProcStat> read_proc_stats(const std::string& proc_root = "/proc");

// Every live process below `root` (not root itself). Empty when /proc cannot be read.
[[nodiscard]] std::set<pid_t> descendants_of(pid_t root, const std::string& proc_root = "/proc");

// The processes of process group `group` that have not exited (zombies excluded: they are gone,
// only not yet reaped by whoever adopted them).
[[nodiscard]] std::set<pid_t> live_group_members(pid_t group, const std::string& proc_root = "/proc");

// /proc/<pid>/comm (the executable's name, at most 15 bytes) without its newline; "" when it
// cannot be read.
[[nodiscard]] std::string process_comm(pid_t pid, const std::string& proc_root = "/proc");
// /proc/<pid>/cmdline split at its NULs; empty when it cannot be read (or for a kernel thread).
[[nodiscard]] std::vector<std::string> process_argv(pid_t pid, const std::string& proc_root = "/proc");
// One variable of /proc/<pid>/environ (the process's environment as it started); nullopt when it
// is not set or the file cannot be read (another user's process).
[[nodiscard]] std::optional<std::string> process_environ_value(pid_t pid, std::string_view key,
                                                               const std::string& proc_root = "/proc");

// Who runs a process, as its cgroup path tells: the container runtime's 64-hex container id
// (docker, containerd, CRI-O, podman; cgroup v1 or v2) and the Kubernetes pod UID (kubepods'
// pod<uid> component, systemd's underscores given back as dashes) and the Slurm job id (slurmd's
// job_<id> component under a Slurm cgroup: cgroup v2 ".../slurmstepd.scope/job_<id>/step_<s>/...",
// also "<node>_slurmstepd.scope" with several slurmd on one host; cgroup v1
// "/slurm/uid_<u>/job_<id>/step_<s>/...", also "/slurm_<node>/..."). Empty where the path has none.
struct CgroupIdentity {
  std::string container_id;
  std::string pod_uid;
  std::string slurm_job_id;  // digits only
};
// From the text of /proc/<pid>/cgroup ("0::/kubepods.slice/.../cri-containerd-<id>.scope"): the
// innermost container id and pod UID on any of its lines. Pure.
[[nodiscard]] CgroupIdentity parse_cgroup_identity(std::string_view proc_cgroup_text);
// parse_cgroup_identity of /proc/<pid>/cgroup; empty when it cannot be read.
[[nodiscard]] CgroupIdentity process_cgroup_identity(pid_t pid, const std::string& proc_root = "/proc");

}  // namespace gpudoc::core
