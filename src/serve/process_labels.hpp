// gpudoc::serve process labels — the container, Kubernetes pod and Slurm job of each GPU process,
// from its cgroup, for /metrics' per-process series (container_id, pod_uid, slurm_job_id labels)
// and the GPU's own when one job holds it (exposition.hpp).
//
//   auto labeler = std::make_shared<serve::CgroupLabeler>();
//   options.label_process = [labeler](serve::ProcessSnapshot& p) { (*labeler)(p); };
//
// A pid's cgroup is read once and again after a minute (the pid may have been reused by then);
// at most 4096 pids are remembered (all forgotten at once when more come).
// Thread-safety: operator() may be called from several threads.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/process_tree.hpp"
#include "serve/exposition.hpp"

namespace gpudoc::serve {

class CgroupLabeler {
 public:
  using Reader = std::function<core::CgroupIdentity(pid_t)>;
  using Now = std::function<std::chrono::steady_clock::time_point()>;
  static constexpr std::chrono::minutes kReadAgainAfter{1};
  static constexpr std::size_t kMaxRemembered = 4096;

  // `read`: a pid's identity (default: core::process_cgroup_identity of /proc); `now`: the steady
  // clock (tests pass their own).
  explicit CgroupLabeler(Reader read = {}, Now now = {});
  // Sets p.container_id, p.pod_uid and p.slurm_job_id (empty where the cgroup names none).
  void operator()(ProcessSnapshot& p);

 private:
  struct Entry {
    core::CgroupIdentity id;
    std::chrono::steady_clock::time_point read_at;
  };
  Reader read_;
  Now now_;
  std::mutex mu_;
  std::unordered_map<std::uint32_t, Entry> cache_;
};

}  // namespace gpudoc::serve
