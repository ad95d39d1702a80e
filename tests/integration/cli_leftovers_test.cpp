// What gpudoc leaves in shared and private places, end to end with the real binary: `gpudoc slice`
// leaves no lock file in the shared temporary folder; the private folder of a `baseline record`
// killed with SIGKILL is removed by the next run that makes one (and a folder of a run that still
// runs is not); a folder gpudoc may not write is reported with the real reason.
//
// GPUDOC_TEST_BINARY, when set, runs these checks against another gpudoc binary.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "cli_runner.hpp"
#include "support/temp_dir.hpp"
#include "support/unprivileged.hpp"

namespace gpudoc::testing {
namespace {

namespace fs = std::filesystem;

std::string binary() {
  const char* b = std::getenv("GPUDOC_TEST_BINARY");
  return b != nullptr && *b != '\0' ? std::string(b) : gpudoc_binary();
}

// The names in `dir`, sorted.
std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += s + " ";
  return out;
}

// ---- the slice's lock -------------------------------------------------------------------------

// gpudoc slice on the fake CUDA driver, with `tmp` as the shared temporary folder.
std::string slice(const TempDir& tmp, const std::string& args) {
  return "env -u CUDA_MPS_PIPE_DIRECTORY -u CUDA_VISIBLE_DEVICES TMPDIR=" + tmp.str() +
         " GPUDOC_SLICE_LIBRARY=" + GPUDOC_SLICE_LIBRARY + " LD_LIBRARY_PATH=" + GPUDOC_FAKE_CUDA_DIR + " " + binary() +
         " " + args;
}

TEST(Leftovers, SlicesLeaveNothingInTheSharedTemporaryFolder) {
  TempDir tmp("gpudoc-leftovers");
  ASSERT_EQ(run_shell(slice(tmp, "slice -q --sm 30 -- true")).exit_code, 0);
  EXPECT_EQ(joined(names_in(tmp.str())), "");
  // Several at once: each takes the lock in turn (their parts of the period stay apart: cli_slice)
  // and none leaves it behind.
  const std::string four = slice(tmp, "slice -q --sm 20 -- sleep 0.3");
  ASSERT_EQ(run_shell("(" + four + " & " + four + " & " + four + " & " + four + " & wait)").exit_code, 0);
  EXPECT_EQ(joined(names_in(tmp.str())), "");
}

// ---- a killed run's private folder --------------------------------------------------------------

// The gpudoc-baseline-* folders in `dir`.
std::vector<std::string> baseline_folders(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& n : names_in(dir))
    if (n.rfind("gpudoc-baseline-", 0) == 0) out.push_back(n);
  return out;
}

TEST(Leftovers, TheFolderOfAKilledBaselineRecordIsSweptByTheNextRun) {
  TempDir tmp("gpudoc-leftovers");
  const std::string store = tmp.file("store.db"), ready = tmp.file("ready");
  fs::create_directory(tmp.file("t"));
  const std::string env = "TMPDIR=" + tmp.file("t") + " GPUDOC_STORE=" + store + " ";
  // The workload says it runs (its pid, to stop it afterwards) and waits.
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c",
            (env + "exec " + binary() + " baseline record killed -- sh -c 'echo $$ > " + ready + "; sleep 30'").c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  for (int i = 0; i < 2000 && slurp(ready).empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_FALSE(slurp(ready).empty()) << "the workload never started";
  const auto left = baseline_folders(tmp.file("t"));
  ASSERT_EQ(left.size(), 1u) << joined(names_in(tmp.file("t")));
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  ::kill(-std::stoi(slurp(ready)), SIGKILL);  // the workload's own group, which SIGKILL did not reach
  ASSERT_EQ(baseline_folders(tmp.file("t")), left) << "SIGKILL leaves the folder: nothing can remove it then";

  // The next run that makes a private folder removes it; a run that still goes keeps its own.
  const std::string again = tmp.file("again");
  const pid_t running = ::fork();
  if (running == 0) {
    ::execl(
        "/bin/sh", "sh", "-c",
        (env + "exec " + binary() + " baseline record running -- sh -c 'echo $$ > " + again + "; sleep 30'").c_str(),
        static_cast<char*>(nullptr));
    ::_exit(127);
  }
  for (int i = 0; i < 2000 && slurp(again).empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_FALSE(slurp(again).empty());
  const auto now = baseline_folders(tmp.file("t"));
  EXPECT_EQ(std::count(now.begin(), now.end(), left[0]), 0) << "the killed run's folder is still there";
  EXPECT_EQ(now.size(), 1u) << joined(now);  // the running one's
  const CliRun next = run_shell(env + binary() + " baseline record next -- true 2>&1");
  EXPECT_EQ(next.exit_code, 0) << next.output;
  EXPECT_EQ(baseline_folders(tmp.file("t")), now) << "the folder of a run that still goes was removed";
  ::kill(running, SIGTERM);  // stops its workload's group, stores it marked interrupted
  ::waitpid(running, nullptr, 0);
  EXPECT_EQ(joined(baseline_folders(tmp.file("t"))), "");
}

// ---- a folder gpudoc may not write --------------------------------------------------------------

// As a user without privileges (nobody, when the tests run as root): the store exists and may be
// written, but its folder may not (SQLite's write-ahead log goes there). The message gives the
// folder's real errno, not one left over from a later call.
TEST(Leftovers, AStoreInAFolderThatCannotBeWrittenSaysWhy) {
  TempDir tmp("gpudoc-leftovers");
  const std::string folder = tmp.file("ro"), store = tmp.file("ro/s.db"), out = tmp.file("out.txt");
  fs::create_directory(folder);
  ASSERT_EQ(run_shell(binary() + " baseline record r --store " + store + " -- true").exit_code, 0);
  fs::remove(store + "-wal");
  fs::remove(store + "-shm");
  // nobody may not reach the build's binary (a clone in /root, mode 700): a copy everyone may run.
  const std::string bin = tmp.file("gpudoc");
  fs::copy_file(binary(), bin);
  fs::permissions(bin, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                           fs::perms::others_exec);
  std::ofstream(out).close();
  fs::permissions(out, fs::perms::all);
  fs::permissions(store, fs::perms::all);  // the store itself may be written
  open_to_everyone(folder);
  fs::permissions(folder, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                              fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  const std::string rec = bin + " baseline record r --store " + store + " -- true > " + out + " 2>&1";
  const std::string trace = bin + " --backend fake:1 record -o " + folder + "/x.jsonl --duration 1 >> " + out + " 2>&1";
  const int code = as_unprivileged([&] { return std::system(rec.c_str()) >> 8; });
  const int trace_code = as_unprivileged([&] { return std::system(trace.c_str()) >> 8; });
  fs::permissions(folder, fs::perms::owner_all);
  const std::string said = slurp(out);
  EXPECT_EQ(code, 2) << said;
  EXPECT_NE(said.find("its folder " + folder + " is not writable (Permission denied)"), std::string::npos) << said;
  EXPECT_EQ(said.find("No such file or directory"), std::string::npos) << said;
  EXPECT_NE(trace_code, 0) << said;
  EXPECT_NE(said.find("creating " + folder + "/x.jsonl: Permission denied"), std::string::npos) << said;
}

}  // namespace
}  // namespace gpudoc::testing
