// libgpudoc_slice.so preloaded into a stand-in CUDA program (slice_probe) over the fake driver:
// every allocation path, reached every way a program finds the driver, is charged to the slice and
// given back; an allocation over the cap fails with CUDA_ERROR_OUT_OF_MEMORY; cuMemGetInfo and
// cuDeviceTotalMem show the slice; forks and processes killed holding memory leave the
// accounting right.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "slice/inject/shared_state.hpp"
#include "support/temp_dir.hpp"

namespace {

constexpr std::uint64_t kMiB = 1ULL << 20;
constexpr std::uint64_t kGiB = 1ULL << 30;

std::string environment(const std::string& extra) {
  return std::string("env LD_LIBRARY_PATH=") + GPUDOC_FAKE_CUDA_DIR + " LD_PRELOAD=" + GPUDOC_SLICE_LIBRARY + " " +
         extra + " ";
}

// Runs the probe and returns its stdout lines.
std::vector<std::string> probe(const std::string& env, const std::string& args, const std::string& err = "/dev/null") {
  const std::string command = "exec " + environment(env) + GPUDOC_SLICE_PROBE + " " + args + " 2>" + err;
  FILE* p = popen(command.c_str(), "r");
  EXPECT_NE(p, nullptr);
  std::vector<std::string> lines;
  char buf[512];
  while (p != nullptr && fgets(buf, sizeof(buf), p) != nullptr) {
    std::string line = buf;
    if (!line.empty() && line.back() == '\n') line.pop_back();
    lines.push_back(line);
  }
  if (p != nullptr) {
    EXPECT_EQ(pclose(p), 0) << command;
  }
  return lines;
}

// "a b k=v k2=v2" -> {"k": "v", ...}
std::map<std::string, std::string> fields(const std::string& line) {
  std::map<std::string, std::string> out;
  std::istringstream in(line);
  std::string word;
  while (in >> word) {
    const auto eq = word.find('=');
    if (eq != std::string::npos) out[word.substr(0, eq)] = word.substr(eq + 1);
  }
  return out;
}

TEST(SliceInject, EveryAllocationPathIsChargedAndGivenBackHoweverTheFunctionWasFound) {
  const auto lines = probe("GPUDOC_SLICE_MEM_BYTES=" + std::to_string(kGiB), "paths");
  ASSERT_EQ(lines.size(), 10U * 5U);  // 10 paths x direct, dlsym, cuGetProcAddress v1, _v2, _v2 via itself
  for (const std::string& line : lines) {
    const auto f = fields(line);
    EXPECT_EQ(f.at("rc"), "0") << line;
    EXPECT_EQ(f.at("driver"), std::to_string(kMiB)) << line;
    EXPECT_EQ(f.at("charged"), f.at("driver")) << "not intercepted: " << line;
    EXPECT_EQ(f.at("free_rc"), "0") << line;
    EXPECT_EQ(f.at("after_free"), "0") << "not given back: " << line;
  }
}

TEST(SliceInject, WithoutASliceTheLibraryPassesEverythingThrough) {
  const auto lines = probe("", "paths");
  ASSERT_EQ(lines.size(), 50U);
  for (const std::string& line : lines) {
    EXPECT_EQ(fields(line).at("driver"), std::to_string(kMiB)) << line;
    EXPECT_EQ(fields(line).at("charged"), std::to_string(kMiB)) << line;  // the fake's own view
  }
}

TEST(SliceInject, AnAllocationOverTheCapFailsWithOutOfMemoryOnEveryPath) {
  const auto lines = probe("GPUDOC_SLICE_MEM_BYTES=" + std::to_string(64 * kMiB), "oom " + std::to_string(65 * kMiB));
  ASSERT_EQ(lines.size(), 50U);
  for (const std::string& line : lines) EXPECT_EQ(fields(line).at("rc"), "2") << line;  // CUDA_ERROR_OUT_OF_MEMORY
  const auto fits = probe("GPUDOC_SLICE_MEM_BYTES=" + std::to_string(64 * kMiB), "oom " + std::to_string(64 * kMiB));
  for (const std::string& line : fits) EXPECT_EQ(fields(line).at("rc"), "0") << line;
}

TEST(SliceInject, MemGetInfoAndDeviceTotalMemShowTheSlice) {
  const auto sliced = probe("GPUDOC_SLICE_MEM_BYTES=" + std::to_string(3 * kGiB), "info");
  ASSERT_EQ(sliced.size(), 1U);
  const auto f = fields(sliced[0]);
  EXPECT_EQ(f.at("rc"), "0,0");
  EXPECT_EQ(f.at("total"), std::to_string(3 * kGiB));
  EXPECT_EQ(f.at("free"), std::to_string(3 * kGiB));
  EXPECT_EQ(f.at("device_total"), std::to_string(3 * kGiB));
  const auto whole = fields(probe("", "info").at(0));
  EXPECT_EQ(whole.at("total"), std::to_string(80 * kGiB));
}

TEST(SliceInject, AForkedChildChargesTheSameSliceAndItsBytesComeBackWhenItDies) {
  const auto lines = probe("GPUDOC_SLICE_MEM_BYTES=" + std::to_string(100 * kMiB), "fork " + std::to_string(30 * kMiB));
  ASSERT_EQ(lines.size(), 3U);
  EXPECT_EQ(fields(lines[0]).at("used"), std::to_string(30 * kMiB)) << lines[0];
  EXPECT_EQ(fields(lines[1]).at("rc"), "0") << lines[1];
  EXPECT_EQ(fields(lines[1]).at("used"), std::to_string(60 * kMiB)) << "the child shares the budget: " << lines[1];
  EXPECT_EQ(fields(lines[2]).at("rc"), "0") << "the dead child's 30 MiB were not given back: " << lines[2];
  EXPECT_EQ(fields(lines[2]).at("used"), std::to_string(100 * kMiB)) << lines[2];
}

TEST(SliceInject, AProcessKilledHoldingMemoryLeavesItsBytesToTheSlice) {
  gpudoc::testing::TempDir dir("gpudoc-slicetest");
  std::string error;
  gpudoc::slice::Limits limits;
  limits.memory_bytes = 100 * kMiB;
  auto state = gpudoc::slice::SharedState::create(dir.file("state"), limits, "t", "probe", &error);
  ASSERT_TRUE(state.has_value()) << error;
  const std::string command = "exec " + environment("GPUDOC_SLICE_STATE=" + dir.file("state")) + GPUDOC_SLICE_PROBE +
                              " hold " + std::to_string(70 * kMiB);
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  char buf[64] = {};
  ASSERT_GT(read(out[0], buf, sizeof(buf) - 1), 0);
  EXPECT_EQ(std::string(buf), "held rc=0\n");
  EXPECT_EQ(state->used_bytes(), 70 * kMiB);
  EXPECT_EQ(state->snapshot().processes.size(), 1U);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  close(out[0]);
  // Another process of the slice now gets the whole cap.
  const auto lines = probe("GPUDOC_SLICE_STATE=" + dir.file("state"), "oom " + std::to_string(100 * kMiB));
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(fields(lines[0]).at("rc"), "0") << lines[0];
  EXPECT_EQ(state->snapshot().reaped_bytes, 70 * kMiB);
}

TEST(SliceInject, AComputeCapWithoutNvmlSaysSoOnceAndLetsEveryLaunchThrough) {
  if (dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL) != nullptr) GTEST_SKIP() << "NVML is present here";
  gpudoc::testing::TempDir dir("gpudoc-slicetest");
  std::string error;
  gpudoc::slice::Limits limits;
  limits.sm_percent = 30;
  auto state = gpudoc::slice::SharedState::create(dir.file("state"), limits, "t", "probe", &error);
  ASSERT_TRUE(state.has_value()) << error;
  const auto lines = probe("GPUDOC_SLICE_STATE=" + dir.file("state"), "launch 1000", dir.file("stderr"));
  ASSERT_EQ(lines.size(), 1U);
  EXPECT_EQ(lines[0], "launched=4000");
  FILE* f = fopen(dir.file("stderr").c_str(), "r");
  ASSERT_NE(f, nullptr);
  char buf[512] = {};
  const std::size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  const std::string text(buf, n);
  EXPECT_NE(text.find("the compute cap needs NVML"), std::string::npos) << text;
  EXPECT_EQ(text.find("gpudoc slice:"), text.rfind("gpudoc slice:")) << "said more than once: " << text;
}

// slice_probe's `copy 10000000` (ten copies of 10 MB through each copy entry point, as
// cuGetProcAddress hands them out, plain and per-thread) in a slice with `limits`: its 14 lines, and
// the bytes the slice counted against --pcie.
struct CopyRun {
  std::vector<std::string> lines;
  std::uint64_t counted = 0;
};
CopyRun copy_in_slice(const gpudoc::slice::Limits& limits) {
  gpudoc::testing::TempDir dir("gpudoc-slicetest");
  std::string error;
  auto state = gpudoc::slice::SharedState::create(dir.file("state"), limits, "t", "probe", &error);
  EXPECT_TRUE(state.has_value()) << error;
  if (!state) return {};
  CopyRun run;
  run.lines = probe("GPUDOC_SLICE_STATE=" + dir.file("state"), "copy 10000000");
  run.counted = state->snapshot().copy_bytes;
  return run;
}

// At a cap of 200 MB/s each ten host<->device copies take ~0.45 s (0.5 s less the gate's 50 ms
// burst); device-to-device copies pass at once and are not counted. The counted bytes are exact;
// the seconds bound the rate from below (a loaded machine only slows the copies), and from above
// only as guards, each far from the other case (the fake driver's copies move nothing: ~1 ms).
TEST(SliceInject, HostDeviceCopiesAreHeldToTheSlicesRateEveryWayTheyAreFound) {
  gpudoc::slice::Limits limits;
  limits.pcie_bytes_per_second = 200'000'000;
  const CopyRun run = copy_in_slice(limits);
  ASSERT_EQ(run.lines.size(), 14U);
  for (const auto& line : run.lines) {
    const auto f = fields(line);
    EXPECT_EQ(f.at("driver_bytes"), "100000000") << line;  // every copy reached the driver, whole
    const double seconds = std::stod(f.at("seconds"));
    if (f.at("name").find("_d2d") != std::string::npos) {
      // Not held: `counted` below leaves them out. hang guard: normally ~1 ms; 1000x+ margin
      EXPECT_LT(seconds, 5.0) << line;
    } else {
      EXPECT_GT(seconds, 0.35) << line;
      EXPECT_LT(seconds, 5.0) << line;  // hang guard: normally ~0.45 s; 10x+ margin
    }
  }
  EXPECT_EQ(run.counted, 12U * 100'000'000U);  // the two device-to-device tens not counted
}

TEST(SliceInject, WithoutACopyCapCopiesPassAtOnce) {
  gpudoc::slice::Limits limits;
  limits.memory_bytes = kGiB;
  const CopyRun run = copy_in_slice(limits);
  ASSERT_EQ(run.lines.size(), 14U);
  for (const auto& line : run.lines) {
    const auto f = fields(line);
    EXPECT_EQ(f.at("driver_bytes"), "100000000") << line;
    // hang guard: normally ~1 ms (nothing counted, so nothing held: `counted` below); 1000x+ margin
    EXPECT_LT(std::stod(f.at("seconds")), 5.0) << line;
  }
  EXPECT_EQ(run.counted, 0U);
}

}  // namespace
