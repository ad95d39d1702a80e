// gpudoc slice and gpudoc slice list end to end, on the fake CUDA driver: bad limits and no driver
// give their exit codes with the reason, the job's exit status passes through, the job's
// allocations meet the cap, a running slice is listed with its processes, and with an MPS control
// daemon the job gets MPS's client limits instead of the preload.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.hpp"
#include "support/temp_dir.hpp"

namespace {

using gpudoc::testing::run_shell;
using gpudoc::testing::TempDir;

// gpudoc with the fake driver first on the library path and a private temporary folder (so `slice
// list` sees this test's slices only).
std::string gpudoc(const TempDir& tmp, const std::string& args, const std::string& env = "") {
  return "env -u CUDA_MPS_PIPE_DIRECTORY -u CUDA_VISIBLE_DEVICES " + env + " TMPDIR=" + tmp.str() +
         " LD_LIBRARY_PATH=" + GPUDOC_FAKE_CUDA_DIR + " " + gpudoc::testing::gpudoc_binary() + " " + args;
}

TEST(CliSlice, BadLimitsAreUsageErrorsThatSayWhy) {
  TempDir tmp("gpudoc-clislice");
  const struct {
    const char* args;
    const char* says;
  } cases[] = {
      {"slice --mem 0 -- true", "--mem 0: must be more than zero"},
      {"slice --mem 4Q -- true", "--mem 4Q: unknown unit"},
      {"slice --mem lots -- true", "--mem lots: not a size"},
      {"slice --mem 100G -- true", "--mem 100G: more than the GPU's 80.0 GiB"},
      {"slice --sm 0 -- true", "--sm 0: must be between 1 and 100"},
      {"slice --sm 30x -- true", "--sm 30x: not a percentage"},
      {"slice --mem 1G --pcie fast -- true", "--pcie fast: not a rate"},
      {"slice -- true", "give a limit"},
      {"slice --mem 1G", "give the command to run after --"},
  };
  for (const auto& c : cases) {
    const auto r = run_shell(gpudoc(tmp, c.args) + " 2>&1");
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << c.args << "\n" << r.output;
  }
}

TEST(CliSlice, NoCudaDriverIsAnEnvironmentError) {
  TempDir tmp("gpudoc-clislice");
  const auto r = run_shell("GPUDOC_CUDA_DRIVER=" + tmp.file("no-libcuda.so.1") + " " +
                           gpudoc(tmp, "slice --mem 1G -- true") + " 2>&1");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("cannot load the CUDA driver"), std::string::npos) << r.output;
}

TEST(CliSlice, TheJobsExitStatusPassesThrough) {
  TempDir tmp("gpudoc-clislice");
  EXPECT_EQ(run_shell(gpudoc(tmp, "slice -q --mem 1G -- sh -c 'exit 7'")).exit_code, 7);
  EXPECT_EQ(run_shell(gpudoc(tmp, "slice -q --mem 1G -- sh -c 'kill -TERM $$'")).exit_code, 128 + SIGTERM);
}

TEST(CliSlice, AComputeCapWithoutMpsSaysWhatItDoesNotPromise) {
  // Launch throttling keeps slices apart from each other, not from a process outside any slice, and
  // bounds no neighbour's tail latency (docs/results/slice.md): the user is told before the job
  // starts, and pointed to MPS.
  TempDir tmp("gpudoc-clislice");
  const auto r = run_shell(gpudoc(tmp, "slice --sm 30 -- true 2>&1"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("a process outside any slice is not kept apart"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("start an MPS control daemon"), std::string::npos) << r.output;
  EXPECT_EQ(run_shell(gpudoc(tmp, "slice -q --sm 30 -- true 2>&1")).output, "");
}

TEST(CliSlice, ACopyRateAloneIsALimit) {
  // --pcie without --mem or --sm: the job runs with its host<->device copies held to the rate (ten
  // copies of 100 kB at 4 MiB/s: ~0.19 s after the 50 ms burst), device-to-device copies free. The
  // lower bound is the limit (a loaded machine only makes the copies slower); the upper one stops a
  // limit far off the rate asked (a unit wrong by 1000x), not a slow machine.
  TempDir tmp("gpudoc-clislice");
  const auto r = run_shell(gpudoc(tmp, "slice -q --pcie 4M -- " + std::string(GPUDOC_SLICE_PROBE) + " copy 100000"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto at = r.output.find("copy name=cuMemcpyHtoD flags=0 seconds=");
  ASSERT_NE(at, std::string::npos) << r.output;
  const double seconds = std::stod(r.output.substr(at + std::string("copy name=cuMemcpyHtoD flags=0 seconds=").size()));
  EXPECT_GT(seconds, 0.12) << r.output;
  EXPECT_LT(seconds, 3.0) << r.output;  // hang guard: normally ~0.19 s; 15x margin
}

TEST(CliSlice, TheJobsAllocationsMeetTheCapAndItsMemoryQueriesShowIt) {
  TempDir tmp("gpudoc-clislice");
  const std::string probe = GPUDOC_SLICE_PROBE;
  const auto info = run_shell(gpudoc(tmp, "slice -q --mem 64M -- " + probe + " info"));
  EXPECT_EQ(info.exit_code, 0);
  EXPECT_NE(info.output.find("total=67108864 device_total=67108864"), std::string::npos) << info.output;
  const auto over = run_shell(gpudoc(tmp, "slice -q --mem 64M -- " + probe + " oom 68157440"));
  EXPECT_EQ(over.exit_code, 0);
  EXPECT_NE(over.output.find("oom create proc_self rc=2"), std::string::npos) << over.output;
  EXPECT_EQ(over.output.find("rc=0"), std::string::npos) << over.output;
}

TEST(CliSlice, ListShowsARunningSliceItsProcessesAndUse) {
  TempDir tmp("gpudoc-clislice");
  const pid_t pid = fork();
  if (pid == 0) {
    const std::string cmd =
        "exec " + gpudoc(tmp, "slice -q --mem 1G --name infer -- ") + GPUDOC_SLICE_PROBE + " hold 5000000 >/dev/null";
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  nlohmann::json doc;
  for (int i = 0; i < 100; ++i) {  // until the job has allocated
    doc = nlohmann::json::parse(run_shell(gpudoc(tmp, "slice list --json")).output, nullptr, false);
    if (!doc.is_discarded() && doc["slices"].size() == 1 && doc["slices"][0]["memory_used_bytes"] == 5000000) break;
    usleep(50 * 1000);
  }
  kill(pid, SIGTERM);  // gpudoc forwards it to the job and ends with it
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_FALSE(doc.is_discarded());
  ASSERT_EQ(doc["slices"].size(), 1U) << doc.dump();
  const auto& s = doc["slices"][0];
  EXPECT_EQ(s["name"], "infer");
  EXPECT_EQ(s["mechanism"], "interception");
  EXPECT_EQ(s["memory_limit_bytes"], 1ULL << 30);
  EXPECT_EQ(s["memory_used_bytes"], 5000000);
  ASSERT_EQ(s["processes"].size(), 1U);
  EXPECT_EQ(s["processes"][0]["used_bytes"], 5000000);
  EXPECT_TRUE(s["running"].get<bool>());
  EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 128 + SIGTERM);
  const auto after = run_shell(gpudoc(tmp, "slice list"));
  EXPECT_NE(after.output.find("no slices run now"), std::string::npos) << after.output;
}

// --sm slices that run at once get parts of the period apart, also when started at the same instant
// (the choice is made under a lock): a third, started after, takes what is left; slice list shows
// where each window starts.
TEST(CliSlice, ComputeCapsOfSlicesRunningAtOnceGetPartsOfThePeriodApart) {
  TempDir tmp("gpudoc-clislice");
  std::vector<pid_t> jobs;
  auto start = [&](const std::string& flags) {
    const pid_t pid = fork();
    if (pid == 0) {
      const std::string cmd =
          "exec " + gpudoc(tmp, "slice -q " + flags + " -- ") + GPUDOC_SLICE_PROBE + " hold 1000 >/dev/null";
      execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    jobs.push_back(pid);
  };
  auto listed = [&](std::size_t n) {
    nlohmann::json doc;
    for (int i = 0; i < 100; ++i) {  // until n slices show
      doc = nlohmann::json::parse(run_shell(gpudoc(tmp, "slice list --json")).output, nullptr, false);
      if (!doc.is_discarded() && doc["slices"].size() == n) break;
      usleep(50 * 1000);
    }
    return doc;
  };
  start("--sm 30 --name a");
  start("--sm 60 --name b");  // at the same instant
  const auto two = listed(2);
  start("--sm 10 --name c");
  const auto doc = listed(3);
  const auto table = run_shell(gpudoc(tmp, "slice list")).output;
  for (const pid_t pid : jobs) kill(pid, SIGTERM);
  for (const pid_t pid : jobs) waitpid(pid, nullptr, 0);
  ASSERT_EQ(two["slices"].size(), 2U) << two.dump();
  ASSERT_EQ(doc["slices"].size(), 3U) << doc.dump();
  // [start, start + cap) of each, in percent of the period: a and b in either order, c in the last 10 %
  std::map<std::string, std::pair<double, double>> part;
  for (const auto& s : doc["slices"])
    part[s["name"]] = {s["sm_window_start_percent"].get<double>(), s["sm_percent"].get<double>()};
  const auto [a, b] = std::pair{part["a"], part["b"]};
  EXPECT_TRUE((a.first == 0 && b.first == 30) || (b.first == 0 && a.first == 60)) << doc.dump();
  EXPECT_EQ(part["c"].first, 90.0) << doc.dump();
  EXPECT_NE(table.find("10 % (window from 90 %)"), std::string::npos) << table;
}

// CUDA 13's control daemon listens on a Unix socket; older ones on a FIFO.
void make_socket(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(path.size(), sizeof(addr.sun_path));
  std::memcpy(addr.sun_path, path.c_str(), path.size());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  close(fd);
}

TEST(CliSlice, WithAnMpsDaemonTheJobGetsMpsClientLimitsInsteadOfThePreload) {
  TempDir tmp("gpudoc-clislice");
  ASSERT_EQ(mkfifo(tmp.file("control").c_str(), 0600), 0);
  const auto r = run_shell(gpudoc(tmp, "slice --mem 2G --sm 30 -- ", "CUDA_MPS_PIPE_DIRECTORY=" + tmp.str()) +
                           "sh -c 'echo $CUDA_MPS_ACTIVE_THREAD_PERCENTAGE $CUDA_MPS_PINNED_DEVICE_MEM_LIMIT "
                           "preload=$LD_PRELOAD' 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("30 0=2048MB preload=\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("an MPS control daemon runs"), std::string::npos) << r.output;

  TempDir sock("gpudoc-clislice");
  make_socket(sock.file("control"));
  const auto s = run_shell(gpudoc(sock, "slice --mem 2G -- ", "CUDA_MPS_PIPE_DIRECTORY=" + sock.str()) +
                           "sh -c 'echo $CUDA_MPS_PINNED_DEVICE_MEM_LIMIT preload=$LD_PRELOAD' 2>&1");
  EXPECT_NE(s.output.find("0=2048MB preload=\n"), std::string::npos) << s.output;
}

}  // namespace
