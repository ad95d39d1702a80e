// The holders of each GPU on /metrics (serve/exposition.hpp with serve/attribution.hpp): the
// kubelet's namespace, pod and container and the mapping files' hpc_job on gpudoc's series and on
// dcgm-exporter's, what a shared GPU carries, the mapped job before the cgroup's, escaping.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "serve/exposition.hpp"

namespace gpudoc::serve {
namespace {

// The first line of `text` that starts with `prefix`.
std::string line_starting(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.starts_with(prefix)) return line;
  return {};
}

Snapshot one_gpu_snapshot() {
  Snapshot s;
  GpuSnapshot g;
  g.index = 0;
  g.uuid = "GPU-1234";
  g.name = "NVIDIA H200";
  g.pci_bus_id = "00000000:18:00.0";
  g.latest[gpu::index(gpu::Metric::kPowerWatts)] = 412.5;
  s.gpus.push_back(g);
  return s;
}

TEST(AttributionExposition, PodLabelsOnNativeAndDcgmSeries) {
  Snapshot s = one_gpu_snapshot();
  s.gpus[0].attribution.pods = {{"ml", "train-0", "worker"}};
  const std::string out = render(s, {.dcgm_compatible = true});
  EXPECT_EQ(line_starting(out, "gpudoc_power_watts{"),
            R"(gpudoc_power_watts{gpu="0",uuid="GPU-1234",name="NVIDIA H200",pci_bus_id="00000000:18:00.0",)"
            R"(namespace="ml",pod="train-0",container="worker"} 412.5)");
  EXPECT_EQ(line_starting(out, "gpudoc_gpu_info{"),
            R"(gpudoc_gpu_info{gpu="0",uuid="GPU-1234",name="NVIDIA H200",pci_bus_id="00000000:18:00.0",)"
            R"(namespace="ml",pod="train-0",container="worker"} 1)");
  EXPECT_EQ(line_starting(out, "DCGM_FI_DEV_POWER_USAGE{"),
            R"(DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-1234",pci_bus_id="00000000:18:00.0",device="nvidia0",)"
            R"(modelName="NVIDIA H200",namespace="ml",pod="train-0",container="worker"} 412.5)");
  EXPECT_EQ(line_starting(out, "gpudoc_gpu_allocation_info{"),
            R"(gpudoc_gpu_allocation_info{gpu="0",uuid="GPU-1234",namespace="ml",pod="train-0",container="worker"} 1)");
  // Nobody holds it: no labels, no allocation series.
  const std::string idle = render(one_gpu_snapshot(), {.dcgm_compatible = true});
  EXPECT_EQ(idle.find("namespace="), std::string::npos);
  EXPECT_EQ(idle.find("gpudoc_gpu_allocation_info"), std::string::npos);
}

TEST(AttributionExposition, ASharedGpuListsEveryHolderAndLabelsWhatTheyShare) {
  Snapshot s = one_gpu_snapshot();
  s.gpus[0].attribution.pods = {{"ml", "a", "c"}, {"ml", "b", "c"}};
  s.gpus[0].attribution.hpc_jobs = {"4213", "4214"};
  const std::string out = render(s, {.dcgm_compatible = true});
  EXPECT_TRUE(line_starting(out, "gpudoc_power_watts{").ends_with(R"(,namespace="ml"} 412.5)"));
  EXPECT_TRUE(line_starting(out, "DCGM_FI_DEV_POWER_USAGE{").ends_with(R"(,namespace="ml"} 412.5)"));
  EXPECT_NE(out.find(R"(gpudoc_gpu_allocation_info{gpu="0",uuid="GPU-1234",namespace="ml",pod="a",container="c"} 1)"),
            std::string::npos);
  EXPECT_NE(out.find(R"(gpudoc_gpu_allocation_info{gpu="0",uuid="GPU-1234",namespace="ml",pod="b",container="c"} 1)"),
            std::string::npos);
  EXPECT_NE(out.find(R"(gpudoc_gpu_allocation_info{gpu="0",uuid="GPU-1234",hpc_job="4213"} 1)"), std::string::npos);
  EXPECT_NE(out.find(R"(gpudoc_gpu_allocation_info{gpu="0",uuid="GPU-1234",hpc_job="4214"} 1)"), std::string::npos);
  EXPECT_EQ(line_starting(out, "gpudoc_power_watts{").find("hpc_job"), std::string::npos);
}

TEST(AttributionExposition, MappedJobBeforeTheCgroupsAndNeverTwice) {
  Snapshot s = one_gpu_snapshot();
  ProcessSnapshot p;
  p.pid = 7;
  p.name = "python";
  p.slurm_job_id = "999";  // the cgroup's Slurm job
  s.gpus[0].processes.push_back(p);
  // Without mapping files, the cgroup's job is dcgm-exporter's hpc_job (and gpudoc's slurm_job_id).
  const std::string cgroup = render(s, {.dcgm_compatible = true});
  EXPECT_TRUE(line_starting(cgroup, "DCGM_FI_DEV_POWER_USAGE{").ends_with(R"(,hpc_job="999"} 412.5)"));
  EXPECT_EQ(line_starting(cgroup, "gpudoc_power_watts{").find("hpc_job"), std::string::npos);
  // With one: the file's job, once, on both namings; the cgroup's still in gpudoc_gpu_job_info.
  s.gpus[0].attribution.hpc_jobs = {"4213"};
  const std::string mapped = render(s, {.dcgm_compatible = true});
  const std::string dcgm = line_starting(mapped, "DCGM_FI_DEV_POWER_USAGE{");
  EXPECT_TRUE(dcgm.ends_with(R"(,hpc_job="4213"} 412.5)")) << dcgm;
  EXPECT_EQ(dcgm.find("hpc_job", dcgm.find("hpc_job") + 1), std::string::npos) << dcgm;
  EXPECT_TRUE(line_starting(mapped, "gpudoc_power_watts{").ends_with(R"(,hpc_job="4213"} 412.5)"));
  EXPECT_NE(line_starting(mapped, "gpudoc_gpu_job_info{").find(R"(slurm_job_id="999")"), std::string::npos);
}

TEST(AttributionExposition, HostileNamesAreEscaped) {
  Snapshot s = one_gpu_snapshot();
  s.gpus[0].attribution.pods = {{"ml", "p\"}\nx", "c\\"}};
  s.gpus[0].attribution.hpc_jobs = {"j\xff"};
  const std::string out = render(s, {.format = Format::kOpenMetrics, .dcgm_compatible = true});
  EXPECT_NE(out.find(R"(pod="p\"}\nx",container="c\\",hpc_job="j)"
                     "\xef\xbf\xbd"
                     R"("} 412.5)"),
            std::string::npos);
  EXPECT_EQ(out.find("\nx\""), std::string::npos);
}

}  // namespace
}  // namespace gpudoc::serve
