// Durability and concurrency of the store, with real processes:
//  * a writer killed with SIGKILL at >= 200 random points: every write it acknowledged (printed
//    after COMMIT returned) is in the store afterwards, complete, and PRAGMA integrity_check is ok;
//  * several writers at once: no lost record, no SQLITE_BUSY reaching a caller.
// Power loss cannot be simulated here; synchronous=FULL is what covers it (store/database.hpp).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "store/database.hpp"
#include "support/temp_dir.hpp"

namespace gpudoc::store {
namespace {

const std::string kWriter = std::string(GPUDOC_BINARY_DIR) + "/tests/unit/store/gpudoc_store_writer";

struct Writer {
  pid_t pid = -1;
  int out = -1;  // read end of its stdout
};

Writer spawn_writer(const std::string& db, long count, const std::string& prefix) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    execl(kWriter.c_str(), kWriter.c_str(), db.c_str(), std::to_string(count).c_str(), prefix.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  return {pid, fds[0]};
}

std::vector<std::int64_t> read_ids(int fd) {
  std::string text;
  char buf[4096];
  ssize_t n = 0;
  while ((n = read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<std::size_t>(n));
  close(fd);
  std::vector<std::int64_t> ids;
  std::istringstream in(text);
  std::string line;
  // Only whole lines count: a kill between the id's bytes leaves a partial line, not an ack.
  while (std::getline(in, line))
    if (!in.eof() || (!text.empty() && text.back() == '\n')) ids.push_back(std::stoll(line));
  return ids;
}

TEST(StoreCrash, KillNineAtRandomPointsLosesNoAcknowledgedWrite) {
  ASSERT_TRUE(std::filesystem::exists(kWriter)) << kWriter;
  const testing::TempDir tmp("gpudoc-crash");
  const std::string db = tmp.file("gpudoc.db");
  const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  // Mostly mid-write; one kill in ten very early (while opening, switching to WAL, migrating).
  std::uniform_int_distribution<int> late_us(2'000, 60'000), early_us(0, 3'000);
  std::uniform_int_distribution<int> pick(0, 9);
  constexpr int kKills = 220;
  std::set<std::int64_t> acked;
  int killed_by_signal = 0, integrity_ok = 0, mid_write = 0;
  std::size_t lost = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int k = 0; k < kKills; ++k) {
    Writer w = spawn_writer(db, 1'000'000'000, "crash");
    ASSERT_GT(w.pid, 0);
    std::this_thread::sleep_for(std::chrono::microseconds(pick(rng) == 0 ? early_us(rng) : late_us(rng)));
    kill(w.pid, SIGKILL);
    const auto ids = read_ids(w.out);
    int status = 0;
    waitpid(w.pid, &status, 0);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      ++killed_by_signal;
    else
      ADD_FAILURE() << "writer ended by itself (status " << status << ") at kill " << k;

    auto store = Database::open(db);
    ASSERT_TRUE(store) << "seed " << seed << " kill " << k << ": " << store.error().message();
    auto ic = store->integrity_check();
    ASSERT_TRUE(ic) << ic.error().message();
    EXPECT_EQ(*ic, "ok") << "seed " << seed << " kill " << k;
    if (*ic == "ok") ++integrity_ok;
    if (!ids.empty()) ++mid_write;
    for (auto id : ids) {
      auto run = store->load_run(id);
      if (!run || run->figures.size() != 3 || run->figures[0].samples.size() != 50) {
        ++lost;
        ADD_FAILURE() << "seed " << seed << " kill " << k << ": acknowledged run " << id << " missing or incomplete";
      }
      acked.insert(id);
    }
    // Every earlier acknowledgement still holds (checked in bulk now and then: it only grows).
    if (k % 20 == 19 || k == kKills - 1) {
      auto runs = store->count_rows("runs");
      ASSERT_TRUE(runs);
      EXPECT_GE(*runs, static_cast<std::int64_t>(acked.size()));
      for (auto id : acked)
        if (!*store->run_exists(id)) {
          ++lost;
          ADD_FAILURE() << "seed " << seed << ": acknowledged run " << id << " vanished by kill " << k;
        }
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "crash test: seed %u, %d kills (SIGKILL), %d of them after the writer's first acknowledged write, %zu writes "
      "acknowledged, %zu lost, integrity ok %d/%d, %.1f s\n",
      seed, killed_by_signal, mid_write, acked.size(), lost, integrity_ok, kKills, seconds);
  RecordProperty("kills", killed_by_signal);
  RecordProperty("acknowledged", static_cast<int>(acked.size()));
  RecordProperty("lost", static_cast<int>(lost));
  EXPECT_GE(killed_by_signal, 200);
  EXPECT_EQ(lost, 0u);
  EXPECT_GE(mid_write, kKills / 4);  // the kills really landed among acknowledged writes
}

TEST(StoreConcurrency, SeveralWritersAtOnceLoseNothing) {
  ASSERT_TRUE(std::filesystem::exists(kWriter)) << kWriter;
  const testing::TempDir tmp("gpudoc-crash");
  const std::string db = tmp.file("gpudoc.db");
  constexpr int kWriters = 4;
  constexpr long kEach = 60;
  std::vector<Writer> ws;
  // All start at once on a fresh file: they race on creating it, switching to WAL and migrating.
  for (int i = 0; i < kWriters; ++i) ws.push_back(spawn_writer(db, kEach, "w" + std::to_string(i % 2) + "_"));
  std::set<std::int64_t> ids;
  std::size_t total = 0;
  for (auto& w : ws) {
    const auto got = read_ids(w.out);
    int status = 0;
    waitpid(w.pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "a writer failed (its error is on stderr), status " << status;
    total += got.size();
    ids.insert(got.begin(), got.end());
  }
  EXPECT_EQ(total, static_cast<std::size_t>(kWriters * kEach));
  EXPECT_EQ(ids.size(), total);  // no id acknowledged twice
  auto store = Database::open(db);
  ASSERT_TRUE(store) << store.error().message();
  EXPECT_EQ(*store->count_rows("runs"), kWriters * kEach);
  EXPECT_EQ(*store->count_rows("figures"), kWriters * kEach * 3);
  EXPECT_EQ(*store->count_rows("baselines"), 8);  // w0_0..3 and w1_0..3
  EXPECT_EQ(*store->integrity_check(), "ok");
}

}  // namespace
}  // namespace gpudoc::store
