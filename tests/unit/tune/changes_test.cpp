// tune::pick: which changes a diagnosis and the machine point to, and why the others are not tried.
#include "tune/changes.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

namespace gpudoc::tune {
namespace {

using ::testing::HasSubstr;

Evidence machine(std::vector<std::string> findings) {
  Evidence e;
  e.diagnosed = true;
  e.findings = std::move(findings);
  e.gpus = 1;
  e.gpus_used = 1;
  for (int c = 0; c < 16; ++c) e.allowed_cpus.push_back(c);
  e.python = true;
  return e;
}

std::vector<std::string> ids(const Picked& p) {
  std::vector<std::string> out;
  for (const auto& c : p.changes) out.push_back(c.id);
  return out;
}

const NotTried* not_tried(const Picked& p, const std::string& id) {
  for (const auto& n : p.not_tried)
    if (n.id == id) return &n;
  return nullptr;
}

TEST(Pick, AStarvedJobGetsTheLoaderAndTheHostsThreads) {
  const Picked p = pick(machine({"sawtooth"}), {});
  EXPECT_THAT(ids(p),
              ::testing::ElementsAre("omp_threads_1", "omp_threads_8", "loader_workers", "loader_workers_pinned"));
  // the cures first within their layer, the layers in order
  EXPECT_EQ(p.changes[2].layer, Layer::kFramework);
  EXPECT_EQ(p.changes[2].priority, 0);
  EXPECT_EQ(p.changes[0].priority, 1);
  EXPECT_THAT(p.changes[3].patches,
              ::testing::ElementsAre("workers=8", "persistent_workers", "pin_memory", "prefetch=4"));
  ASSERT_NE(not_tried(p, "tf32"), nullptr);
  EXPECT_THAT(not_tried(p, "tf32")->why, HasSubstr("does not point to it"));
}

TEST(Pick, ALaunchBoundJobGetsCudaGraphsThroughCompile) {
  Evidence e = machine({"plateau"});
  e.plateau_kind = "launch_bound";
  const auto got = ids(pick(e, {}));
  EXPECT_NE(std::find(got.begin(), got.end(), "compile_reduce_overhead"), got.end());
  EXPECT_EQ(std::find(got.begin(), got.end(), "loader_workers"), got.end());
}

// The negative control's diagnosis: only what speeds up a busy GPU, and numerics flagged.
TEST(Pick, AHealthyJobGetsOnlyKernelSideChangesAndNumericsAreMarked) {
  const Picked p = pick(machine({"healthy"}), {});
  for (const auto& c : p.changes) EXPECT_EQ(c.layer, Layer::kFramework) << c.id;
  const auto tf32 = std::find_if(p.changes.begin(), p.changes.end(), [](const Change& c) { return c.id == "tf32"; });
  ASSERT_NE(tf32, p.changes.end());
  EXPECT_TRUE(tf32->numerics);
}

TEST(Pick, OnlyNamesChangesWhateverTheDiagnosisSays) {
  Evidence e = machine({});
  e.diagnosed = false;
  e.why_not_diagnosed = "no GPU";
  const Picked p = pick(e, {.only = {"omp_threads", "alloc_expandable"}});
  EXPECT_THAT(ids(p), ::testing::ElementsAre("omp_threads_1", "omp_threads_8", "alloc_expandable"));
  EXPECT_THAT(p.changes[0].why, HasSubstr("named by --only"));
  ASSERT_NE(not_tried(p, "loader_workers"), nullptr);
  EXPECT_EQ(not_tried(p, "loader_workers")->why, "not named by --only");
}

TEST(Pick, TheMachineRulesOutWhatCannotApply) {
  Evidence e = machine({"sawtooth", "pulse"});
  e.python = false;
  e.why_not_python = "the command starts with torchrun";
  e.env["OMP_NUM_THREADS"] = "1";
  const Picked p = pick(e, {.only = {"nccl_algo", "loader", "omp_threads_1"}});
  EXPECT_TRUE(p.changes.empty());
  EXPECT_THAT(not_tried(p, "nccl_algo_ring")->why, HasSubstr("one GPU"));
  EXPECT_EQ(not_tried(p, "loader_workers")->why, "the command starts with torchrun");
  EXPECT_THAT(not_tried(p, "omp_threads_1")->why, HasSubstr("already 1"));
  EXPECT_THAT(not_tried(p, "cpu_bind_node")->why, HasSubstr("one NUMA node"));
}

TEST(Pick, TwoGpusWaitingInCommunicationGetNcclAndOverlapQueues) {
  Evidence e = machine({"pulse"});
  e.gpus = 2;
  e.gpus_used = 2;
  e.nvlink = false;
  const Picked p = pick(e, {});
  const auto got = ids(p);
  for (const char* id :
       {"nccl_algo_ring", "nccl_algo_tree", "nccl_proto_simple", "nccl_channels_16", "device_max_connections_32"})
    EXPECT_NE(std::find(got.begin(), got.end(), id), got.end()) << id;
  EXPECT_THAT(not_tried(p, "nccl_proto_ll128")->why, HasSubstr("NVLink"));
}

// A job the diagnosis saw on one GPU of a two-GPU machine has no communication to tune.
TEST(Pick, NcclOnlyForAJobOnTwoOrMoreGpus) {
  Evidence e = machine({"pulse"});
  e.gpus = 2;
  e.gpus_used = 1;
  const Picked p = pick(e, {.only = {"nccl_algo"}});
  EXPECT_TRUE(p.changes.empty());
  EXPECT_THAT(not_tried(p, "nccl_algo_tree")->why, HasSubstr("the job works on one GPU"));
}

TEST(Pick, CpuBindingOnlyWhereTheJobCanRunOnAnotherNode) {
  Evidence e = machine({"sawtooth"});
  e.numa_nodes = 2;
  e.gpu_numa_node = 1;
  e.gpu_node_cpus = {8, 9, 10, 11, 12, 13, 14, 15};
  const Picked p = pick(e, {});
  ASSERT_FALSE(p.changes.empty());
  EXPECT_EQ(p.changes[0].id, "cpu_bind_node");
  EXPECT_THAT(p.changes[0].cpus, ::testing::ElementsAre(8, 9, 10, 11, 12, 13, 14, 15));
  EXPECT_THAT(p.changes[0].what, HasSubstr("8-15"));
}

TEST(Pick, AdviceIsNeverAChange) {
  Evidence e = machine({"healthy"});
  e.governors = {{"powersave", 16}};
  e.thp = "always";
  e.sysctls = {{"vm.swappiness", "60"}};
  const Picked p = pick(e, {});
  ASSERT_EQ(p.advice.size(), 3u);
  EXPECT_EQ(p.advice[0].id, "cpu_governor");
  EXPECT_EQ(p.advice[1].id, "thp");
  EXPECT_EQ(p.advice[2].id, "sysctl:vm.swappiness");
  for (const auto& c : p.changes) EXPECT_TRUE(c.env.empty() || c.env[0].rfind("/proc", 0) != 0);
}

// Gaps faster than the sensor may be the input or the launches: both cures, and what the shim saw
// the job do rules out those it cannot use.
TEST(Pick, UnresolvedGapsPointToBothCuresAndTheShimRulesOutTheUnused) {
  Evidence e = machine({"sawtooth"});
  e.gaps_unresolved = true;
  e.seen = ShimSeen{.observed = true,
                    .torch = true,
                    .torch_version = "2.11",
                    .compile = true,
                    .dataloaders = 0,
                    .cuda_modules = 1,
                    .conv_modules = 0};
  const Picked p = pick(e, {});
  const auto got = ids(p);
  EXPECT_NE(std::find(got.begin(), got.end(), "compile_reduce_overhead"), got.end());
  EXPECT_EQ(std::find(got.begin(), got.end(), "loader_workers"), got.end());
  EXPECT_EQ(not_tried(p, "loader_workers")->why, "the job made no DataLoader in its plain run");
  EXPECT_EQ(not_tried(p, "cudnn_benchmark")->why, "no 2-D convolution in the modules the job moved to the GPU");
}

TEST(Pick, TheShimsSightRulesOutWhatCannotApplyEvenWhenNamed) {
  Evidence e = machine({"sawtooth"});
  e.seen = ShimSeen{.observed = true,
                    .torch = true,
                    .torch_version = "1.13",
                    .compile = false,
                    .dataloaders = 1,
                    .max_workers = 8,
                    .pinned = true};
  const Picked p = pick(e, {.only = {"loader", "compile"}});
  EXPECT_TRUE(p.changes.empty());
  EXPECT_EQ(not_tried(p, "loader_workers")->why, "its DataLoader already has 8 workers");
  EXPECT_EQ(not_tried(p, "loader_workers_pinned")->why, "its DataLoader already has 8 workers and pins its memory");
  EXPECT_EQ(not_tried(p, "compile_reduce_overhead")->why, "torch 1.13 has no torch.compile (2.0 or newer)");
  e.seen = ShimSeen{.observed = true};
  EXPECT_EQ(not_tried(pick(e, {}), "loader_workers")->why, "the job did not import torch in its plain run");
}

TEST(Cpulist, RangesAsTasksetWritesThem) {
  EXPECT_EQ(cpulist({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(cpulist({5}), "5");
  EXPECT_EQ(cpulist({}), "");
}

TEST(KnownNames, HasEveryKnobAndTheFixedIds) {
  const auto n = known_names();
  for (const char* id : {"loader", "loader_workers_pinned", "omp_threads", "tf32", "nccl_algo_tree", "cpu_bind_node"})
    EXPECT_NE(std::find(n.begin(), n.end(), id), n.end()) << id;
}

}  // namespace
}  // namespace gpudoc::tune
