// `gpudoc baseline` when things go wrong, end to end with the real binary: a stop signal during a
// run (the workload's group ends, what was measured is stored marked interrupted, exit 128+N),
// stdout closed by `| head -1`, a damaged stored figure, bytes that are not UTF-8, a locked or
// read-only store found before anything runs, and files planted at the names gpudoc once used in
// a shared temporary folder (by an unprivileged user, where the test runs as root).
#include <fcntl.h>
#include <gmock/gmock.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "cli_runner.hpp"
#include "core/file.hpp"
#include "core/process_tree.hpp"
#include "support/raw_sql.hpp"
#include "support/temp_dir.hpp"
#include "support/unprivileged.hpp"

extern char** environ;

namespace gpudoc::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

// gpudoc started in the background with its output in a file. `before_exec` runs in the child
// just before it becomes gpudoc (same pid): it can plant files at names made from that pid.
pid_t launch(const std::vector<std::string>& args, const std::string& out_path,
             const std::vector<std::string>& env_add = {}, const std::function<void(pid_t)>& before_exec = {}) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  const int fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ::dup2(fd, STDOUT_FILENO);
  ::dup2(fd, STDERR_FILENO);
  if (before_exec) before_exec(::getpid());
  std::vector<std::string> words{gpudoc_binary()};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_words(env_add);
  for (char** e = environ; *e != nullptr; ++e) env_words.emplace_back(*e);  // the first of a name wins
  std::vector<char*> envp;
  for (auto& e : env_words) envp.push_back(e.data());
  envp.push_back(nullptr);
  ::execve(argv[0], argv.data(), envp.data());
  ::_exit(127);
}

class BaselineHardening : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = tmp_.file("store.db");
    ::setenv("GPUDOC_STORE", tmp_.file("default-store.db").c_str(), 1);  // a run without --store stays here
    // STEP_MS: three step lines, then a file saying "ready" with the shell's pid (its process
    // group), then a background sleep and a foreground one: a workload that would run a minute.
    slow_ = write_script("slow.sh",
                         "for j in 1 2 3; do echo \"::gpudoc {\\\"step_ms\\\": $1}\"; done\n"
                         "sleep 60 & echo $! > \"$2.bg\"\n"
                         "echo $$ > \"$2\"\n"
                         "sleep 60\n");
    quick_ =
        write_script("quick.sh", "echo \"::gpudoc {\\\"step_ms\\\": $1}\"\necho \"::gpudoc {\\\"step_ms\\\": $1}\"\n");
  }
  std::string write_script(const std::string& name, const std::string& body) {
    const std::string path = tmp_.file(name);
    std::ofstream(path) << "#!/bin/sh\n" << body;
    fs::permissions(path, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
    return path;
  }
  // --store goes before " -- ": what follows belongs to the workload.
  std::string with_store(const std::string& args) const {
    const auto dd = args.find(" -- ");
    if (dd == std::string::npos) return args + " --store " + store_;
    return args.substr(0, dd) + " --store " + store_ + args.substr(dd);
  }
  CliRun gpudoc(const std::string& args) { return run_gpudoc(with_store(args)); }
  nlohmann::json json(const std::string& args) {
    const CliRun r = run_gpudoc_stdout(with_store(args + " --json"));
    auto j = nlohmann::json::parse(r.output, nullptr, false);
    return j.is_discarded() ? nlohmann::json{{"unparsed", r.output}} : j;
  }

  TempDir tmp_{"gpudoc-baseline-hardening"};
  std::string store_, slow_, quick_;
};

// ---- stop signals ---------------------------------------------------------------------------

class StopSignals : public BaselineHardening, public ::testing::WithParamInterface<int> {};

TEST_P(StopSignals, RecordStopsTheWorkloadsGroupAndStoresTheRunMarkedInterrupted) {
  const int sig = GetParam();
  const std::string ready = tmp_.file("ready"), out = tmp_.file("out.txt");
  const pid_t pid = launch({"baseline", "record", "r", "--store", store_, "--", slow_, "10.5", ready}, out);
  const std::string group = wait_for_line(ready);
  ASSERT_FALSE(group.empty()) << slurp(out);
  const std::string bg = wait_for_line(ready + ".bg");
  ::kill(pid, sig);
  const int code = wait_exit(pid);
  EXPECT_EQ(code, 128 + sig) << slurp(out);
  EXPECT_TRUE(core::live_group_members(std::stoi(group)).empty()) << "the workload's process group survived";
  EXPECT_TRUE(core::live_group_members(std::stoi(group)).count(std::stoi(bg)) == 0);
  EXPECT_THAT(slurp(out), HasSubstr("INTERRUPTED by " + std::string(sig == SIGINT    ? "SIGINT"
                                                                    : sig == SIGTERM ? "SIGTERM"
                                                                                     : "SIGHUP")));

  auto history = json("baseline history r");
  ASSERT_EQ(history["runs"].size(), 1u) << history.dump();
  EXPECT_EQ(history["runs"][0]["verdict"], "interrupted");
  EXPECT_NEAR(history["runs"][0]["medians"]["step_ms"].get<double>(), 10.5, 1e-9);  // the figures printed so far
  EXPECT_FALSE(history["runs"][0]["medians"].contains("wall_s"));                   // not the workload's length
  EXPECT_EQ(json("baseline list")["baselines"][0]["golden_status"], "interrupted");
  EXPECT_THAT(gpudoc("baseline show r").output, HasSubstr("INTERRUPTED recording"));

  // An interrupted recording is never a baseline to pass against.
  const CliRun chk = gpudoc("baseline check r -- " + quick_ + " 10.5");
  EXPECT_EQ(chk.exit_code, 2) << chk.output;
  EXPECT_THAT(chk.output, HasSubstr("baseline 'r' has no complete recording: its golden run 1 was interrupted"));
}

INSTANTIATE_TEST_SUITE_P(IntTermHup, StopSignals, ::testing::Values(SIGINT, SIGTERM, SIGHUP));

TEST_F(BaselineHardening, AnInterruptedReRecordingLeavesTheGoldenRunInPlace) {
  ASSERT_EQ(gpudoc("baseline record r -- " + quick_ + " 10").exit_code, 0);
  const std::string ready = tmp_.file("ready"), out = tmp_.file("out.txt");
  const pid_t pid = launch({"baseline", "record", "r", "--store", store_, "--", slow_, "99", ready}, out);
  ASSERT_FALSE(wait_for_line(ready).empty()) << slurp(out);
  ::kill(pid, SIGINT);
  EXPECT_EQ(wait_exit(pid), 130) << slurp(out);
  EXPECT_THAT(slurp(out), HasSubstr("the golden run stays as it was"));
  const CliRun chk = gpudoc("baseline check r -- " + quick_ + " 10");
  EXPECT_EQ(chk.exit_code, 0) << chk.output;  // against the complete run, not the 99 ms one
  EXPECT_EQ(json("baseline list")["baselines"][0]["golden_status"], "complete");
}

TEST_F(BaselineHardening, CtrlCDuringACheckStoresTheCheckMarkedInterrupted) {
  ASSERT_EQ(gpudoc("baseline record r -- " + quick_ + " 10").exit_code, 0);
  const std::string ready = tmp_.file("ready"), out = tmp_.file("out.txt");
  const pid_t pid = launch({"baseline", "check", "r", "--store", store_, "--", slow_, "10", ready}, out);
  ASSERT_FALSE(wait_for_line(ready).empty()) << slurp(out);
  ::kill(pid, SIGINT);
  EXPECT_EQ(wait_exit(pid), 130) << slurp(out);
  EXPECT_THAT(slurp(out), HasSubstr("INTERRUPTED by SIGINT: the check was stopped"));
  EXPECT_THAT(slurp(out), Not(HasSubstr("running again to confirm")));
  auto history = json("baseline history r");
  ASSERT_EQ(history["runs"].size(), 2u) << history.dump();
  EXPECT_EQ(history["runs"][1]["role"], "check");
  EXPECT_EQ(history["runs"][1]["verdict"], "interrupted");
  EXPECT_EQ(json("baseline list")["baselines"][0]["last_check"]["verdict"], "interrupted");
}

// ---- stdout closed ----------------------------------------------------------------------------

TEST_F(BaselineHardening, StdoutClosedByHeadNeverPreventsStoring) {
  const std::string chatty = write_script("chatty.sh", "seq 1 200000\necho '::gpudoc {\"step_ms\": 3}'\n");
  const CliRun r = run_shell("bash -c '" + gpudoc_binary() + " baseline record p --store " + store_ + " -- " + chatty +
                             " 2>/dev/null | head -1; echo \"gpudoc=${PIPESTATUS[0]}\"'");
  EXPECT_THAT(r.output, HasSubstr("gpudoc="));
  EXPECT_THAT(r.output, Not(HasSubstr("gpudoc=141"))) << "killed by SIGPIPE";
  auto history = json("baseline history p");
  ASSERT_EQ(history["runs"].size(), 1u) << history.dump();
  EXPECT_EQ(history["runs"][0]["medians"]["step_ms"], 3);
}

// ---- a damaged stored figure ------------------------------------------------------------------

class DamagedFigure : public BaselineHardening,
                      public ::testing::WithParamInterface<std::pair<const char*, const char*>> {};

// A figure whose stored samples were damaged was dropped, and `check` printed "ok" and exited 0
// on a +818 % regression. The gate refuses the baseline, naming the figure and the damage.
TEST_P(DamagedFigure, TheCheckFailsNamingTheFigureAndTheDamage) {
  const auto [samples, damage] = GetParam();
  ASSERT_EQ(gpudoc("baseline record d -- " + quick_ + " 10").exit_code, 0);
  const std::string edit =
      raw_sql(store_, std::string("UPDATE figures SET samples_json = '") + samples + "' WHERE name = 'step_ms'");
  ASSERT_EQ(edit.find("ERR"), std::string::npos) << edit;
  const CliRun chk = gpudoc("baseline check d -- " + quick_ + " 91.8");
  EXPECT_EQ(chk.exit_code, 2) << chk.output;
  EXPECT_THAT(chk.output, HasSubstr("baseline 'd' in " + store_ + " is damaged"));
  EXPECT_THAT(chk.output, HasSubstr("figure 'step_ms'"));
  EXPECT_THAT(chk.output, HasSubstr(damage));
  EXPECT_THAT(chk.output, Not(HasSubstr("ok: every figure")));
  EXPECT_THAT(gpudoc("baseline show d").output, HasSubstr("DAMAGED"));
}

INSTANTIATE_TEST_SUITE_P(CutNanString, DamagedFigure,
                         ::testing::Values(std::make_pair("[10.0, 10.", "not valid JSON"),
                                           std::make_pair("[10.0, NaN]", "not valid JSON"),
                                           std::make_pair("[\"10\", 10.0]", "sample 1 is \"10\", not a number"),
                                           std::make_pair("[]", "no samples")));

// A golden figure whose row was deleted was read as one the baseline never had: "new", and the
// check passed a +818 % regression with exit 0. The run's list of its figures names the loss.
TEST_F(BaselineHardening, AGoldenFigureDeletedFromTheStoreFailsTheCheck) {
  ASSERT_EQ(gpudoc("baseline record lost -- " + quick_ + " 10").exit_code, 0);
  const std::string edit = raw_sql(store_, "DELETE FROM figures WHERE name = 'step_ms'");
  ASSERT_EQ(edit.find("ERR"), std::string::npos) << edit;
  const CliRun chk = gpudoc("baseline check lost -- " + quick_ + " 91.8");
  EXPECT_EQ(chk.exit_code, 2) << chk.output;
  EXPECT_THAT(chk.output, HasSubstr("baseline 'lost' in " + store_ + " is damaged"));
  EXPECT_THAT(chk.output, HasSubstr("figure 'step_ms': stored with the run, now missing from the store"));
  EXPECT_THAT(chk.output, Not(HasSubstr("ok: every figure")));
}

// ---- bytes that are not UTF-8 -----------------------------------------------------------------

// One stray byte on a ::gpudoc line or in a workload argument ended the run with exit 4 and
// stored nothing.
TEST_F(BaselineHardening, BytesThatAreNotUtf8AreKeptReplacedAndTheCommandRunsByteForByte) {
  const std::string seen = tmp_.file("seen");
  const std::string w = write_script("latin1.sh",
                                     "printf '%s' \"$1\" > \"$2\"\n"
                                     "echo \"::gpudoc {\\\"step_ms\\\": 10, \\\"caf\xe9_ms\\\": 2}\"\n");
  const std::string arg = "caf\xe9";
  CliRun r = gpudoc("baseline record u -- " + w + " '" + arg + "' " + seen);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("not valid UTF-8, replaced by U+FFFD"));
  EXPECT_THAT(r.output, HasSubstr("the workload's command line is not valid UTF-8"));
  auto history = json("baseline history u");
  ASSERT_EQ(history["runs"].size(), 1u) << history.dump();
  EXPECT_EQ(history["runs"][0]["medians"]["caf\xEF\xBF\xBD_ms"], 2);
  fs::remove(seen);
  r = gpudoc("baseline check u");  // the recorded command, as it was given
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(slurp(seen), arg);
}

// ---- the store, checked before anything runs --------------------------------------------------

TEST_F(BaselineHardening, ALockedStoreFailsBeforeTheWorkloadStarts) {
  ASSERT_EQ(gpudoc("baseline record r -- " + quick_ + " 10").exit_code, 0);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(store_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);  // another writer, for minutes
  const std::string marker = tmp_.file("started");
  const auto t0 = std::chrono::steady_clock::now();
  const CliRun r = gpudoc("baseline record r2 -- sh -c 'touch " + marker + "; sleep 60'");
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const CliRun c = gpudoc("baseline check r -- sh -c 'touch " + marker + "; sleep 60'");
  sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_THAT(r.output, HasSubstr("locked by another process"));
  EXPECT_LT(took, 120);  // hang guard: normally ~10 s (the store's busy timeout); 10x+ margin
  EXPECT_EQ(c.exit_code, 3) << c.output;
  EXPECT_FALSE(fs::exists(marker)) << "the workload ran before the store was found locked";
}

// A store that is not a gpudoc store (damaged, or another file) is named before the workload runs:
// not after it has run for its whole length.
TEST_F(BaselineHardening, ADamagedStoreFailsBeforeTheWorkloadStarts) {
  std::ofstream(store_) << std::string(8192, 'z');
  const std::string marker = tmp_.file("started");
  const auto t0 = std::chrono::steady_clock::now();
  const CliRun r = gpudoc("baseline record r -- sh -c 'touch " + marker + "; sleep 60'");
  const CliRun c = gpudoc("baseline check r -- sh -c 'touch " + marker + "; sleep 60'");
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr(store_));
  EXPECT_THAT(r.output, HasSubstr("not a gpudoc store"));
  EXPECT_EQ(c.exit_code, 2) << c.output;
  EXPECT_THAT(c.output, HasSubstr(store_));
  EXPECT_LT(took, 30);  // hang guard: normally well under 1 s for both (each workload sleeps 60 s); 10x+ margin
  EXPECT_FALSE(fs::exists(marker)) << "the workload ran before the store was found damaged";
}

// Reading needs no write access; writing says plainly that the store is read-only, before
// anything runs. As root no file mode stops a write, so the test runs gpudoc as nobody there.
TEST_F(BaselineHardening, AReadOnlyStoreIsReadAndRefusedForRecordingBeforeAnythingRuns) {
  ASSERT_EQ(gpudoc("baseline record r -- " + quick_ + " 10").exit_code, 0);
  ASSERT_EQ(gpudoc("baseline check r -- " + quick_ + " 10").exit_code, 0);
  const std::string marker = tmp_.file("started"), store = store_;
  std::string bin = gpudoc_binary();
  if (running_as_root()) {
    // nobody may not be able to reach the build's binary (a clone in /root, mode 700): a copy in
    // the test's own folder, which everyone may enter.
    const std::string copy = tmp_.file("gpudoc");
    fs::copy_file(bin, copy);
    fs::permissions(copy, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
    bin = copy;
  }
  // Each run's output goes to a file it may write, in a folder it may not.
  const std::string list_out = tmp_.file("list.txt"), show_out = tmp_.file("show.txt"),
                    hist_out = tmp_.file("hist.txt"), rec_out = tmp_.file("rec.txt");
  for (const auto& f : {list_out, show_out, hist_out, rec_out}) {
    std::ofstream(f).close();
    fs::permissions(f, fs::perms::all);
  }
  fs::permissions(store_, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  open_to_everyone(tmp_.path());
  if (!running_as_root()) fs::permissions(tmp_.path(), fs::perms::owner_read | fs::perms::owner_exec);
  auto run_to = [&](const std::string& args, const std::string& file) {
    const std::string line = bin + " " + with_store(args) + " > " + file + " 2>&1";
    return as_unprivileged([&] { return std::system(line.c_str()) >> 8; });
  };
  const int list = run_to("baseline list", list_out);
  const int show = run_to("baseline show r", show_out);
  const int hist = run_to("baseline history r", hist_out);
  const int rec = run_to("baseline record r -- sh -c 'touch " + marker + "'", rec_out);
  if (!running_as_root()) fs::permissions(tmp_.path(), fs::perms::owner_all);
  EXPECT_EQ(list, 0) << slurp(list_out);
  EXPECT_THAT(slurp(list_out), HasSubstr("complete"));
  EXPECT_EQ(show, 0) << slurp(show_out);
  EXPECT_EQ(hist, 0) << slurp(hist_out);
  EXPECT_THAT(slurp(hist_out), HasSubstr("2 runs"));
  EXPECT_EQ(rec, 2) << slurp(rec_out);
  EXPECT_THAT(slurp(rec_out), HasSubstr("the store " + store + " is read-only"));
  EXPECT_THAT(slurp(rec_out), Not(HasSubstr("not an error")));
  EXPECT_FALSE(fs::exists(marker)) << "the workload ran before the store was found read-only";
}

// ---- smaller items ----------------------------------------------------------------------------

TEST_F(BaselineHardening, AConfigNumberOutOfRangeIsBadInputNamingFileAndKey) {
  ASSERT_EQ(gpudoc("baseline record r -- " + quick_ + " 10").exit_code, 0);
  const std::string cfg = tmp_.file("gpudoc.baseline.json");
  std::ofstream(cfg) << R"({"metrics": {"step_ms": {"threshold_percent": 1e309}}})";
  const CliRun r = gpudoc("baseline check r --config " + cfg + " -- " + quick_ + " 10");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr(cfg + ": metrics.step_ms.threshold_percent"));
}

TEST_F(BaselineHardening, AMetricsLineOverOneMebibyteIsNamed) {
  const std::string w =
      write_script("long.sh",
                   "echo start\nprintf '::gpudoc {\"a\": '; head -c 1200000 /dev/zero | tr '\\0' '1'; "
                   "echo '}'\necho '::gpudoc {\"step_ms\": 2}'\n");
  const CliRun r = gpudoc("baseline record l -- " + w);
  EXPECT_EQ(r.exit_code, 0) << r.output.substr(0, 2000);
  EXPECT_THAT(r.output, HasSubstr("metrics stdout line 2: a ::gpudoc line of 1200016 bytes, over the 1 MiB limit"));
}

// End to end: every name reaches the stored run. The cost of 100k names is the unit test
// Scale.AHundredThousandDistinctNamesAreEachKeptComparedAndConfirmed's and the benchmark
// tests/perf/baseline_figures.cpp's; the bound here only stops a run that never ends.
TEST_F(BaselineHardening, AHundredThousandMetricNamesAreAllRecorded) {
  // 100 lines of 1000 names each (one line of them all would be over the 1 MiB line limit).
  const std::string w = write_script(
      "many.sh",
      "i=0; while [ $i -lt 100 ]; do awk -v l=$i 'BEGIN { printf \"::gpudoc {\"; "
      "for (k = 0; k < 1000; k++) printf \"%s\\\"m%d_%d\\\": %d\", (k ? \", \" : \"\"), l, k, k; print \"}\" }'; "
      "i=$((i+1)); done\n");
  const auto t0 = std::chrono::steady_clock::now();
  const CliRun r = run_gpudoc_stdout("baseline record many --json --store " + store_ + " -- " + w);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.exit_code, 0) << r.output.substr(0, 2000);
  EXPECT_EQ(nlohmann::json::parse(r.output)["figures"].size(), 100'001u);  // and wall_s
  EXPECT_LT(took, 120);                                                    // hang guard: normally ~5-10 s; 10x+ margin
}

// ---- files planted at the names gpudoc once used in a shared temporary folder ---------------

enum class Plant { kSymlink, kFifo };

class PlantedFiles : public BaselineHardening, public ::testing::WithParamInterface<Plant> {
 protected:
  // Every name `baseline record/check` once made in $TMPDIR for a gpudoc of this pid: the probe
  // script (run by python3), its metrics file, the workload's metrics files and traces (per
  // collection and run).
  static std::vector<std::string> old_names(pid_t pid) {
    std::vector<std::string> n{fmt_name("gpudoc-probe-{}.py", pid), fmt_name("gpudoc-probe-metrics-{}.jsonl", pid)};
    for (int c = 0; c < 4; ++c)
      for (int r = 0; r < 4; ++r) {
        n.push_back("gpudoc-metrics-" + std::to_string(pid) + "-" + std::to_string(c) + "-" + std::to_string(r) +
                    ".jsonl");
        n.push_back("gpudoc-baseline-" + std::to_string(pid) + "-" + std::to_string(c) + "-" + std::to_string(r) +
                    ".jsonl");
      }
    return n;
  }
  static std::string fmt_name(const std::string& pattern, pid_t pid) {
    const auto at = pattern.find("{}");
    return pattern.substr(0, at) + std::to_string(pid) + pattern.substr(at + 2);
  }

  // Runs gpudoc with TMPDIR = a world-writable sticky folder in which another user planted, just
  // before gpudoc started, a symlink to a file of ours or a FIFO at every old name.
  void run_with_planted(const std::vector<std::string>& args) {
    const pid_t pid = launch(args, out_, {"TMPDIR=" + shared_}, [this](pid_t gpudoc_pid) {
      as_unprivileged([&] {
        const mode_t saved = ::umask(0);  // FIFOs anyone may open, as an attacker would leave them
        for (const auto& name : old_names(gpudoc_pid)) {
          const std::string at = shared_ + "/" + name;
          if (GetParam() == Plant::kSymlink)
            (void)::symlink(victim_.c_str(), at.c_str());
          else
            (void)::mkfifo(at.c_str(), 0666);
        }
        ::umask(saved);  // not root: this very process becomes gpudoc next
        return 0;
      });
    });
    // Hold every FIFO open for reading: a writer would then not block, and what it wrote stays.
    for (int i = 0; i < 200 && GetParam() == Plant::kFifo; ++i) {
      if (fs::exists(shared_ + "/" + old_names(pid).back())) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::vector<int> readers;
    if (GetParam() == Plant::kFifo)
      for (const auto& name : old_names(pid))
        readers.push_back(::open((shared_ + "/" + name).c_str(), O_RDONLY | O_NONBLOCK));
    code_ = wait_exit(pid, 120);
    for (int fd : readers) {
      char c = 0;
      EXPECT_LE(::read(fd, &c, 1), 0) << "gpudoc wrote into a planted FIFO";
      ::close(fd);
    }
    EXPECT_EQ(slurp(victim_), "precious, untouched") << "gpudoc wrote through a planted symlink";
    for (const auto& name : old_names(pid)) {
      const std::string at = shared_ + "/" + name;
      struct stat st {};
      ASSERT_EQ(::lstat(at.c_str(), &st), 0) << at << " was removed or replaced";
      EXPECT_TRUE(GetParam() == Plant::kSymlink ? S_ISLNK(st.st_mode) : S_ISFIFO(st.st_mode)) << at;
      if (running_as_root()) {
        EXPECT_EQ(st.st_uid, kNobody) << at << " is not the attacker's any more";
      }
    }
    // Beside the planted names there is at most gpudoc's own private folder (mode 0700, kept with
    // a regression's trace when a GPU recorded one): nothing else was made or touched.
    const auto planted = old_names(pid);
    for (const auto& e : fs::directory_iterator(shared_)) {
      if (std::find(planted.begin(), planted.end(), e.path().filename().string()) != planted.end()) continue;
      struct stat st {};
      ASSERT_EQ(::lstat(e.path().c_str(), &st), 0);
      EXPECT_TRUE(S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0700 && st.st_uid == ::geteuid())
          << e.path() << " is not gpudoc's private folder\n"
          << slurp(out_);
    }
    for (const auto& e : fs::directory_iterator(shared_)) fs::remove_all(e.path());
  }

  void SetUp() override {
    BaselineHardening::SetUp();
    shared_ = tmp_.file("shared");
    fs::create_directory(shared_);
    fs::permissions(shared_, fs::perms::all | fs::perms::sticky_bit);  // like /tmp
    open_to_everyone(tmp_.path());
    victim_ = tmp_.file("victim");
    std::ofstream(victim_) << "precious, untouched";
    out_ = tmp_.file("out.txt");
  }

  std::string shared_, victim_, out_;
  int code_ = -1;
};

TEST_P(PlantedFiles, RecordAndCheckNeverTouchThem) {
  run_with_planted({"baseline", "record", "w", "--store", store_, "--repeat", "2", "--", quick_, "10"});
  EXPECT_EQ(code_, 0) << slurp(out_);
  run_with_planted(
      {"baseline", "check", "w", "--store", store_, "--", quick_, "30"});  // a regression: confirmed by a re-run
  EXPECT_EQ(code_, 1) << slurp(out_);
  EXPECT_THAT(slurp(out_), HasSubstr("confirmed by a re-run"));
  // The probe: python3 would run whatever a planted FIFO fed it. Without PyTorch (or python3)
  // the probe is unavailable (exit 3); its script never passes through the shared folder.
  run_with_planted({"baseline", "record", "p", "--probe", "--store", store_});
  EXPECT_THAT(code_, ::testing::AnyOf(0, 3)) << slurp(out_);
}

INSTANTIATE_TEST_SUITE_P(SymlinkFifo, PlantedFiles, ::testing::Values(Plant::kSymlink, Plant::kFifo));

}  // namespace
}  // namespace gpudoc::testing
