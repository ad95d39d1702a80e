#include "store/database.hpp"

#include <fmt/format.h>
#include <sqlite3.h>

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

#include "store/connection.hpp"

namespace gpudoc::store {

using detail::Connection;
using detail::Stmt;

core::Result<std::string> default_store_path(const std::optional<std::string>& flag) {
  if (flag && !flag->empty()) return *flag;
  if (const char* e = std::getenv("GPUDOC_STORE"); e != nullptr && *e != '\0') return std::string(e);
  if (const char* x = std::getenv("XDG_DATA_HOME"); x != nullptr && *x == '/')
    return std::string(x) + "/gpudoc/gpudoc.db";
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0')
    return std::string(h) + "/.local/share/gpudoc/gpudoc.db";
  return core::Error(
      core::ErrorKind::kEnvironment,
      "cannot place the baseline store: neither XDG_DATA_HOME nor HOME is set (give --store PATH or GPUDOC_STORE)");
}

namespace {

// Percent-encodes what an SQLite URI file name may not hold literally.
std::string uri_path(const std::string& path) {
  std::string out;
  for (unsigned char c : path) {
    if (c == '%' || c == '?' || c == '#' || c < 0x20 || c >= 0x7f)
      out += fmt::format("%{:02X}", c);
    else
      out += static_cast<char>(c);
  }
  return out;
}

// Migrations: index i takes the schema from version i to i + 1. Never edit a released step; add one.
const char* const kMigrations[] = {
    R"sql(
CREATE TABLE baselines(
  name TEXT PRIMARY KEY NOT NULL,
  kinds TEXT NOT NULL,
  created_unix_ns INTEGER NOT NULL,
  updated_unix_ns INTEGER NOT NULL,
  spec_json TEXT NOT NULL,
  machine_json TEXT NOT NULL,
  golden_run_id INTEGER
);
CREATE TABLE runs(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  baseline TEXT NOT NULL REFERENCES baselines(name) ON DELETE CASCADE,
  time_unix_ns INTEGER NOT NULL,
  role TEXT NOT NULL CHECK (role IN ('record', 'check', 'confirm')),
  machine_json TEXT NOT NULL,
  verdict TEXT NOT NULL DEFAULT '',
  exit_code INTEGER,
  gpudoc_version TEXT NOT NULL,
  details_json TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX runs_by_baseline ON runs(baseline, time_unix_ns);
CREATE TABLE figures(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  source TEXT NOT NULL,
  unit TEXT NOT NULL,
  direction TEXT,
  median REAL,
  samples_json TEXT NOT NULL,
  PRIMARY KEY (run_id, name)
);
)sql",
    R"sql(
CREATE TABLE results(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL,
  subject TEXT NOT NULL DEFAULT '',
  time_unix_ns INTEGER NOT NULL,
  machine_json TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT '',
  payload_json TEXT NOT NULL
);
CREATE INDEX results_by_kind ON results(kind, time_unix_ns);
)sql",
};
static_assert(std::size(kMigrations) == kSchemaVersion, "one migration per schema version");

// Refuses a file that is not ours before anything writes to it (even the switch to WAL).
// The schema version, the owner mark and the table list are read by one statement, so from one
// snapshot: read apart, a store another process was creating at that moment showed its tables
// with version 0 (read before that process committed) and was refused as foreign.
core::Status check_owner(detail::Connection& c) {
  Stmt s;
  if (auto st = c.prepare(s,
                          "SELECT (SELECT user_version FROM pragma_user_version), "
                          "(SELECT application_id FROM pragma_application_id), "
                          "(SELECT group_concat(name, ', ') FROM sqlite_master WHERE type = 'table')",
                          "reading the store's schema version");
      !st)
    return st;
  if (int rc = sqlite3_step(s.get()); rc != SQLITE_ROW) return c.err(rc, "reading the store's schema version");
  const std::int64_t version = sqlite3_column_int64(s.get(), 0);
  const std::int64_t app = sqlite3_column_int64(s.get(), 1);
  if (app != 0 && app != kApplicationId)
    return core::Error(core::ErrorKind::kBadInput,
                       fmt::format("{}: not a gpudoc store (an SQLite database of another program, application_id "
                                   "0x{:08x}); give another --store",
                                   c.path, static_cast<std::uint32_t>(app)));
  if (version == 0 && !s.is_null(2))
    return core::Error(
        core::ErrorKind::kBadInput,
        fmt::format("{}: not a gpudoc store (an SQLite database with other tables: {}); give another --store", c.path,
                    s.text(2)));
  if (version > kSchemaVersion)
    return core::Error(core::ErrorKind::kBadInput,
                       fmt::format("{}: written by a newer gpudoc (store schema {}; this gpudoc knows up to {}); "
                                   "upgrade gpudoc",
                                   c.path, version, kSchemaVersion));
  return {};
}

core::Status migrate(detail::Connection& c, int target) {
  // Already there (the common case): no write lock needed, so opening never waits for a writer.
  if (auto v = c.pragma_int("PRAGMA user_version"); !v)
    return v.error();
  else if (*v >= target)
    return {};
  if (auto st = c.begin("migrating the schema"); !st) return st;
  auto done = [&](core::Status st) {
    if (!st) c.rollback();
    return st;
  };
  auto version = c.pragma_int("PRAGMA user_version");
  if (!version) return done(version.error());
  if (auto st = check_owner(c); !st) return done(st);
  for (auto v = *version; v < target; ++v) {
    if (auto st = c.exec(kMigrations[v], fmt::format("migrating the store to schema {}", v + 1)); !st) return done(st);
  }
  if (*version < target) {
    if (auto st = c.exec(fmt::format("PRAGMA user_version = {}", target).c_str(), "setting the schema version"); !st)
      return done(st);
    if (auto st = c.exec(fmt::format("PRAGMA application_id = {}", kApplicationId).c_str(), "marking the store"); !st)
      return done(st);
  }
  return c.commit("migrating the schema");
}

}  // namespace

Database::Database(std::unique_ptr<Connection> connection) : impl_(std::move(connection)) {}
Database::Database(Database&&) noexcept = default;
Database& Database::operator=(Database&&) noexcept = default;
Database::~Database() = default;

const std::string& Database::path() const { return impl_->path; }

namespace {

bool is_access_error(int e) { return e == EACCES || e == EROFS || e == EPERM; }

// Before SQLite: a store gpudoc cannot write is said so plainly (SQLite opens a write-protected
// file read-only without a word and fails at the first write, sometimes with "not an error").
core::Status check_write_access(const std::string& path, bool exists) {
  namespace fs = std::filesystem;
  // errno is taken at once: any later call (the -wal file's stat below) may overwrite it.
  const int file_err = exists && ::access(path.c_str(), W_OK) != 0 ? errno : 0;
  if (is_access_error(file_err))
    return core::Error(core::ErrorKind::kIo,
                       fmt::format("the store {} is read-only: {}; record and check write to it (list, "
                                   "show and history only read it)",
                                   path, std::strerror(file_err)));
  std::string dir = fs::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  const int dir_err = ::access(dir.c_str(), W_OK) != 0 ? errno : 0;
  if (is_access_error(dir_err) && !(exists && fs::exists(path + "-wal", ec))) {
    const std::string why = std::strerror(dir_err);
    if (!exists)
      return core::Error(
          core::ErrorKind::kIo,
          fmt::format("the store {} cannot be created: its folder {} is not writable ({})", path, dir, why));
    return core::Error(
        core::ErrorKind::kIo,
        fmt::format("the store {} is read-only: its folder {} is not writable ({}), and SQLite keeps its "
                    "write-ahead log beside the store; record and check write to it (list, show and history "
                    "only read it)",
                    path, dir, why));
  }
  return {};
}

}  // namespace

core::Result<Database> Database::open_read_only(const std::string& path, const OpenOptions& options) {
  auto impl = std::make_unique<Connection>();
  impl->path = path;
  impl->busy_timeout_ms = options.busy_timeout_ms;
  impl->read_only = true;
  auto open_with = [&](const std::string& name, int extra_flags) -> core::Status {
    if (impl->db != nullptr) sqlite3_close_v2(impl->db);
    impl->db = nullptr;
    const int flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_FULLMUTEX | extra_flags;
    if (int rc = sqlite3_open_v2(name.c_str(), &impl->db, flags, nullptr); rc != SQLITE_OK)
      return impl->err(rc, "opening");
    sqlite3_extended_result_codes(impl->db, 1);
    sqlite3_busy_timeout(impl->db, options.busy_timeout_ms);
    return check_owner(*impl);
  };
  auto st = open_with(path, 0);
  if (!st && st.error().kind() == core::ErrorKind::kIo) {
    // A WAL store in a folder this user cannot write: SQLite cannot make the shared-memory file it
    // reads through. Read the file as it is: nobody can be writing it without that folder either.
    if (auto again = open_with("file:" + uri_path(path) + "?immutable=1", SQLITE_OPEN_URI); again) st = again;
  }
  if (!st) return st.error();
  auto version = impl->pragma_int("PRAGMA user_version");
  if (!version) return version.error();
  impl->empty = *version == 0;
  return Database(std::move(impl));
}

core::Result<Database> Database::open(const std::string& path, const OpenOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool exists = fs::exists(path, ec);
  if (!exists) {
    if (!options.create || options.read_only)
      return core::Error(core::ErrorKind::kBadInput, fmt::format("{}: no such store", path));
    const fs::path parent = fs::path(path).parent_path();
    if (!parent.empty()) {
      fs::create_directories(parent, ec);
      if (ec)
        return core::Error(core::ErrorKind::kIo,
                           fmt::format("{}: cannot create its directory: {}", path, ec.message()));
    }
  } else if (fs::is_directory(path, ec)) {
    return core::Error(core::ErrorKind::kBadInput, fmt::format("{}: is a directory, not a store file", path));
  }
  if (options.read_only) return open_read_only(path, options);
  if (auto st = check_write_access(path, exists); !st) return st.error();
  auto impl = std::make_unique<Connection>();
  impl->path = path;
  impl->busy_timeout_ms = options.busy_timeout_ms;
  const int flags = SQLITE_OPEN_READWRITE | (options.create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_FULLMUTEX;
  if (int rc = sqlite3_open_v2(path.c_str(), &impl->db, flags, nullptr); rc != SQLITE_OK)
    return impl->err(rc, "opening");
  sqlite3_extended_result_codes(impl->db, 1);
  sqlite3_busy_timeout(impl->db, options.busy_timeout_ms);
  if (sqlite3_db_readonly(impl->db, "main") == 1) return impl->err(SQLITE_READONLY, "opening for writing");

  // The first statement reads the file: a foreign file fails here with SQLITE_NOTADB.
  if (auto st = check_owner(*impl); !st) return st.error();
  // WAL is a property of the file. Changing it needs an exclusive moment, which the busy handler
  // does not always wait for: retry until the busy timeout.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(options.busy_timeout_ms);
  while (true) {
    Stmt s;
    int rc = sqlite3_prepare_v2(impl->db, "PRAGMA journal_mode=WAL", -1, s.out(), nullptr);
    if (rc == SQLITE_OK) rc = sqlite3_step(s.get());
    if (rc == SQLITE_ROW) {
      if (s.text(0) != "wal")
        return core::Error(core::ErrorKind::kIo,
                           fmt::format("{}: cannot use WAL mode (journal mode stays '{}'): is it on a "
                                       "file system without shared memory (NFS)?",
                                       path, s.text(0)));
      break;
    }
    if ((rc & 0xff) != SQLITE_BUSY || std::chrono::steady_clock::now() > deadline)
      return impl->err(rc, "switching to WAL mode");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // FULL: acknowledged commits survive power loss, not only a killed process (see database.hpp).
  if (auto st = impl->exec("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON", "setting durability"); !st)
    return st.error();
  if (auto st = migrate(*impl, options.target_schema); !st) return st.error();
  return Database(std::move(impl));
}

bool Database::read_only() const { return impl_->read_only; }

core::Status Database::check_writable() {
  const std::string what = "checking that the store can be written before running anything";
  if (impl_->read_only || sqlite3_db_readonly(impl_->db, "main") == 1) return impl_->err(SQLITE_READONLY, what);
  // The write lock, taken and given back: a store locked past the busy timeout fails now, not
  // after the workload ran for an hour.
  if (auto st = impl_->begin(what); !st) return st;
  impl_->rollback();
  Stmt s;
  if (auto st = impl_->prepare(s, "PRAGMA quick_check", what); !st) return st;
  std::string problems;
  int rc = 0;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) problems += (problems.empty() ? "" : "; ") + s.text(0);
  if (rc != SQLITE_DONE) return impl_->err(rc, what);
  if (problems != "ok")
    return core::Error(
        core::ErrorKind::kBadInput,
        fmt::format("{}: the store is damaged (SQLite quick_check: {}); keep a copy and run `sqlite3 {} .recover`",
                    impl_->path, problems.substr(0, 300), impl_->path));
  return {};
}

core::Result<int> Database::schema_version() {
  auto v = impl_->pragma_int("PRAGMA user_version");
  if (!v) return v.error();
  return static_cast<int>(*v);
}

core::Result<std::int64_t> Database::count_rows(const std::string& table) {
  if (table != "baselines" && table != "runs" && table != "figures" && table != "results")
    return core::Error(core::ErrorKind::kInternal, fmt::format("count_rows: unknown table '{}'", table));
  return impl_->pragma_int(fmt::format("SELECT count(*) FROM {}", table).c_str());
}

core::Result<std::string> Database::integrity_check() {
  Stmt s;
  if (auto st = impl_->prepare(s, "PRAGMA integrity_check", "checking integrity"); !st) return st.error();
  std::string out;
  int rc = 0;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) out += (out.empty() ? "" : "\n") + s.text(0);
  if (rc != SQLITE_DONE) return impl_->err(rc, "checking integrity");
  return out;
}

}  // namespace gpudoc::store