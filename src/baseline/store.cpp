#include "baseline/store.hpp"

#include <fmt/format.h>
#include <sqlite3.h>

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <unordered_set>

#include "core/version.hpp"

namespace gpudoc::baseline {

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

// The one place SQLite result codes become gpudoc errors.
core::Error sqlite_error(sqlite3* db, int rc, const std::string& path, const std::string& what) {
  const int primary = rc & 0xff;
  std::string detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  if (detail == "not an error") detail = sqlite3_errstr(rc);  // the connection's last call succeeded: say what rc means
  switch (primary) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return core::Error(core::ErrorKind::kEnvironment,
                         fmt::format("{}: {}: the store is locked by another process (waited for the busy timeout); "
                                     "try again when it is done ({})",
                                     path, what, detail));
    case SQLITE_NOTADB:
      return core::Error(
          core::ErrorKind::kBadInput,
          fmt::format("{}: not a gpudoc store: the file is not an SQLite database ({}); give another --store", path,
                      detail));
    case SQLITE_CORRUPT:
      return core::Error(
          core::ErrorKind::kBadInput,
          fmt::format("{}: the store is damaged ({}); {} failed. Keep a copy and run `sqlite3 {} .recover`", path,
                      detail, what, path));
    case SQLITE_READONLY:
      return core::Error(core::ErrorKind::kIo,
                         fmt::format("the store {} is read-only: {} failed ({}); record and check write "
                                     "to it, list, show and history only read it",
                                     path, what, detail));
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_AUTH: return core::Error(core::ErrorKind::kIo, fmt::format("{}: {}: {}", path, what, detail));
    default:
      return core::Error(core::ErrorKind::kInternal,
                         fmt::format("{}: {}: SQLite error {}: {}", path, what, rc, detail));
  }
}

class Stmt {
 public:
  Stmt() = default;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt() { sqlite3_finalize(s_); }
  sqlite3_stmt** out() { return &s_; }
  sqlite3_stmt* get() const { return s_; }
  void bind(int i, std::int64_t v) { sqlite3_bind_int64(s_, i, v); }
  void bind(int i, double v) { sqlite3_bind_double(s_, i, v); }
  void bind(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void bind_null(int i) { sqlite3_bind_null(s_, i); }
  std::string text(int col) const {
    const auto* p = sqlite3_column_text(s_, col);
    return p != nullptr
               ? std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(sqlite3_column_bytes(s_, col)))
               : std::string();
  }
  std::int64_t i64(int col) const { return sqlite3_column_int64(s_, col); }
  bool is_null(int col) const { return sqlite3_column_type(s_, col) == SQLITE_NULL; }

 private:
  sqlite3_stmt* s_ = nullptr;
};

nlohmann::json parse_or_null(const std::string& s) {
  auto j = nlohmann::json::parse(s, nullptr, false);
  return j.is_discarded() ? nlohmann::json() : j;
}

// Stored JSON: text from workloads may hold bytes that are not UTF-8; they are replaced (U+FFFD),
// never a reason to lose the run.
std::string dump(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

// Why a figure's stored samples cannot be trusted, or empty: samples_json must be a non-empty
// JSON array of finite numbers (gpudoc writes nothing else).
std::string samples_damage(const std::string& text, const nlohmann::json& samples) {
  if (samples.is_discarded()) return fmt::format("samples are not valid JSON (cut or edited?): {}", text.substr(0, 60));
  if (!samples.is_array()) return fmt::format("samples are not a JSON array: {}", text.substr(0, 60));
  if (samples.empty()) return "no samples";
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const auto& v = samples[i];
    if (!v.is_number()) return fmt::format("sample {} is {}, not a number", i + 1, dump(v).substr(0, 40));
    if (!std::isfinite(v.get<double>())) return fmt::format("sample {} is not a finite number", i + 1);
  }
  return {};
}

// The run's details with the names of the figures it stored ("figure_names"): a figure row lost
// later (deleted, a damaged page dropped by a recovery) is then found by load_run, not read as a
// figure the run never had.
nlohmann::json details_with_figure_names(const NewRun& r) {
  nlohmann::json details = r.details.is_object() ? r.details : nlohmann::json::object();
  nlohmann::json names = nlohmann::json::array();
  for (const auto& fig : r.figures) names.push_back(fig.name);
  details[kFigureNamesKey] = std::move(names);
  return details;
}

// What load_run adds to `damaged` for each name in the run's "figure_names" with no figure row.
void note_lost_figures(StoredRun& r) {
  if (!r.details.is_object() || !r.details.contains(kFigureNamesKey)) return;  // stored before the list was kept
  const auto& names = r.details[kFigureNamesKey];
  if (!names.is_array()) {
    r.damaged.push_back(fmt::format("the run's \"{}\" is not a list of names", kFigureNamesKey));
    return;
  }
  std::unordered_set<std::string_view> have;
  for (const auto& fig : r.figures) have.insert(fig.name);
  for (const auto& name : names) {
    if (!name.is_string()) {
      r.damaged.push_back(
          fmt::format("the run's \"{}\" holds {}, not a name", kFigureNamesKey, dump(name).substr(0, 40)));
      continue;
    }
    if (have.count(name.get_ref<const std::string&>()) == 0)
      r.damaged.push_back(
          fmt::format("figure '{}': stored with the run, now missing from the store (its row was deleted?)",
                      name.get<std::string>()));
  }
}

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

}  // namespace

struct Store::Impl {
  sqlite3* db = nullptr;
  std::string path;
  int busy_timeout_ms = 10000;
  bool read_only = false;
  bool empty = false;  // read-only and no schema yet: nothing stored
  ~Impl() {
    if (db != nullptr) sqlite3_close_v2(db);
  }

  core::Error err(int rc, const std::string& what) const { return sqlite_error(db, rc, path, what); }

  core::Status exec(const char* sql, const std::string& what) {
    char* msg = nullptr;
    const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &msg);
    sqlite3_free(msg);
    if (rc != SQLITE_OK) return err(rc, what);
    return {};
  }

  core::Status prepare(Stmt& s, const char* sql, const std::string& what) {
    const int rc = sqlite3_prepare_v2(db, sql, -1, s.out(), nullptr);
    if (rc != SQLITE_OK) return err(rc, what);
    return {};
  }

  core::Result<std::int64_t> pragma_int(const char* sql) {
    Stmt s;
    if (auto st = prepare(s, sql, sql); !st) return st.error();
    const int rc = sqlite3_step(s.get());
    if (rc != SQLITE_ROW) return err(rc, sql);
    return s.i64(0);
  }

  // BEGIN IMMEDIATE: the write lock up front (the busy handler waits for it).
  core::Status begin(const std::string& what) { return exec("BEGIN IMMEDIATE", what); }
  core::Status commit(const std::string& what) {
    auto st = exec("COMMIT", what);
    if (!st) (void)exec("ROLLBACK", what);
    return st;
  }
  void rollback() { (void)exec("ROLLBACK", "rollback"); }

  core::Result<bool> baseline_exists(const std::string& name, const std::string& what) {
    Stmt s;
    if (auto st = prepare(s, "SELECT 1 FROM baselines WHERE name = ?1", what); !st) return st.error();
    s.bind(1, name);
    const int rc = sqlite3_step(s.get());
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return err(rc, what);
  }

  core::Result<std::int64_t> insert_run(const NewRun& r) {
    Stmt s;
    if (auto st =
            prepare(s,
                    "INSERT INTO runs(baseline, time_unix_ns, role, machine_json, verdict, exit_code, gpudoc_version, "
                    "details_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                    "adding a run");
        !st)
      return st.error();
    s.bind(1, r.baseline);
    s.bind(2, r.time_unix_ns);
    s.bind(3, r.role);
    s.bind(4, dump(to_json(r.machine)));
    s.bind(5, r.verdict);
    if (r.exit_code)
      s.bind(6, static_cast<std::int64_t>(*r.exit_code));
    else
      s.bind_null(6);
    s.bind(7, std::string(core::kVersion));
    s.bind(8, dump(details_with_figure_names(r)));
    if (int rc = sqlite3_step(s.get()); rc != SQLITE_DONE) return err(rc, "adding a run");
    const std::int64_t id = sqlite3_last_insert_rowid(db);
    Stmt f;
    if (auto st = prepare(f,
                          "INSERT INTO figures(run_id, name, source, unit, direction, median, samples_json) "
                          "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                          "adding figures");
        !st)
      return st.error();
    for (const auto& fig : r.figures) {
      sqlite3_reset(f.get());
      f.bind(1, id);
      f.bind(2, fig.name);
      f.bind(3, fig.source);
      f.bind(4, fig.unit);
      if (fig.direction)
        f.bind(5, std::string(to_string(*fig.direction)));
      else
        f.bind_null(5);
      if (fig.samples.empty())
        f.bind_null(6);
      else
        f.bind(6, median(fig.samples));
      f.bind(7, dump(nlohmann::json(fig.samples)));
      if (int rc = sqlite3_step(f.get()); rc != SQLITE_DONE)
        return err(rc, fmt::format("adding figure '{}'", fig.name));
    }
    return id;
  }

  // Inside an open transaction: adds the run and commits, or rolls back on a failed insert.
  core::Result<std::int64_t> insert_run_and_commit(const NewRun& r, const std::string& what) {
    auto id = insert_run(r);
    if (!id) {
      rollback();
      return id.error();
    }
    if (auto st = commit(what); !st) return st.error();
    return *id;
  }

  // Refuses a file that is not ours before anything writes to it (even the switch to WAL).
  // The schema version, the owner mark and the table list are read by one statement, so from one
  // snapshot: read apart, a store another process was creating at that moment showed its tables
  // with version 0 (read before that process committed) and was refused as foreign.
  core::Status check_owner() {
    Stmt s;
    if (auto st = prepare(s,
                          "SELECT (SELECT user_version FROM pragma_user_version), "
                          "(SELECT application_id FROM pragma_application_id), "
                          "(SELECT group_concat(name, ', ') FROM sqlite_master WHERE type = 'table')",
                          "reading the store's schema version");
        !st)
      return st;
    if (int rc = sqlite3_step(s.get()); rc != SQLITE_ROW) return err(rc, "reading the store's schema version");
    const std::int64_t version = sqlite3_column_int64(s.get(), 0);
    const std::int64_t app = sqlite3_column_int64(s.get(), 1);
    if (app != 0 && app != kApplicationId)
      return core::Error(core::ErrorKind::kBadInput,
                         fmt::format("{}: not a gpudoc store (an SQLite database of another program, application_id "
                                     "0x{:08x}); give another --store",
                                     path, static_cast<std::uint32_t>(app)));
    if (version == 0 && !s.is_null(2))
      return core::Error(
          core::ErrorKind::kBadInput,
          fmt::format("{}: not a gpudoc store (an SQLite database with other tables: {}); give another --store", path,
                      s.text(2)));
    if (version > kSchemaVersion)
      return core::Error(core::ErrorKind::kBadInput,
                         fmt::format("{}: written by a newer gpudoc (store schema {}; this gpudoc knows up to {}); "
                                     "upgrade gpudoc",
                                     path, version, kSchemaVersion));
    return {};
  }

  core::Status migrate(int target) {
    // Already there (the common case): no write lock needed, so opening never waits for a writer.
    if (auto v = pragma_int("PRAGMA user_version"); !v)
      return v.error();
    else if (*v >= target)
      return {};
    if (auto st = begin("migrating the schema"); !st) return st;
    auto done = [&](core::Status st) {
      if (!st) rollback();
      return st;
    };
    auto version = pragma_int("PRAGMA user_version");
    if (!version) return done(version.error());
    if (auto st = check_owner(); !st) return done(st);
    for (auto v = *version; v < target; ++v) {
      if (auto st = exec(kMigrations[v], fmt::format("migrating the store to schema {}", v + 1)); !st) return done(st);
    }
    if (*version < target) {
      if (auto st = exec(fmt::format("PRAGMA user_version = {}", target).c_str(), "setting the schema version"); !st)
        return done(st);
      if (auto st = exec(fmt::format("PRAGMA application_id = {}", kApplicationId).c_str(), "marking the store"); !st)
        return done(st);
    }
    return commit("migrating the schema");
  }
};

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() = default;

const std::string& Store::path() const { return impl_->path; }

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

core::Result<Store> Store::open_read_only(const std::string& path, const OpenOptions& options) {
  auto impl = std::make_unique<Impl>();
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
    return impl->check_owner();
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
  return Store(std::move(impl));
}

core::Result<Store> Store::open(const std::string& path, const OpenOptions& options) {
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
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->busy_timeout_ms = options.busy_timeout_ms;
  const int flags = SQLITE_OPEN_READWRITE | (options.create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_FULLMUTEX;
  if (int rc = sqlite3_open_v2(path.c_str(), &impl->db, flags, nullptr); rc != SQLITE_OK)
    return impl->err(rc, "opening");
  sqlite3_extended_result_codes(impl->db, 1);
  sqlite3_busy_timeout(impl->db, options.busy_timeout_ms);
  if (sqlite3_db_readonly(impl->db, "main") == 1) return impl->err(SQLITE_READONLY, "opening for writing");

  // The first statement reads the file: a foreign file fails here with SQLITE_NOTADB.
  if (auto st = impl->check_owner(); !st) return st.error();
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
  // FULL: acknowledged commits survive power loss, not only a killed process (see store.hpp).
  if (auto st = impl->exec("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON", "setting durability"); !st)
    return st.error();
  if (auto st = impl->migrate(options.target_schema); !st) return st.error();
  return Store(std::move(impl));
}

bool Store::read_only() const { return impl_->read_only; }

core::Status Store::check_writable() {
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

core::Result<int> Store::schema_version() {
  auto v = impl_->pragma_int("PRAGMA user_version");
  if (!v) return v.error();
  return static_cast<int>(*v);
}

core::Result<std::int64_t> Store::record_baseline(const NewBaseline& b) {
  const std::string what = fmt::format("recording baseline '{}'", b.name);
  if (auto st = impl_->begin(what); !st) return st.error();
  NewRun run = b.run;
  run.baseline = b.name;
  run.role = "record";
  if (run.verdict == kVerdictInterrupted) {
    // Never the golden run of a baseline that has one: into its history only.
    auto exists = impl_->baseline_exists(b.name, what);
    if (!exists) {
      impl_->rollback();
      return exists.error();
    }
    if (*exists) {
      return impl_->insert_run_and_commit(run, what);
    }
  }
  Stmt s;
  if (auto st = impl_->prepare(
          s,
          "INSERT INTO baselines(name, kinds, created_unix_ns, updated_unix_ns, spec_json, machine_json) "
          "VALUES (?1, ?2, ?3, ?3, ?4, ?5) ON CONFLICT(name) DO UPDATE SET kinds = excluded.kinds, "
          "updated_unix_ns = excluded.updated_unix_ns, spec_json = excluded.spec_json, "
          "machine_json = excluded.machine_json",
          what);
      !st) {
    impl_->rollback();
    return st.error();
  }
  s.bind(1, b.name);
  s.bind(2, b.kinds);
  s.bind(3, b.run.time_unix_ns);
  s.bind(4, dump(b.spec));
  s.bind(5, dump(to_json(b.run.machine)));
  if (int rc = sqlite3_step(s.get()); rc != SQLITE_DONE) {
    impl_->rollback();
    return impl_->err(rc, what);
  }
  auto id = impl_->insert_run(run);
  if (!id) {
    impl_->rollback();
    return id.error();
  }
  Stmt g;
  if (auto st = impl_->prepare(g, "UPDATE baselines SET golden_run_id = ?1 WHERE name = ?2", what); !st) {
    impl_->rollback();
    return st.error();
  }
  g.bind(1, *id);
  g.bind(2, b.name);
  if (int rc = sqlite3_step(g.get()); rc != SQLITE_DONE) {
    impl_->rollback();
    return impl_->err(rc, what);
  }
  if (auto st = impl_->commit(what); !st) return st.error();
  return *id;
}

core::Result<std::int64_t> Store::add_run(const NewRun& run) {
  const std::string what = fmt::format("adding a {} run to '{}'", run.role, run.baseline);
  if (auto st = impl_->begin(what); !st) return st.error();
  auto exists = impl_->baseline_exists(run.baseline, what);
  if (!exists || !*exists) {
    impl_->rollback();
    if (!exists) return exists.error();
    return core::Error(core::ErrorKind::kUsage, fmt::format("no baseline named '{}'", run.baseline));
  }
  return impl_->insert_run_and_commit(run, what);
}

core::Result<std::int64_t> Store::add_result(const std::string& kind, const std::string& subject,
                                             std::int64_t time_unix_ns, const MachineContext& machine,
                                             const std::string& status, const nlohmann::json& payload) {
  const std::string what = fmt::format("adding a {} result", kind);
  if (auto st = impl_->begin(what); !st) return st.error();
  Stmt s;
  if (auto st = impl_->prepare(s,
                               "INSERT INTO results(kind, subject, time_unix_ns, machine_json, status, payload_json) "
                               "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                               what);
      !st) {
    impl_->rollback();
    return st.error();
  }
  s.bind(1, kind);
  s.bind(2, subject);
  s.bind(3, time_unix_ns);
  s.bind(4, dump(to_json(machine)));
  s.bind(5, status);
  s.bind(6, dump(payload));
  if (int rc = sqlite3_step(s.get()); rc != SQLITE_DONE) {
    impl_->rollback();
    return impl_->err(rc, what);
  }
  const std::int64_t id = sqlite3_last_insert_rowid(impl_->db);
  if (auto st = impl_->commit(what); !st) return st.error();
  return id;
}

core::Result<std::vector<StoredResult>> Store::results_since(const std::string& kind, std::int64_t since_unix_ns) {
  const std::string what = fmt::format("reading {} results", kind);
  Stmt s;
  if (auto st =
          impl_->prepare(s,
                         "SELECT id, kind, subject, time_unix_ns, machine_json, status, payload_json FROM results "
                         "WHERE kind = ?1 AND time_unix_ns >= ?2 ORDER BY time_unix_ns, id",
                         what);
      !st) {
    return st.error();
  }
  s.bind(1, kind);
  s.bind(2, since_unix_ns);
  std::vector<StoredResult> out;
  int rc = 0;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    StoredResult r;
    r.id = s.i64(0);
    r.kind = s.text(1);
    r.subject = s.text(2);
    r.time_unix_ns = s.i64(3);
    r.machine = machine_from_json(parse_or_null(s.text(4)));
    r.status = s.text(5);
    r.payload = parse_or_null(s.text(6));
    out.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) return impl_->err(rc, what);
  return out;
}

namespace {
constexpr const char* kBaselineColumns =
    "SELECT b.name, b.kinds, b.created_unix_ns, b.updated_unix_ns, b.spec_json, b.machine_json, b.golden_run_id, "
    "(SELECT count(*) FROM runs r WHERE r.baseline = b.name), "
    "(SELECT g.verdict FROM runs g WHERE g.id = b.golden_run_id) FROM baselines b";

BaselineInfo baseline_from_row(const Stmt& s) {
  BaselineInfo b;
  b.name = s.text(0);
  b.kinds = s.text(1);
  b.created_unix_ns = s.i64(2);
  b.updated_unix_ns = s.i64(3);
  b.spec = parse_or_null(s.text(4));
  b.machine = machine_from_json(parse_or_null(s.text(5)));
  b.golden_run_id = s.is_null(6) ? 0 : s.i64(6);
  b.run_count = s.i64(7);
  b.golden_verdict = s.text(8);
  return b;
}
}  // namespace

core::Result<std::optional<BaselineInfo>> Store::find_baseline(const std::string& name) {
  if (impl_->empty) return std::optional<BaselineInfo>();
  Stmt s;
  if (auto st = impl_->prepare(s, (std::string(kBaselineColumns) + " WHERE b.name = ?1").c_str(), "reading baselines");
      !st)
    return st.error();
  s.bind(1, name);
  const int rc = sqlite3_step(s.get());
  if (rc == SQLITE_DONE) return std::optional<BaselineInfo>();
  if (rc != SQLITE_ROW) return impl_->err(rc, "reading baselines");
  return std::optional<BaselineInfo>(baseline_from_row(s));
}

core::Result<std::vector<BaselineInfo>> Store::list_baselines() {
  if (impl_->empty) return std::vector<BaselineInfo>();
  Stmt s;
  if (auto st = impl_->prepare(s, (std::string(kBaselineColumns) + " ORDER BY b.name").c_str(), "listing baselines");
      !st)
    return st.error();
  std::vector<BaselineInfo> out;
  int rc = 0;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) out.push_back(baseline_from_row(s));
  if (rc != SQLITE_DONE) return impl_->err(rc, "listing baselines");
  return out;
}

core::Result<StoredRun> Store::load_run(std::int64_t id) {
  Stmt s;
  if (auto st =
          impl_->prepare(s,
                         "SELECT id, baseline, time_unix_ns, role, machine_json, verdict, exit_code, gpudoc_version, "
                         "details_json FROM runs WHERE id = ?1",
                         "reading a run");
      !st)
    return st.error();
  s.bind(1, id);
  int rc = sqlite3_step(s.get());
  if (rc == SQLITE_DONE) return core::Error(core::ErrorKind::kBadInput, fmt::format("{}: no run {}", impl_->path, id));
  if (rc != SQLITE_ROW) return impl_->err(rc, "reading a run");
  StoredRun r;
  r.id = s.i64(0);
  r.baseline = s.text(1);
  r.time_unix_ns = s.i64(2);
  r.role = s.text(3);
  const auto machine = parse_or_null(s.text(4));
  if (!machine.is_object()) r.damaged.push_back("the run's machine context is not a JSON object");
  r.machine = machine_from_json(machine);
  r.verdict = s.text(5);
  if (!s.is_null(6)) r.exit_code = static_cast<int>(s.i64(6));
  r.gpudoc_version = s.text(7);
  r.details = parse_or_null(s.text(8));
  Stmt f;
  if (auto st = impl_->prepare(
          f, "SELECT name, source, unit, direction, samples_json FROM figures WHERE run_id = ?1 ORDER BY rowid",
          "reading figures");
      !st)
    return st.error();
  f.bind(1, id);
  while ((rc = sqlite3_step(f.get())) == SQLITE_ROW) {
    Figure fig;
    fig.name = f.text(0);
    fig.source = f.text(1);
    fig.unit = f.text(2);
    if (!f.is_null(3)) {
      fig.direction = direction_from_string(f.text(3));
      // An unreadable direction would quietly stop the figure from gating.
      if (!fig.direction)
        r.damaged.push_back(
            fmt::format("figure '{}': direction '{}' is not lower, higher or unknown", fig.name, f.text(3)));
    }
    const std::string text = f.text(4);
    const auto samples = nlohmann::json::parse(text, nullptr, false);
    if (const std::string damage = samples_damage(text, samples); !damage.empty())
      r.damaged.push_back(fmt::format("figure '{}': {}", fig.name, damage));
    if (samples.is_array())
      for (const auto& v : samples)
        if (v.is_number() && std::isfinite(v.get<double>())) fig.samples.push_back(v.get<double>());
    r.figures.push_back(std::move(fig));
  }
  if (rc != SQLITE_DONE) return impl_->err(rc, "reading figures");
  note_lost_figures(r);
  return r;
}

core::Result<std::vector<StoredRun>> Store::runs_of(const std::string& name, int limit) {
  if (impl_->empty) return std::vector<StoredRun>();
  Stmt s;
  const std::string sql =
      limit > 0
          ? fmt::format(
                "SELECT id FROM (SELECT id FROM runs WHERE baseline = ?1 ORDER BY id DESC LIMIT {}) ORDER BY id", limit)
          : std::string("SELECT id FROM runs WHERE baseline = ?1 ORDER BY id");
  if (auto st = impl_->prepare(s, sql.c_str(), "reading runs"); !st) return st.error();
  s.bind(1, name);
  std::vector<std::int64_t> ids;
  int rc = 0;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) ids.push_back(s.i64(0));
  if (rc != SQLITE_DONE) return impl_->err(rc, "reading runs");
  std::vector<StoredRun> out;
  for (auto id : ids) {
    auto r = load_run(id);
    if (!r) return r.error();
    out.push_back(std::move(*r));
  }
  return out;
}

core::Result<bool> Store::run_exists(std::int64_t id) {
  Stmt s;
  if (auto st = impl_->prepare(s, "SELECT 1 FROM runs WHERE id = ?1", "reading runs"); !st) return st.error();
  s.bind(1, id);
  const int rc = sqlite3_step(s.get());
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return impl_->err(rc, "reading runs");
}

core::Result<std::int64_t> Store::count_rows(const std::string& table) {
  if (table != "baselines" && table != "runs" && table != "figures" && table != "results")
    return core::Error(core::ErrorKind::kInternal, fmt::format("count_rows: unknown table '{}'", table));
  return impl_->pragma_int(fmt::format("SELECT count(*) FROM {}", table).c_str());
}

core::Result<std::string> Store::integrity_check() {
  Stmt s;
  if (auto st = impl_->prepare(s, "PRAGMA integrity_check", "checking integrity"); !st) return st.error();
  std::string out;
  int rc = 0;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) out += (out.empty() ? "" : "\n") + s.text(0);
  if (rc != SQLITE_DONE) return impl_->err(rc, "checking integrity");
  return out;
}

}  // namespace gpudoc::baseline
