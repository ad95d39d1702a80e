// tune::launch: the job with changes on, and the lines a person runs to apply them.
#include "tune/launch.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpudoc::tune {
namespace {

using ::testing::ElementsAre;

Change env_change(const std::string& id, const std::string& entry) {
  Change c{.id = id, .knob = id};
  c.env = {entry};
  return c;
}

TEST(PythonCommand, ScriptModuleAndInterpreterOptions) {
  std::string why;
  auto a = python_command({"/usr/bin/python3.11", "-u", "-X", "dev", "train.py", "--lr", "1"}, &why);
  ASSERT_TRUE(a);
  EXPECT_THAT(a->interpreter, ElementsAre("/usr/bin/python3.11", "-u", "-X", "dev"));
  EXPECT_THAT(a->program, ElementsAre("train.py", "--lr", "1"));
  auto m = python_command({"python", "-m", "pkg.train", "-v"}, &why);
  ASSERT_TRUE(m);
  EXPECT_THAT(m->program, ElementsAre("-m", "pkg.train", "-v"));
}

TEST(PythonCommand, WhatTheShimCannotStartIsSaid) {
  std::string why;
  EXPECT_FALSE(python_command({"torchrun", "--nproc_per_node=2", "train.py"}, &why));
  EXPECT_NE(why.find("torchrun"), std::string::npos);
  EXPECT_FALSE(python_command({"python3", "-c", "print(1)"}, &why));
  EXPECT_NE(why.find("-c"), std::string::npos);
  EXPECT_FALSE(python_command({"python3"}, &why));
  EXPECT_FALSE(python_command({"python3x", "a.py"}, &why));
}

TEST(Launch, EnvironmentCpusAndTheShim) {
  Change loader{.id = "loader_workers", .knob = "loader", .layer = Layer::kFramework};
  loader.patches = {"workers=8", "persistent_workers"};
  Change pin{.id = "pin", .knob = "pin", .layer = Layer::kFramework};
  pin.patches = {"pin_memory", "workers=4"};
  Change bind{.id = "cpu_bind_node", .knob = "cpu_bind"};
  bind.cpus = {0, 1, 2, 3};
  const Launch l = launch_with({"python3", "train.py", "--x"},
                               {env_change("omp", "OMP_NUM_THREADS=1"), bind, loader, pin}, "/priv/gpudoc_tune.py");
  EXPECT_THAT(l.argv, ElementsAre("python3", "/priv/gpudoc_tune.py", "--patch",
                                  "workers=4,persistent_workers,pin_memory", "--", "train.py", "--x"));
  EXPECT_THAT(l.env, ElementsAre("NCCL_NVLS_ENABLE=0", "OMP_NUM_THREADS=1"));
  EXPECT_THAT(l.cpus, ElementsAre(0, 1, 2, 3));
}

TEST(Launch, TheUnchangedJobIsTheCommandWithMulticastOff) {
  const Launch l = launch_with({"./job", "a b"}, {}, "/priv/shim.py");
  EXPECT_THAT(l.argv, ElementsAre("./job", "a b"));
  EXPECT_THAT(l.env, ElementsAre("NCCL_NVLS_ENABLE=0"));
  EXPECT_TRUE(l.cpus.empty());
}

TEST(ApplyLines, ExportsThenTheLauncherLineShellQuoted) {
  Change bind{.id = "cpu_bind_node", .knob = "cpu_bind"};
  bind.cpus = {8, 9, 10, 11};
  Change loader{.id = "loader_workers", .knob = "loader", .layer = Layer::kFramework};
  loader.patches = {"workers=8"};
  const auto lines = apply_lines({"python3", "train.py", "--name", "it's mine"},
                                 {env_change("a", "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"), bind, loader});
  EXPECT_THAT(lines, ElementsAre("export NCCL_NVLS_ENABLE=0", "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
                                 "taskset -c 8-11 python3 -m gpudoc.tune --patch workers=8 -- train.py --name "
                                 "'it'\\''s mine'"));
}

TEST(LauncherArgv, OneCommandForABaseline) {
  const auto argv = launcher_argv({"python3", "t.py"}, {env_change("o", "OMP_NUM_THREADS=4")});
  EXPECT_THAT(argv, ElementsAre("env", "NCCL_NVLS_ENABLE=0", "OMP_NUM_THREADS=4", "python3", "t.py"));
}

TEST(ShellQuote, SafeWordsBareOthersQuoted) {
  EXPECT_EQ(shell_quote("train.py"), "train.py");
  EXPECT_EQ(shell_quote("--lr=0.1"), "--lr=0.1");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("$(rm -rf /)"), "'$(rm -rf /)'");
  EXPECT_EQ(shell_line({"echo", "it's"}), "echo 'it'\\''s'");
}

}  // namespace
}  // namespace gpudoc::tune
