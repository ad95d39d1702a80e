#include "serve/process_labels.hpp"

#include <utility>

namespace gpudoc::serve {

CgroupLabeler::CgroupLabeler(Reader read, Now now) : read_(std::move(read)), now_(std::move(now)) {
  if (!read_) read_ = [](pid_t pid) { return core::process_cgroup_identity(pid); };
  if (!now_) now_ = [] { return std::chrono::steady_clock::now(); };
}

void CgroupLabeler::operator()(ProcessSnapshot& p) {
  const auto now = now_();
  std::lock_guard lock(mu_);
  auto it = cache_.find(p.pid);
  if (it == cache_.end() || now - it->second.read_at > kReadAgainAfter) {
    if (cache_.size() > kMaxRemembered) cache_.clear();
    it = cache_.insert_or_assign(p.pid, Entry{read_(static_cast<pid_t>(p.pid)), now}).first;
  }
  p.container_id = it->second.id.container_id;
  p.pod_uid = it->second.id.pod_uid;
  p.slurm_job_id = it->second.id.slurm_job_id;
}

}  // namespace gpudoc::serve
