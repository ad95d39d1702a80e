// The SQLite store: round trips, migrations, foreign/corrupt/newer files, a locked database.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "store/database.hpp"
#include "support/raw_sql.hpp"
#include "support/temp_dir.hpp"
#include "support/unprivileged.hpp"

namespace gpudoc::store {
namespace {

using gpudoc::testing::raw_sql;

using ::testing::HasSubstr;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_ + "/sub/dir/gpudoc.db";  // the directory is created on open
  }

  static NewBaseline sample(const std::string& name, double step_ms) {
    NewBaseline b;
    b.name = name;
    b.kinds = "workload";
    b.spec = {{"command", {"python3", "train.py"}}, {"repeat", 1}};
    b.run.time_unix_ns = 1'780'000'000'000'000'000;
    b.run.machine = MachineContext{"host", {"NVIDIA H200"}, "580.1", "13.0", {{"gpu_uuids", {"GPU-1"}}}};
    b.run.details = {{"notes", {"a note"}}};
    b.run.figures = {Figure{"step_ms", "", "workload", std::nullopt, {step_ms, step_ms + 1, step_ms - 1}},
                     Figure{"hbm.copy", "GB/s", "bench", Direction::kHigherIsBetter, {4000.5}}};
    return b;
  }

  testing::TempDir tmp_{"gpudoc-store"};
  std::string dir_ = tmp_.str();
  std::string path_;
};

TEST_F(StoreTest, RoundTrip) {
  auto s = Database::open(path_);
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(*s->schema_version(), kSchemaVersion);
  EXPECT_EQ(raw_sql(path_, "PRAGMA journal_mode"), "wal|");
  auto id = s->record_baseline(sample("resnet", 41.0));
  ASSERT_TRUE(id) << id.error().message();
  auto info = s->find_baseline("resnet");
  ASSERT_TRUE(info && *info);
  EXPECT_EQ((*info)->golden_run_id, *id);
  EXPECT_EQ((*info)->kinds, "workload");
  EXPECT_EQ((*info)->spec["command"][1], "train.py");
  EXPECT_EQ((*info)->machine.gpus, std::vector<std::string>{"NVIDIA H200"});
  EXPECT_EQ((*info)->run_count, 1);
  auto run = s->load_run(*id);
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(run->role, "record");
  EXPECT_EQ(run->machine.driver_version, "580.1");
  EXPECT_EQ(run->details["notes"][0], "a note");
  ASSERT_EQ(run->figures.size(), 2u);
  EXPECT_EQ(run->figures[0].name, "step_ms");
  EXPECT_EQ(run->figures[0].samples, (std::vector<double>{41, 42, 40}));
  EXPECT_FALSE(run->figures[0].direction);
  EXPECT_EQ(run->figures[1].unit, "GB/s");
  EXPECT_EQ(run->figures[1].direction, Direction::kHigherIsBetter);
  EXPECT_EQ(raw_sql(path_, "SELECT median FROM figures WHERE name = 'step_ms'"), "41.0|");
  EXPECT_FALSE(*s->find_baseline("nope"));
  EXPECT_EQ(*s->integrity_check(), "ok");
}

TEST_F(StoreTest, ReRecordingKeepsHistoryAndMovesTheGoldenRun) {
  auto s = Database::open(path_);
  ASSERT_TRUE(s);
  auto first = s->record_baseline(sample("a", 10));
  NewRun check;
  check.baseline = "a";
  check.role = "check";
  check.verdict = "ok";
  check.exit_code = 0;
  check.figures = sample("a", 11).run.figures;
  auto c = s->add_run(check);
  ASSERT_TRUE(c) << c.error().message();
  auto second = s->record_baseline(sample("a", 12));
  ASSERT_TRUE(first && second);
  auto info = s->find_baseline("a");
  EXPECT_EQ((*info)->golden_run_id, *second);
  EXPECT_EQ((*info)->run_count, 3);
  auto runs = s->runs_of("a");
  ASSERT_TRUE(runs);
  ASSERT_EQ(runs->size(), 3u);
  EXPECT_EQ((*runs)[1].verdict, "ok");
  EXPECT_EQ(*(*runs)[1].exit_code, 0);
  EXPECT_EQ(s->runs_of("a", 2)->front().id, *c);  // the last two, oldest first
  ASSERT_TRUE(s->record_baseline(sample("b", 1)));
  auto list = s->list_baselines();
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].name, "a");
}

TEST_F(StoreTest, AddRunToUnknownBaselineIsAUsageError) {
  auto s = Database::open(path_);
  NewRun r;
  r.baseline = "ghost";
  r.role = "check";
  auto id = s->add_run(r);
  ASSERT_FALSE(id);
  EXPECT_EQ(id.error().kind(), core::ErrorKind::kUsage);
  EXPECT_THAT(id.error().message(), HasSubstr("no baseline named 'ghost'"));
}

TEST_F(StoreTest, GenericResults) {
  auto s = Database::open(path_);
  auto id = s->add_result("health", "GPU-1", 5, MachineContext{}, "pass", {{"checks", 12}});
  ASSERT_TRUE(id) << id.error().message();
  EXPECT_EQ(*s->count_rows("results"), 1);
  EXPECT_EQ(raw_sql(path_, "SELECT kind, status, payload_json FROM results"), "health|pass|{\"checks\":12}|");
}

TEST_F(StoreTest, MigratesFromVersionOneKeepingData) {
  {
    OpenOptions o;
    o.target_schema = 1;
    auto s = Database::open(path_, o);
    ASSERT_TRUE(s) << s.error().message();
    EXPECT_EQ(*s->schema_version(), 1);
    ASSERT_TRUE(s->record_baseline(sample("old", 5)));
  }
  EXPECT_THAT(raw_sql(path_, "SELECT * FROM results"), HasSubstr("no such table"));
  auto s = Database::open(path_);
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(*s->schema_version(), 2);
  auto info = s->find_baseline("old");
  ASSERT_TRUE(info && *info);
  EXPECT_EQ(s->load_run((*info)->golden_run_id)->figures.size(), 2u);
  EXPECT_TRUE(s->add_result("health", "", 1, {}, "pass", nlohmann::json::object()));
  EXPECT_EQ(raw_sql(path_, "PRAGMA application_id"), std::to_string(kApplicationId) + "|");
}

TEST_F(StoreTest, ANonSqliteFileIsRefusedByName) {
  std::filesystem::create_directories(std::filesystem::path(path_).parent_path());
  std::ofstream(path_) << "this is a CSV file, really\n1,2,3\n" << std::string(5000, 'x');
  auto s = Database::open(path_);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().kind(), core::ErrorKind::kBadInput);
  EXPECT_THAT(s.error().message(), HasSubstr(path_));
  EXPECT_THAT(s.error().message(), HasSubstr("not an SQLite database"));
}

TEST_F(StoreTest, AnotherProgramsDatabaseIsRefusedAndLeftAlone) {
  std::filesystem::create_directories(std::filesystem::path(path_).parent_path());
  raw_sql(path_, "CREATE TABLE users(id INTEGER, name TEXT); INSERT INTO users VALUES (1, 'x')");
  auto s = Database::open(path_);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().kind(), core::ErrorKind::kBadInput);
  EXPECT_THAT(s.error().message(), HasSubstr("other tables: users"));
  EXPECT_EQ(raw_sql(path_, "PRAGMA journal_mode"), "delete|");  // not switched to WAL
  raw_sql(path_, "PRAGMA application_id = 1234");
  auto t = Database::open(path_);
  ASSERT_FALSE(t);
  EXPECT_THAT(t.error().message(), HasSubstr("another program"));
}

TEST_F(StoreTest, ANewerSchemaIsRefused) {
  { ASSERT_TRUE(Database::open(path_)); }
  raw_sql(path_, "PRAGMA user_version = 99");
  auto s = Database::open(path_);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().kind(), core::ErrorKind::kBadInput);
  EXPECT_THAT(s.error().message(), HasSubstr("newer gpudoc (store schema 99; this gpudoc knows up to 2)"));
}

TEST_F(StoreTest, ADirectoryIsRefused) {
  std::filesystem::create_directories(path_);
  auto s = Database::open(path_);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().message(), HasSubstr("is a directory"));
}

TEST_F(StoreTest, ALockedStoreFailsClearlyAfterTheBusyTimeout) {
  auto writer = Database::open(path_);
  ASSERT_TRUE(writer);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr),
            SQLITE_OK);  // another writer holds the lock

  OpenOptions o;
  o.busy_timeout_ms = 200;
  auto other = Database::open(path_, o);  // already migrated: opening needs no write lock
  ASSERT_TRUE(other) << other.error().message();
  auto id = other->record_baseline(sample("x", 1));
  ASSERT_FALSE(id);
  EXPECT_EQ(id.error().kind(), core::ErrorKind::kEnvironment);
  EXPECT_THAT(id.error().message(), HasSubstr("locked by another process"));
  EXPECT_THAT(id.error().message(), HasSubstr(path_));
  // Reading still works while someone writes (WAL).
  EXPECT_TRUE(other->list_baselines());

  sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  auto again = other->record_baseline(sample("x", 1));
  EXPECT_TRUE(again) << again.error().message();
}

// A stored figure whose samples were damaged (the row edited, the disk) is named, never dropped:
// dropping it let `baseline check` pass a +818 % regression.
TEST_F(StoreTest, DamagedSamplesAreNamedNotDropped) {
  auto s = Database::open(path_);
  ASSERT_TRUE(s);
  auto id = s->record_baseline(sample("d", 10));
  ASSERT_TRUE(id);
  const std::string run = std::to_string(*id);
  const std::vector<std::pair<std::string, std::string>> damages = {
      {"[10.0, 11.", "not valid JSON"},        // cut
      {"[10.0, NaN, 9.0]", "not valid JSON"},  // NaN is not JSON
      {"[10.0, \"11\", 9.0]", "sample 2 is \"11\", not a number"},
      {"[10.0, null]", "sample 2 is null, not a number"},
      {"{\"a\": 1}", "not a JSON array"},
      {"[]", "no samples"},
  };
  for (const auto& [json, message] : damages) {
    raw_sql(path_, "UPDATE figures SET samples_json = '" + json + "' WHERE run_id = " + run + " AND name = 'step_ms'");
    auto r = s->load_run(*id);
    ASSERT_TRUE(r) << r.error().message();
    ASSERT_EQ(r->damaged.size(), 1u) << json;
    EXPECT_THAT(r->damaged[0], HasSubstr("figure 'step_ms'")) << json;
    EXPECT_THAT(r->damaged[0], HasSubstr(message)) << json;
    ASSERT_EQ(r->figures.size(), 2u);  // still listed, with only its readable samples
  }
  raw_sql(path_, "UPDATE figures SET samples_json = '[10, 11, 9]' WHERE run_id = " + run);
  EXPECT_TRUE(s->load_run(*id)->damaged.empty());
  // A direction nobody knows would silently stop the figure from gating.
  raw_sql(path_, "UPDATE figures SET direction = 'sideways' WHERE run_id = " + run + " AND name = 'hbm.copy'");
  auto r = s->load_run(*id);
  ASSERT_EQ(r->damaged.size(), 1u);
  EXPECT_THAT(r->damaged[0], HasSubstr("figure 'hbm.copy': direction 'sideways'"));
}

// A golden figure whose row is gone (deleted, dropped by a recovery) is named: read as a figure the
// run never had, its +818 % regression was shown as "new" and passed.
TEST_F(StoreTest, AFigureRowLostFromARunIsNamed) {
  auto s = Database::open(path_);
  ASSERT_TRUE(s);
  auto id = s->record_baseline(sample("lost", 10));
  ASSERT_TRUE(id);
  const std::string run = std::to_string(*id);
  ASSERT_TRUE(s->load_run(*id)->damaged.empty());
  raw_sql(path_, "DELETE FROM figures WHERE run_id = " + run + " AND name = 'step_ms'");
  auto r = s->load_run(*id);
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ(r->damaged.size(), 1u);
  EXPECT_THAT(r->damaged[0], HasSubstr("figure 'step_ms'"));
  EXPECT_THAT(r->damaged[0], HasSubstr("missing from the store"));
  // The list itself damaged is named too.
  raw_sql(path_, "UPDATE runs SET details_json = '{\"figure_names\": 3}' WHERE id = " + run);
  r = s->load_run(*id);
  ASSERT_EQ(r->damaged.size(), 1u);
  EXPECT_THAT(r->damaged[0], HasSubstr("figure_names"));
  // A run stored before the list was kept has nothing to check against.
  raw_sql(path_, "UPDATE runs SET details_json = '{}' WHERE id = " + run);
  EXPECT_TRUE(s->load_run(*id)->damaged.empty());
}

TEST_F(StoreTest, TextThatIsNotUtf8IsStoredWithReplacements) {
  auto s = Database::open(path_);
  NewBaseline b = sample("u", 1);
  b.spec["command"] = {"python3", "caf\xe9.py"};  // a Latin-1 file name
  b.run.details["notes"] = {"line 3: \"na\xffme\""};
  auto id = s->record_baseline(b);
  ASSERT_TRUE(id) << id.error().message();
  auto info = s->find_baseline("u");
  EXPECT_EQ((*info)->spec["command"][1], "caf\xEF\xBF\xBD.py");
  EXPECT_EQ(s->load_run(*id)->details["notes"][0], "line 3: \"na\xEF\xBF\xBDme\"");
}

// An interrupted recording never replaces a golden run; a new baseline keeps it marked.
TEST_F(StoreTest, AnInterruptedRecordingNeverReplacesTheGoldenRun) {
  auto s = Database::open(path_);
  auto golden = s->record_baseline(sample("a", 10));
  ASSERT_TRUE(golden);
  NewBaseline cut = sample("a", 99);
  cut.run.verdict = kVerdictInterrupted;
  auto id = s->record_baseline(cut);
  ASSERT_TRUE(id) << id.error().message();
  auto info = s->find_baseline("a");
  EXPECT_EQ((*info)->golden_run_id, *golden);
  EXPECT_FALSE((*info)->golden_interrupted());
  EXPECT_EQ((*info)->run_count, 2);
  auto run = s->load_run(*id);
  EXPECT_EQ(run->role, "record");
  EXPECT_TRUE(run->interrupted());

  NewBaseline fresh = sample("new", 5);
  fresh.run.verdict = kVerdictInterrupted;
  auto nid = s->record_baseline(fresh);
  ASSERT_TRUE(nid);
  auto n = s->find_baseline("new");
  EXPECT_EQ((*n)->golden_run_id, *nid);
  EXPECT_TRUE((*n)->golden_interrupted());
  EXPECT_TRUE((*s->list_baselines())[1].golden_interrupted());
}

TEST_F(StoreTest, CheckWritableFindsALockBeforeAnythingRuns) {
  auto s = Database::open(path_);
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->check_writable());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  OpenOptions o;
  o.busy_timeout_ms = 200;
  auto other = Database::open(path_, o);
  ASSERT_TRUE(other);
  auto st = other->check_writable();
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().kind(), core::ErrorKind::kEnvironment);
  EXPECT_THAT(st.error().message(), HasSubstr("locked by another process"));
  sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  EXPECT_TRUE(other->check_writable());
}

TEST_F(StoreTest, CheckWritableFindsADamagedFile) {
  {
    auto s = Database::open(path_);
    for (int i = 0; i < 40; ++i) ASSERT_TRUE(s->record_baseline(sample("b" + std::to_string(i), i + 1)));
  }
  // Garbage over the middle of the file: a damaged b-tree page, found by quick_check.
  const auto size = std::filesystem::file_size(path_);
  ASSERT_GT(size, 4u * 4096);
  {
    std::fstream f(path_, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size / 4096 / 2 * 4096));
    f << std::string(4096, '\x5a');
  }
  auto s = Database::open(path_);
  if (!s) {  // damage in the schema page is found at open: also before anything runs
    EXPECT_EQ(s.error().kind(), core::ErrorKind::kBadInput) << s.error().message();
    return;
  }
  auto st = s->check_writable();
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().kind(), core::ErrorKind::kBadInput);
  EXPECT_THAT(st.error().message(), HasSubstr("damaged"));
  EXPECT_THAT(st.error().message(), HasSubstr(path_));
}

// A store this user cannot write: reading needs no write access (list, show, history), and
// opening to write says what is wrong instead of SQLite's "attempt to write a readonly database"
// or "not an error".
TEST_F(StoreTest, AReadOnlyStoreIsReadAndRefusedForWritingByName) {
  {
    auto s = Database::open(path_);
    ASSERT_TRUE(s);
    ASSERT_TRUE(s->record_baseline(sample("r", 3)));
  }
  namespace fs = std::filesystem;
  const fs::path folder = fs::path(path_).parent_path();
  testing::open_to_everyone(folder);
  fs::permissions(path_, fs::perms::group_read | fs::perms::others_read, fs::perm_options::add);
  if (!testing::running_as_root()) {  // as root no mode stops a write: the test drops to nobody
    fs::permissions(path_, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
    fs::permissions(folder,
                    fs::perms::owner_read | fs::perms::owner_exec | fs::perms::others_read | fs::perms::others_exec);
  }
  const std::string path = path_;
  const int code = testing::as_unprivileged([&] {
    OpenOptions ro;
    ro.read_only = true;
    auto r = Database::open(path, ro);
    if (!r) return 10;
    auto list = r->list_baselines();
    if (!list || list->size() != 1 || (*list)[0].name != "r") return 11;
    auto runs = r->runs_of("r");
    if (!runs || runs->size() != 1 || runs->front().figures.size() != 2) return 12;
    auto w = Database::open(path);
    if (w) return 13;
    if (w.error().kind() != core::ErrorKind::kIo) return 14;
    if (w.error().message().find("the store " + path + " is read-only") == std::string::npos) return 15;
    return 0;
  });
  if (!testing::running_as_root()) fs::permissions(folder, fs::perms::owner_all);
  EXPECT_EQ(code, 0) << "10 open read-only, 11 list, 12 runs, 13 opened to write, 14 kind, 15 message";
}

TEST_F(StoreTest, ReadingAnEmptyStoreWithoutWriteAccessFindsNothing) {
  std::filesystem::create_directories(std::filesystem::path(path_).parent_path());
  std::ofstream(path_).close();  // an empty file: an SQLite database without a schema
  OpenOptions ro;
  ro.read_only = true;
  auto r = Database::open(path_, ro);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_TRUE(r->list_baselines()->empty());
  EXPECT_FALSE(*r->find_baseline("x"));
  EXPECT_TRUE(r->read_only());
  auto st = r->check_writable();
  ASSERT_FALSE(st);
  EXPECT_THAT(st.error().message(), HasSubstr("is read-only"));
}

TEST(StorePath, FlagThenEnvironmentThenXdgThenHome) {
  auto keep = [](const char* k) {
    const char* v = std::getenv(k);
    return v != nullptr ? std::optional<std::string>(v) : std::nullopt;
  };
  const auto keep_store = keep("GPUDOC_STORE"), keep_xdg = keep("XDG_DATA_HOME"), keep_home = keep("HOME");
  setenv("GPUDOC_STORE", "/env/store.db", 1);
  setenv("XDG_DATA_HOME", "/xdg", 1);
  setenv("HOME", "/home/u", 1);
  EXPECT_EQ(*default_store_path(std::string("/flag.db")), "/flag.db");
  EXPECT_EQ(*default_store_path(std::nullopt), "/env/store.db");
  unsetenv("GPUDOC_STORE");
  EXPECT_EQ(*default_store_path(std::nullopt), "/xdg/gpudoc/gpudoc.db");
  unsetenv("XDG_DATA_HOME");
  EXPECT_EQ(*default_store_path(std::nullopt), "/home/u/.local/share/gpudoc/gpudoc.db");
  unsetenv("HOME");
  auto none = default_store_path(std::nullopt);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().kind(), core::ErrorKind::kEnvironment);
  auto restore = [](const char* k, const std::optional<std::string>& v) {
    if (v)
      setenv(k, v->c_str(), 1);
    else
      unsetenv(k);
  };
  restore("GPUDOC_STORE", keep_store);
  restore("XDG_DATA_HOME", keep_xdg);
  restore("HOME", keep_home);
}

}  // namespace
}  // namespace gpudoc::store
