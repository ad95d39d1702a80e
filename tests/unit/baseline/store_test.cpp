// The SQLite store: round trips, migrations, foreign/corrupt/newer files, a locked database.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "baseline/store.hpp"
#include "support/temp_dir.hpp"

namespace gpudoc::baseline {
namespace {

using ::testing::HasSubstr;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_ + "/sub/dir/gpudoc.db";   // the directory is created on open
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

  static std::string raw_exec(const std::string& path, const std::string& sql) {
    sqlite3* db = nullptr;
    sqlite3_open(path.c_str(), &db);
    char* err = nullptr;
    std::string out;
    sqlite3_exec(
        db, sql.c_str(),
        [](void* o, int n, char** v, char**) {
          for (int i = 0; i < n; ++i) *static_cast<std::string*>(o) += (v[i] != nullptr ? v[i] : "NULL") + std::string("|");
          return 0;
        },
        &out, &err);
    if (err != nullptr) out = std::string("ERR:") + err;
    sqlite3_free(err);
    sqlite3_close(db);
    return out;
  }

  testing::TempDir tmp_{"gpudoc-store"};
  std::string dir_ = tmp_.str();
  std::string path_;
};

TEST_F(StoreTest, RoundTrip) {
  auto s = Store::open(path_);
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(*s->schema_version(), kSchemaVersion);
  EXPECT_EQ(raw_exec(path_, "PRAGMA journal_mode"), "wal|");
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
  EXPECT_EQ(raw_exec(path_, "SELECT median FROM figures WHERE name = 'step_ms'"), "41.0|");
  EXPECT_FALSE(*s->find_baseline("nope"));
  EXPECT_EQ(*s->integrity_check(), "ok");
}

TEST_F(StoreTest, ReRecordingKeepsHistoryAndMovesTheGoldenRun) {
  auto s = Store::open(path_);
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
  EXPECT_EQ(s->runs_of("a", 2)->front().id, *c);   // the last two, oldest first
  ASSERT_TRUE(s->record_baseline(sample("b", 1)));
  auto list = s->list_baselines();
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].name, "a");
}

TEST_F(StoreTest, AddRunToUnknownBaselineIsAUsageError) {
  auto s = Store::open(path_);
  NewRun r;
  r.baseline = "ghost";
  r.role = "check";
  auto id = s->add_run(r);
  ASSERT_FALSE(id);
  EXPECT_EQ(id.error().kind(), core::ErrorKind::kUsage);
  EXPECT_THAT(id.error().message(), HasSubstr("no baseline named 'ghost'"));
}

TEST_F(StoreTest, GenericResults) {
  auto s = Store::open(path_);
  auto id = s->add_result("health", "GPU-1", 5, MachineContext{}, "pass", {{"checks", 12}});
  ASSERT_TRUE(id) << id.error().message();
  EXPECT_EQ(*s->count_rows("results"), 1);
  EXPECT_EQ(raw_exec(path_, "SELECT kind, status, payload_json FROM results"), "health|pass|{\"checks\":12}|");
}

TEST_F(StoreTest, MigratesFromVersionOneKeepingData) {
  {
    OpenOptions o;
    o.target_schema = 1;
    auto s = Store::open(path_, o);
    ASSERT_TRUE(s) << s.error().message();
    EXPECT_EQ(*s->schema_version(), 1);
    ASSERT_TRUE(s->record_baseline(sample("old", 5)));
  }
  EXPECT_THAT(raw_exec(path_, "SELECT * FROM results"), HasSubstr("no such table"));
  auto s = Store::open(path_);
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(*s->schema_version(), 2);
  auto info = s->find_baseline("old");
  ASSERT_TRUE(info && *info);
  EXPECT_EQ(s->load_run((*info)->golden_run_id)->figures.size(), 2u);
  EXPECT_TRUE(s->add_result("health", "", 1, {}, "pass", nlohmann::json::object()));
  EXPECT_EQ(raw_exec(path_, "PRAGMA application_id"), std::to_string(kApplicationId) + "|");
}

TEST_F(StoreTest, ANonSqliteFileIsRefusedByName) {
  std::filesystem::create_directories(std::filesystem::path(path_).parent_path());
  std::ofstream(path_) << "this is a CSV file, really\n1,2,3\n" << std::string(5000, 'x');
  auto s = Store::open(path_);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().kind(), core::ErrorKind::kBadInput);
  EXPECT_THAT(s.error().message(), HasSubstr(path_));
  EXPECT_THAT(s.error().message(), HasSubstr("not an SQLite database"));
}

TEST_F(StoreTest, AnotherProgramsDatabaseIsRefusedAndLeftAlone) {
  std::filesystem::create_directories(std::filesystem::path(path_).parent_path());
  raw_exec(path_, "CREATE TABLE users(id INTEGER, name TEXT); INSERT INTO users VALUES (1, 'x')");
  auto s = Store::open(path_);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().kind(), core::ErrorKind::kBadInput);
  EXPECT_THAT(s.error().message(), HasSubstr("other tables: users"));
  EXPECT_EQ(raw_exec(path_, "PRAGMA journal_mode"), "delete|");   // not switched to WAL
  raw_exec(path_, "PRAGMA application_id = 1234");
  auto t = Store::open(path_);
  ASSERT_FALSE(t);
  EXPECT_THAT(t.error().message(), HasSubstr("another program"));
}

TEST_F(StoreTest, ANewerSchemaIsRefused) {
  { ASSERT_TRUE(Store::open(path_)); }
  raw_exec(path_, "PRAGMA user_version = 99");
  auto s = Store::open(path_);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().kind(), core::ErrorKind::kBadInput);
  EXPECT_THAT(s.error().message(), HasSubstr("newer gpudoc (store schema 99; this gpudoc knows up to 2)"));
}

TEST_F(StoreTest, ADirectoryIsRefused) {
  std::filesystem::create_directories(path_);
  auto s = Store::open(path_);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().message(), HasSubstr("is a directory"));
}

TEST_F(StoreTest, ALockedStoreFailsClearlyAfterTheBusyTimeout) {
  auto writer = Store::open(path_);
  ASSERT_TRUE(writer);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);   // another writer holds the lock

  OpenOptions o;
  o.busy_timeout_ms = 200;
  auto other = Store::open(path_, o);   // already migrated: opening needs no write lock
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
    if (v) setenv(k, v->c_str(), 1);
    else unsetenv(k);
  };
  restore("GPUDOC_STORE", keep_store);
  restore("XDG_DATA_HOME", keep_xdg);
  restore("HOME", keep_home);
}

}  // namespace
}  // namespace gpudoc::baseline
