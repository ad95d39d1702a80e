#include "serve/attribution.hpp"

#include <algorithm>
#include <charconv>

namespace gpudoc::serve {
namespace {

std::optional<int> gpu_by_uuid(std::string_view uuid, const std::vector<gpu::DeviceInfo>& gpus) {
  for (const auto& g : gpus)
    if (g.uuid == uuid) return g.index;
  return std::nullopt;
}

// "12" -> 12: digits only, no sign, no leading zero but in "0", within int.
std::optional<int> whole_number(std::string_view text) {
  if (text.empty() || (text.size() > 1 && text[0] == '0')) return std::nullopt;
  int n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || text[0] == '-' || text[0] == '+') return std::nullopt;
  return n;
}

// "nvidia3", "nvidia3/vgpu1", "nvidia3/gi2" -> 3.
std::optional<int> device_name_index(std::string_view id) {
  constexpr std::string_view kPrefix = "nvidia";
  if (!id.starts_with(kPrefix)) return std::nullopt;
  id.remove_prefix(kPrefix.size());
  return whole_number(id.substr(0, id.find('/')));
}

std::string_view trim(std::string_view s) {
  constexpr std::string_view kBlank = " \t\r\v\f";
  const auto first = s.find_first_not_of(kBlank);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(kBlank) - first + 1);
}

// The value every element gives, or empty when two differ.
template <class Get>
std::string agreed(const std::vector<PodRef>& pods, Get get) {
  const std::string& first = get(pods.front());
  for (const auto& p : pods)
    if (get(p) != first) return {};
  return first;
}

}  // namespace

bool is_gpu_resource(std::string_view resource_name) noexcept {
  return resource_name == "nvidia.com/gpu" || resource_name == "nvidia.com/gpu.shared" ||
         resource_name.starts_with("nvidia.com/mig-");
}

std::optional<int> gpu_of_device_id(std::string_view device_id, const std::vector<gpu::DeviceInfo>& gpus) {
  std::string_view id = device_id;
  if (const auto share = id.find("::"); share != std::string_view::npos) id = id.substr(0, share);
  if (id.starts_with("MIG-")) {
    for (const auto& g : gpus)
      for (const auto& m : g.mig_instances)
        if (m.uuid == id) return g.index;
    if (id.starts_with("MIG-GPU-")) {  // before R470: MIG-GPU-<GPU's UUID>/<GI>/<CI>
      const std::string_view parent = id.substr(4);
      return gpu_by_uuid(parent.substr(0, parent.find('/')), gpus);
    }
    return std::nullopt;
  }
  if (id.starts_with("GPU-")) return gpu_by_uuid(id, gpus);
  if (const auto index = device_name_index(id)) {
    for (const auto& g : gpus)
      if (g.index == *index) return g.index;
  }
  return std::nullopt;
}

Attribution pods_by_gpu(const PodResourcesList& list, const std::vector<gpu::DeviceInfo>& gpus) {
  Attribution out;
  for (const auto& pod : list)
    for (const auto& container : pod.containers)
      for (const auto& devices : container.devices) {
        if (!is_gpu_resource(devices.resource_name)) continue;
        for (const auto& id : devices.device_ids)
          if (const auto gpu = gpu_of_device_id(id, gpus))
            out[*gpu].pods.push_back({pod.namespace_name, pod.name, container.name});
      }
  for (auto& [gpu, a] : out) {
    std::sort(a.pods.begin(), a.pods.end());
    a.pods.erase(std::unique(a.pods.begin(), a.pods.end()), a.pods.end());
  }
  return out;
}

std::optional<int> hpc_job_file_gpu(std::string_view file_name) noexcept {
  const auto dot = file_name.find('.');
  if (dot != std::string_view::npos && !whole_number(file_name.substr(dot + 1))) return std::nullopt;
  return whole_number(file_name.substr(0, dot));
}

std::vector<std::string> parse_hpc_job_file(std::string_view text) {
  std::vector<std::string> jobs;
  while (!text.empty() && jobs.size() < kMaxHpcJobsPerFile) {
    const auto end = text.find('\n');
    const std::string_view job = trim(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    if (!job.empty() && std::find(jobs.begin(), jobs.end(), job) == jobs.end()) jobs.emplace_back(job);
  }
  return jobs;
}

std::vector<std::pair<std::string_view, std::string>> attribution_labels(const GpuAttribution& a) {
  std::vector<std::pair<std::string_view, std::string>> labels;
  if (!a.pods.empty()) {
    std::string ns = agreed(a.pods, [](const PodRef& p) -> const std::string& { return p.namespace_name; });
    std::string pod =
        ns.empty() ? std::string() : agreed(a.pods, [](const PodRef& p) -> const std::string& { return p.pod; });
    std::string container =
        pod.empty() ? std::string() : agreed(a.pods, [](const PodRef& p) -> const std::string& { return p.container; });
    if (!ns.empty()) labels.emplace_back("namespace", std::move(ns));
    if (!pod.empty()) labels.emplace_back("pod", std::move(pod));
    if (!container.empty()) labels.emplace_back("container", std::move(container));
  }
  if (a.hpc_jobs.size() == 1) labels.emplace_back("hpc_job", a.hpc_jobs.front());
  return labels;
}

}  // namespace gpudoc::serve
