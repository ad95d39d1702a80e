// Who holds each GPU (serve/attribution.hpp, serve/attributor.hpp): the kubelet's device ids in
// every form dcgm-exporter reads mapped to GPUs, the labels a GPU's series carry when one or
// several hold it, HPC job mapping files, and the refreshing reader: a GPU given to another pod,
// a source that fails (no stale labels, one warning), files that change or cannot be read.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "serve/attribution.hpp"
#include "serve/attributor.hpp"
#include "support/temp_dir.hpp"

namespace gpudoc::serve {
namespace {

std::vector<gpu::DeviceInfo> two_gpus() {
  std::vector<gpu::DeviceInfo> gpus(2);
  gpus[0].index = 0;
  gpus[0].uuid = "GPU-0b0e2f6a-1111-2222-3333-444455556666";
  gpus[1].index = 1;
  gpus[1].uuid = "GPU-7c1d3e5f-aaaa-bbbb-cccc-ddddeeeeffff";
  gpus[1].mig_instances.push_back({.gpu_instance_id = 1,
                                   .compute_instance_id = 0,
                                   .uuid = "MIG-2ce7a541-c516-5dbc-a76e-26cc100d9b55",
                                   .memory_total_bytes = {},
                                   .multiprocessor_count = {}});
  return gpus;
}

PodResources pod(std::string ns, std::string name, std::string container, std::string resource,
                 std::vector<std::string> ids) {
  return {std::move(name), std::move(ns), {{std::move(container), {{std::move(resource), std::move(ids)}}}}};
}

std::string labels_text(const GpuAttribution& a) {
  std::string out;
  for (const auto& [name, value] : attribution_labels(a)) out += std::string(name) + "=" + value + ";";
  return out;
}

TEST(Attribution, DeviceIdsInEveryFormNameTheirGpu) {
  const auto gpus = two_gpus();
  EXPECT_EQ(gpu_of_device_id("GPU-0b0e2f6a-1111-2222-3333-444455556666", gpus), 0);
  EXPECT_EQ(gpu_of_device_id("GPU-7c1d3e5f-aaaa-bbbb-cccc-ddddeeeeffff::3", gpus), 1);       // a time-sliced share
  EXPECT_EQ(gpu_of_device_id("MIG-2ce7a541-c516-5dbc-a76e-26cc100d9b55", gpus), 1);          // a MIG device of GPU 1
  EXPECT_EQ(gpu_of_device_id("MIG-2ce7a541-c516-5dbc-a76e-26cc100d9b55::7", gpus), 1);       // EKS's share suffix
  EXPECT_EQ(gpu_of_device_id("MIG-GPU-0b0e2f6a-1111-2222-3333-444455556666/1/0", gpus), 0);  // before R470
  EXPECT_EQ(gpu_of_device_id("nvidia1", gpus), 1);  // --kubernetes-gpu-id-type device-name
  EXPECT_EQ(gpu_of_device_id("nvidia0/vgpu2", gpus), 0);
  EXPECT_EQ(gpu_of_device_id("nvidia1/gi3", gpus), 1);
  // Another node's GPU, an index this node lacks, malformed names, another vendor's ids: none.
  for (const char* id : {"GPU-ffffffff-0000-0000-0000-000000000000", "MIG-deadbeef", "nvidia7", "nvidia", "nvidia01",
                         "nvidia-1", "nvidiax", "0", "", "amd.com/gpu-0"})
    EXPECT_EQ(gpu_of_device_id(id, gpus), std::nullopt) << id;
}

TEST(Attribution, OnlyGpuResourcesAreRead) {
  EXPECT_TRUE(is_gpu_resource("nvidia.com/gpu"));
  EXPECT_TRUE(is_gpu_resource("nvidia.com/gpu.shared"));
  EXPECT_TRUE(is_gpu_resource("nvidia.com/mig-1g.18gb"));
  EXPECT_FALSE(is_gpu_resource("nvidia.com/gpux"));
  EXPECT_FALSE(is_gpu_resource("amd.com/gpu"));
  EXPECT_FALSE(is_gpu_resource("example.com/nic"));
  // A device id of a GPU's UUID under another resource does not make its container a GPU holder.
  const auto gpus = two_gpus();
  const Attribution a = pods_by_gpu({pod("ml", "p", "c", "example.com/nic", {gpus[0].uuid})}, gpus);
  EXPECT_TRUE(a.empty());
}

TEST(Attribution, PodsByGpuSortedOnceEach) {
  const auto gpus = two_gpus();
  PodResourcesList list = {
      pod("ml", "train-0", "worker", "nvidia.com/gpu", {gpus[0].uuid}),
      // two MIG instances of GPU 1 for one container: it holds GPU 1 once
      pod("ml", "infer-0", "server", "nvidia.com/mig-1g.18gb",
          {"MIG-2ce7a541-c516-5dbc-a76e-26cc100d9b55", "MIG-GPU-7c1d3e5f-aaaa-bbbb-cccc-ddddeeeeffff/2/0"}),
      pod("batch", "job-7", "main", "nvidia.com/gpu", {"nvidia1"}),
      pod("ml", "idle", "c", "nvidia.com/gpu", {}),
      pod("ml", "elsewhere", "c", "nvidia.com/gpu", {"GPU-ffffffff-0000-0000-0000-000000000000"}),
  };
  list[0].containers.push_back({"sidecar", {}});  // a container without devices holds nothing
  const Attribution a = pods_by_gpu(list, gpus);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a.at(0).pods, (std::vector<PodRef>{{"ml", "train-0", "worker"}}));
  EXPECT_EQ(a.at(1).pods, (std::vector<PodRef>{{"batch", "job-7", "main"}, {"ml", "infer-0", "server"}}));
  EXPECT_TRUE(a.at(0).hpc_jobs.empty());
}

TEST(Attribution, LabelsAreWhatEveryHolderAgreesOn) {
  GpuAttribution one{{{"ml", "train-0", "worker"}}, {}};
  EXPECT_EQ(labels_text(one), "namespace=ml;pod=train-0;container=worker;");
  GpuAttribution two_containers{{{"ml", "train-0", "a"}, {"ml", "train-0", "b"}}, {}};
  EXPECT_EQ(labels_text(two_containers), "namespace=ml;pod=train-0;");
  GpuAttribution two_pods{{{"ml", "a", "c"}, {"ml", "b", "c"}}, {}};
  EXPECT_EQ(labels_text(two_pods), "namespace=ml;");
  // The same pod name in two namespaces: not the same pod, so no pod label either.
  GpuAttribution two_namespaces{{{"ml", "p", "c"}, {"batch", "p", "c"}}, {}};
  EXPECT_EQ(labels_text(two_namespaces), "");
  EXPECT_EQ(labels_text(GpuAttribution{{}, {"4213"}}), "hpc_job=4213;");
  EXPECT_EQ(labels_text(GpuAttribution{{}, {"4213", "4214"}}), "");
  EXPECT_EQ(labels_text(GpuAttribution{one.pods, {"4213"}}), "namespace=ml;pod=train-0;container=worker;hpc_job=4213;");
  EXPECT_EQ(labels_text(GpuAttribution{}), "");
}

TEST(Attribution, MappingFileNamesAsDcgmExporterReadsThem) {
  EXPECT_EQ(hpc_job_file_gpu("0"), 0);
  EXPECT_EQ(hpc_job_file_gpu("7"), 7);
  EXPECT_EQ(hpc_job_file_gpu("12"), 12);
  EXPECT_EQ(hpc_job_file_gpu("3.1"), 3);  // GPU instance 1 of GPU 3
  for (const char* name : {"", ".", "..", "03", "3.", ".1", "3.1.2", "-1", "+1", "3a", "GPU-0b0e2f6a", "README",
                           "3.tmp", "99999999999999999999"})
    EXPECT_EQ(hpc_job_file_gpu(name), std::nullopt) << name;
}

TEST(Attribution, MappingFileLines) {
  EXPECT_EQ(parse_hpc_job_file("4213\n"), (std::vector<std::string>{"4213"}));
  EXPECT_EQ(parse_hpc_job_file("  4213 \r\n\n4214\n4213\n4215"), (std::vector<std::string>{"4213", "4214", "4215"}));
  EXPECT_TRUE(parse_hpc_job_file("").empty());
  EXPECT_TRUE(parse_hpc_job_file("\n \n\t\n").empty());
  std::string many;
  for (int i = 0; i < 1000; ++i) many += std::to_string(i) + "\n";
  EXPECT_EQ(parse_hpc_job_file(many).size(), kMaxHpcJobsPerFile);
}

// A reader over scripted sources, its warnings kept.
struct Scripted {
  std::vector<core::Result<PodResourcesList>> answers;  // one a read, the last repeated
  std::size_t next = 0;
  HpcJobRead jobs;
  std::vector<std::string> warnings;

  Attributor::Sources sources() {
    return {[this]() -> core::Result<PodResourcesList> {
              const auto& a = answers[std::min(next, answers.size() - 1)];
              ++next;
              return a;
            },
            [this] { return jobs; }, [this](const std::string& w) { warnings.push_back(w); }};
  }
};

TEST(Attributor, AGpuGivenToAnotherPodAndASourceThatFails) {
  const auto gpus = two_gpus();
  Scripted script;
  script.answers = {
      PodResourcesList{pod("ml", "train-0", "worker", "nvidia.com/gpu", {gpus[0].uuid})},
      PodResourcesList{pod("ml", "train-1", "worker", "nvidia.com/gpu", {gpus[0].uuid})},
      core::Error(core::ErrorKind::kEnvironment, "the kubelet's pod-resources socket /s: no such socket"),
      core::Error(core::ErrorKind::kEnvironment, "the kubelet's pod-resources socket /s: no such socket"),
      PodResourcesList{pod("ml", "train-2", "worker", "nvidia.com/gpu", {"nvidia1"})},
      core::Error(core::ErrorKind::kTimeout, "the kubelet's pod-resources socket /s: no answer within 5000 ms"),
  };
  Attributor a(gpus, {.pod_resources_socket = "/s"}, script.sources());
  EXPECT_TRUE(a.current().empty());  // nothing before the first read
  a.refresh();
  EXPECT_EQ(a.current().at(0).pods, (std::vector<PodRef>{{"ml", "train-0", "worker"}}));
  a.refresh();  // reassigned: the new pod only
  EXPECT_EQ(a.current().at(0).pods, (std::vector<PodRef>{{"ml", "train-1", "worker"}}));
  EXPECT_TRUE(script.warnings.empty());
  a.refresh();  // the socket is gone: no pod labels at all, one warning
  EXPECT_TRUE(a.current().empty());
  a.refresh();
  EXPECT_TRUE(a.current().empty());
  ASSERT_EQ(script.warnings.size(), 1u);
  EXPECT_NE(script.warnings[0].find("no such socket; GPU series go without pod labels until it answers"),
            std::string::npos);
  a.refresh();  // it answers again: GPU 1 now, GPU 0 none
  EXPECT_EQ(a.current().size(), 1u);
  EXPECT_EQ(a.current().at(1).pods, (std::vector<PodRef>{{"ml", "train-2", "worker"}}));
  a.refresh();  // failing again after working: said again
  EXPECT_TRUE(a.current().empty());
  ASSERT_EQ(script.warnings.size(), 2u);
  EXPECT_NE(script.warnings[1].find("no answer within 5000 ms"), std::string::npos);
  EXPECT_EQ(a.reads(), 6u);
}

TEST(Attributor, JobsOfServedGpusOnlyAndEachProblemWarnedOnce) {
  Scripted script;
  script.jobs.jobs = {{0, {"4213"}}, {5, {"77"}}};  // GPU 5 is not served here
  script.jobs.problems = {{"/d/1", "--hpc-job-mapping-dir: /d/1: not a regular file"}};
  Attributor a(two_gpus(), {.hpc_job_mapping_dir = "/d"}, script.sources());
  a.refresh();
  a.refresh();
  EXPECT_EQ(a.current().size(), 1u);
  EXPECT_EQ(a.current().at(0).hpc_jobs, (std::vector<std::string>{"4213"}));
  EXPECT_TRUE(a.current().at(0).pods.empty());  // pod-resources not asked for: never read
  EXPECT_EQ(script.next, 0u);
  EXPECT_EQ(script.warnings, (std::vector<std::string>{"--hpc-job-mapping-dir: /d/1: not a regular file"}));
}

TEST(Attributor, ItsThreadReadsAtOnceAndStopsWhenAsked) {
  const auto gpus = two_gpus();
  Scripted script;
  script.answers = {PodResourcesList{pod("ml", "p", "c", "nvidia.com/gpu", {gpus[1].uuid})}};
  Attributor a(gpus, {.pod_resources_socket = "/s", .every = std::chrono::hours(1)}, script.sources());
  a.start();
  for (int i = 0; i < 1000 && a.reads() == 0; ++i) usleep(10000);  // hang guard: 10 s
  a.stop();                                                        // at once, though the next read is an hour away
  EXPECT_EQ(a.reads(), 1u);
  EXPECT_EQ(a.current().at(1).pods.size(), 1u);
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(HpcJobDir, FilesChangeBetweenReadsAndUnreadableOnesAreNamed) {
  testing::TempDir dir("gpudoc-hpc-jobs");
  write(dir.file("0"), "4213\n");
  write(dir.file("1.2"), "5001\n");
  write(dir.file("1.3"), "5002\n5001\n");
  write(dir.file("README"), "not a mapping file\n");
  write(dir.file("GPU-0b0e2f6a-1111-2222-3333-444455556666"), "9\n");  // dcgm-exporter reads indices only
  HpcJobRead r = read_hpc_job_dir(dir.str());
  EXPECT_TRUE(r.problems.empty());
  EXPECT_EQ(r.jobs, (std::map<int, std::vector<std::string>>{{0, {"4213"}}, {1, {"5001", "5002"}}}));

  // The prolog of the next job writes, the epilog of the last removes; a link and a folder planted
  // where a file goes are refused (root must not read another file through them), by name.
  write(dir.file("0"), "4300\n");
  ASSERT_EQ(::unlink(dir.file("1.2").c_str()), 0);
  ASSERT_EQ(::unlink(dir.file("1.3").c_str()), 0);
  ASSERT_EQ(::symlink("/etc/hostname", dir.file("2").c_str()), 0);
  ASSERT_EQ(::mkdir(dir.file("3").c_str(), 0700), 0);
  write(dir.file("4"), std::string(70000, '7'));
  r = read_hpc_job_dir(dir.str());
  EXPECT_EQ(r.jobs, (std::map<int, std::vector<std::string>>{{0, {"4300"}}}));
  ASSERT_EQ(r.problems.size(), 3u);
  EXPECT_NE(r.problems.at(dir.file("2")).find("/2: a symbolic link (not followed); GPU 2's jobs are left out"),
            std::string::npos);
  EXPECT_NE(r.problems.at(dir.file("3")).find("/3: not a regular file"), std::string::npos);
  EXPECT_NE(r.problems.at(dir.file("4")).find("/4: larger than 64 KiB"), std::string::npos);

  // The folder itself gone: said, no jobs.
  r = read_hpc_job_dir(dir.file("missing"));
  EXPECT_TRUE(r.jobs.empty());
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_NE(r.problems.begin()->second.find("missing: No such file or directory"), std::string::npos);
}

TEST(HpcJobDir, TheReaderOnARealFolder) {
  testing::TempDir dir("gpudoc-hpc-jobs");
  write(dir.file("1"), "4213\n");
  std::vector<std::string> warnings;
  Attributor a(two_gpus(), {.hpc_job_mapping_dir = dir.str()},
               {.list_pods = {}, .read_jobs = {}, .warn = [&](const std::string& w) { warnings.push_back(w); }});
  a.refresh();
  EXPECT_EQ(a.current().at(1).hpc_jobs, (std::vector<std::string>{"4213"}));
  ASSERT_EQ(::symlink("/etc/hostname", dir.file("0").c_str()), 0);
  a.refresh();
  a.refresh();
  ASSERT_EQ(warnings.size(), 1u);  // once, though read twice
  EXPECT_NE(warnings[0].find("/0: a symbolic link (not followed)"), std::string::npos);
  ASSERT_EQ(::unlink(dir.file("1").c_str()), 0);
  a.refresh();
  EXPECT_TRUE(a.current().empty());  // the job ended: its label goes
}

}  // namespace
}  // namespace gpudoc::serve
