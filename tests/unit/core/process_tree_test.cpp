// core process tree: /proc/<pid>/stat parsed (odd command names included), descendants found, a
// process group's live members (zombies excluded), on a fake /proc.
#include "core/process_tree.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <filesystem>
#include <fstream>

#include "support/temp_dir.hpp"

namespace gpudoc::core {
namespace {

TEST(ProcStat, CommandNamesWithSpacesAndParentheses) {
  auto s = parse_proc_stat("4242 (my (odd) name) S 17 4242 4242 0 -1 4194560 ...");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->state, 'S');
  EXPECT_EQ(s->parent, 17);
  EXPECT_EQ(s->group, 4242);
  EXPECT_FALSE(parse_proc_stat("garbage"));
  EXPECT_FALSE(parse_proc_stat("1 (x) S"));
}

TEST(ProcStat, StartTimeIsFieldTwentyTwo) {
  auto s = parse_proc_stat("4242 (my (odd) name) S 17 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 20 -2 1 0 98765 1000");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->start_ticks, 98765u);
  EXPECT_EQ(parse_proc_stat("4242 (x) S 17 4242 4242 0 -1")->start_ticks, 0u);  // cut short: unknown
  std::ifstream self("/proc/self/stat");
  std::string line;
  std::getline(self, line);
  EXPECT_GT(parse_proc_stat(line)->start_ticks, 0u) << line;
}

class FakeProc : public ::testing::Test {
 protected:
  void add(pid_t pid, const char* comm, char state, pid_t parent, pid_t group) {
    std::filesystem::create_directories(root_.file(std::to_string(pid)));
    std::ofstream(root_.file(std::to_string(pid) + "/stat"))
        << pid << " (" << comm << ") " << state << ' ' << parent << ' ' << group << " 0 0 -1\n";
  }
  testing::TempDir root_{"gpudoc-fake-proc"};
};

TEST_F(FakeProc, DescendantsAndGroupMembers) {
  add(1, "init", 'S', 0, 1);
  add(100, "gpudoc", 'S', 1, 100);
  add(200, "sh", 'S', 100, 200);
  add(201, "python3 train.py", 'R', 200, 200);
  add(202, "worker", 'Z', 201, 200);  // exited, not reaped
  add(300, "elsewhere", 'S', 1, 300);
  add(301, "orphan of 200", 'S', 1, 200);                   // re-parented, still in the group
  std::filesystem::create_directories(root_.file("self"));  // not a pid: skipped
  EXPECT_EQ(descendants_of(100, root_.str()), (std::set<pid_t>{200, 201, 202}));
  EXPECT_EQ(descendants_of(300, root_.str()), std::set<pid_t>{});
  EXPECT_EQ(live_group_members(200, root_.str()), (std::set<pid_t>{200, 201, 301}));
  EXPECT_TRUE(descendants_of(1, root_.str() + "/missing").empty());
}

TEST_F(FakeProc, CommArgvAndOneEnvironmentVariable) {
  add(42, "python3", 'S', 1, 42);
  std::ofstream(root_.file("42/comm")) << "python3\n";
  std::ofstream(root_.file("42/cmdline")) << std::string("python3\0-u\0train.py\0", 20);
  std::ofstream(root_.file("42/environ")) << std::string("HOME=/root\0CUDA_VISIBLE_DEVICES=2,3\0CUDA=x", 42);
  EXPECT_EQ(process_comm(42, root_.str()), "python3");
  EXPECT_EQ(process_argv(42, root_.str()), (std::vector<std::string>{"python3", "-u", "train.py"}));
  EXPECT_EQ(process_environ_value(42, "CUDA_VISIBLE_DEVICES", root_.str()), "2,3");
  EXPECT_EQ(process_environ_value(42, "CUDA", root_.str()), "x");  // the whole name, not a prefix
  EXPECT_FALSE(process_environ_value(42, "PATH", root_.str()));
  EXPECT_EQ(process_comm(43, root_.str()), "");  // no such process
  EXPECT_TRUE(process_argv(43, root_.str()).empty());
}

TEST(ProcessTree, FindsARealChild) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  const auto tree = descendants_of(::getpid());
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(tree.count(child), 1u);
}

constexpr const char* kContainerd = "5b6ec8ad5e1cd3a0e1ae4a0b0b4c4e3bd9a2f0e4d36e1f8cf4bb8a1f7a0e2c91";
constexpr const char* kPodUid = "0c4f2a8e-9d5b-4c61-8f0e-2b7d1a3c5e9f";

TEST(CgroupIdentity, KubernetesCgroupV2SystemdDriver) {
  const std::string text = std::string("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod") +
                           "0c4f2a8e_9d5b_4c61_8f0e_2b7d1a3c5e9f.slice/cri-containerd-" + kContainerd + ".scope\n";
  const auto id = parse_cgroup_identity(text);
  EXPECT_EQ(id.container_id, kContainerd);
  EXPECT_EQ(id.pod_uid, kPodUid);
}

TEST(CgroupIdentity, KubernetesCgroupV1CgroupfsDriver) {
  const std::string path = std::string("/kubepods/besteffort/pod") + kPodUid + "/" + kContainerd;
  const std::string text = "12:memory:" + path + "\n11:cpu,cpuacct:" + path + "\n1:name=systemd:" + path + "\n";
  const auto id = parse_cgroup_identity(text);
  EXPECT_EQ(id.container_id, kContainerd);
  EXPECT_EQ(id.pod_uid, kPodUid);
}

TEST(CgroupIdentity, DockerAndPodmanWithoutPod) {
  auto docker = parse_cgroup_identity(std::string("0::/system.slice/docker-") + kContainerd + ".scope\n");
  EXPECT_EQ(docker.container_id, kContainerd);
  EXPECT_EQ(docker.pod_uid, "");
  auto podman = parse_cgroup_identity(std::string("0::/machine.slice/libpod-") + kContainerd + ".scope");
  EXPECT_EQ(podman.container_id, kContainerd);
}

TEST(CgroupIdentity, SlurmCgroupV2) {
  const auto id = parse_cgroup_identity("0::/system.slice/slurmstepd.scope/job_4213/step_0/user/task_0\n");
  EXPECT_EQ(id.slurm_job_id, "4213");
  EXPECT_EQ(id.container_id, "");
  EXPECT_EQ(id.pod_uid, "");
  // The batch and extern steps; several slurmd on one host (the node name escaped by systemd).
  EXPECT_EQ(parse_cgroup_identity("0::/system.slice/slurmstepd.scope/job_17/step_batch/user/task_0").slurm_job_id,
            "17");
  EXPECT_EQ(parse_cgroup_identity("0::/system.slice/slurmstepd.scope/job_17/step_extern/slurm").slurm_job_id, "17");
  EXPECT_EQ(parse_cgroup_identity("0::/system.slice/gpu\\x2dnode\\x2d01_slurmstepd.scope/job_99/step_2/user/task_1\n")
                .slurm_job_id,
            "99");
}

TEST(CgroupIdentity, SlurmCgroupV1) {
  const std::string path = "/slurm/uid_1000/job_512/step_3/task_0";
  const std::string text =
      "12:memory:" + path + "\n4:devices:" + path + "\n1:name=systemd:/system.slice/slurmd.service\n";
  EXPECT_EQ(parse_cgroup_identity(text).slurm_job_id, "512");
  EXPECT_EQ(parse_cgroup_identity("7:freezer:/slurm_node7/uid_0/job_8/step_batch\n").slurm_job_id, "8");
}

TEST(CgroupIdentity, SlurmJobInAContainerKeepsBoth) {
  // A containerized step (e.g. enroot/pyxis under Slurm, or a pod whose cgroup sits below a step).
  const std::string text =
      std::string("0::/system.slice/slurmstepd.scope/job_301/step_0/user/docker-") + kContainerd + ".scope\n";
  const auto id = parse_cgroup_identity(text);
  EXPECT_EQ(id.slurm_job_id, "301");
  EXPECT_EQ(id.container_id, kContainerd);
}

TEST(CgroupIdentity, CriOAndEscapedSliceNames) {
  // CRI-O with the systemd driver; a pod UID in a slice name with systemd's escapes around it.
  const std::string crio = std::string("0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod") +
                           "0c4f2a8e_9d5b_4c61_8f0e_2b7d1a3c5e9f.slice/crio-" + kContainerd + ".scope\n";
  const auto id = parse_cgroup_identity(crio);
  EXPECT_EQ(id.container_id, kContainerd);
  EXPECT_EQ(id.pod_uid, kPodUid);
  EXPECT_EQ(id.slurm_job_id, "");
  const auto user = parse_cgroup_identity(
      "0::/user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome\\x2dterminal\\x2dserver.scope\n");
  EXPECT_EQ(user.container_id, "");
  EXPECT_EQ(user.slurm_job_id, "");
}

TEST(CgroupIdentity, SlurmNearMissesHaveNoJob) {
  for (const char* text :
       {"0::/system.slice/myjob.scope/job_12/step_0\n",  // no Slurm root above it
        "0::/system.slice/slurmstepd.scope/job_/step_0\n", "0::/system.slice/slurmstepd.scope/job_12x/step_0\n",
        "0::/system.slice/slurmstepd.scope/system\n", "0::/job_5\n", "5:cpu:/slurmd/job_5\n",
        // hostile: a label's closing quote and a new sample in the path
        "0::/system.slice/slurmstepd.scope/job_5\"} 1\nfake_metric 2/step_0\n"}) {
    EXPECT_EQ(parse_cgroup_identity(text).slurm_job_id, "") << text;
  }
}

TEST(CgroupIdentity, PlainHostProcessesAndNearMissesHaveNone) {
  for (const std::string& text :
       {std::string("0::/user.slice/user-1000.slice/session-3.scope\n"),
        std::string("0::/system.slice/docker-") + std::string(63, 'a') + ".scope\n",
        std::string("0::/system.slice/docker-") + std::string(65, 'a') + ".scope\n",
        std::string("0::/kubepods/podnot-a-uid/x\n"), std::string("garbage without colons"), std::string()}) {
    const auto id = parse_cgroup_identity(text);
    EXPECT_EQ(id.container_id, "") << text;
    EXPECT_EQ(id.pod_uid, "") << text;
  }
}

TEST_F(FakeProc, CgroupIdentityOfAProcess) {
  add(42, "python3", 'S', 1, 42);
  std::ofstream(root_.file("42/cgroup")) << "0::/system.slice/docker-" << kContainerd << ".scope\n";
  EXPECT_EQ(process_cgroup_identity(42, root_.str()).container_id, kContainerd);
  EXPECT_EQ(process_cgroup_identity(43, root_.str()).container_id, "");  // no such process
}

}  // namespace
}  // namespace gpudoc::core
