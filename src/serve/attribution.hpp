// gpudoc::serve attribution — which Kubernetes pods and which HPC jobs hold each GPU, as labels on
// the GPU's series (pod, namespace, container, hpc_job: dcgm-exporter's names), from the two
// sources dcgm-exporter reads:
//
// - the kubelet's pod-resources API (PodResourcesLister.List, read by serve/pod_resources.hpp):
//   the device ids the device plugin gave each container, for the resources nvidia.com/gpu,
//   nvidia.com/gpu.shared and nvidia.com/mig-*;
// - an HPC job mapping folder (dcgm-exporter's --hpc-job-mapping-dir): a file per GPU, named by
//   the GPU's index ("0", or "0.1" for GPU instance 1 of GPU 0), one job id a line, written by the
//   scheduler's prolog and removed by its epilog.
//
// Pure: the kubelet's answer, a file's text and the GPUs in; per-GPU holders and labels out. The
// reading (a gRPC call, a folder) is serve/pod_resources.hpp and serve/attributor.hpp's.
//
//   serve::Attribution a = serve::pods_by_gpu(list, header.gpus);        // GPU index -> holders
//   a[0].hpc_jobs = serve::parse_hpc_job_file("4213\n");
//   for (const auto& [name, value] : serve::attribution_labels(a[0])) ...   // pod="train-0", ...
#pragma once

#include <compare>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpu/backend.hpp"

namespace gpudoc::serve {

// PodResourcesLister.List's answer, the fields gpudoc reads (k8s.io/kubelet
// pkg/apis/podresources/v1/api.proto: ListPodResourcesResponse, PodResources, ContainerResources,
// ContainerDevices).
struct ContainerDevices {
  std::string resource_name;            // "nvidia.com/gpu"
  std::vector<std::string> device_ids;  // "GPU-…", "GPU-…::2", "MIG-…", "nvidia0", "nvidia0/vgpu1"
};
struct ContainerResources {
  std::string name;
  std::vector<ContainerDevices> devices;
};
struct PodResources {
  std::string name;
  std::string namespace_name;
  std::vector<ContainerResources> containers;
};
using PodResourcesList = std::vector<PodResources>;

// One container that holds (a share of) a GPU.
struct PodRef {
  std::string namespace_name;
  std::string pod;
  std::string container;
  auto operator<=>(const PodRef&) const = default;
};

// Who holds one GPU: the containers the kubelet gave it (or a MIG instance or a time-sliced share
// of it) and the jobs of its mapping files, each sorted and once.
struct GpuAttribution {
  std::vector<PodRef> pods;
  std::vector<std::string> hpc_jobs;
  bool operator==(const GpuAttribution&) const = default;
};
using Attribution = std::map<int, GpuAttribution>;  // by GPU index; a GPU no one holds is absent

// Whether the kubelet's resource is a GPU's: nvidia.com/gpu, nvidia.com/gpu.shared (the device
// plugin's time-slicing with renameByDefault), nvidia.com/mig-<profile>.
[[nodiscard]] bool is_gpu_resource(std::string_view resource_name) noexcept;

// The index of the GPU a device id names, as dcgm-exporter reads them (both of its
// --kubernetes-gpu-id-type forms, told apart by their shape): a GPU's UUID ("GPU-…"), a MIG
// device's ("MIG-…": the GPU whose mig_instances has it; the old "MIG-GPU-<uuid>/<gi>/<ci>" names
// its GPU), either with the device plugin's share suffix "::N"; or a device name ("nvidia3",
// GKE's "nvidia3/vgpu1" and "nvidia3/gi2"). nullopt: no GPU of `gpus` (another node's id, a
// vendor's own).
[[nodiscard]] std::optional<int> gpu_of_device_id(std::string_view device_id, const std::vector<gpu::DeviceInfo>& gpus);

// The containers holding each GPU of `gpus`: every device id of a GPU resource, mapped by
// gpu_of_device_id; ids that name no GPU are left out. The result has pods only.
[[nodiscard]] Attribution pods_by_gpu(const PodResourcesList& list, const std::vector<gpu::DeviceInfo>& gpus);

// The GPU a mapping file is for: "3" and "3.1" (GPU instance 1 of GPU 3: the GPU's series belong
// to the jobs of all its instances) give 3; any other name (a UUID, "README", "3.tmp") nullopt,
// as dcgm-exporter ignores it.
[[nodiscard]] std::optional<int> hpc_job_file_gpu(std::string_view file_name) noexcept;

// The job ids of a mapping file: one a line, blanks around it and blank lines ignored, each once
// in the order given; at most kMaxHpcJobsPerFile.
inline constexpr std::size_t kMaxHpcJobsPerFile = 256;
[[nodiscard]] std::vector<std::string> parse_hpc_job_file(std::string_view text);

// The labels a GPU's series carry, in this order: namespace, pod and container when every holder
// agrees on them (namespace alone when two pods of one namespace share the GPU; pod and namespace
// when two containers of one pod do; none when pods of two namespaces do), hpc_job when the
// mapping files name exactly one job. A GPU shared by several is not repeated once per holder as
// dcgm-exporter's --kubernetes-virtual-gpus does (a sum over a label would count it once per
// holder); gpudoc_gpu_allocation_info lists every holder instead.
[[nodiscard]] std::vector<std::pair<std::string_view, std::string>> attribution_labels(const GpuAttribution& a);

}  // namespace gpudoc::serve
