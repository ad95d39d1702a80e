// gpudoc::store database — one SQLite file in the user's data directory that keeps every baseline
// and check run (store/baseline_runs.hpp) and generic results, among them the health and guard
// history (store/results.hpp, store/health_history.hpp, store/guard_history.hpp), each with its
// machine context. A Database is the connection: it opens the file, migrates its schema and checks
// it (database.cpp); the functions of each concern are implemented in that concern's source file.
//
//   auto path = store::default_store_path(flag);                           // Result<string>
//   auto db = store::Database::open(*path);                                // Result<Database>
//   auto id = db->record_baseline(new_baseline);                           // acknowledged: committed
//   auto b = db->find_baseline("resnet");                                  // Result<optional<BaselineInfo>>
//
// Durability: WAL journal, synchronous=FULL — each COMMIT fsyncs the WAL before it returns, so a
// write that returned (an acknowledged write) survives kill -9 and power loss as SQLite promises
// (synchronous=NORMAL in WAL mode would survive kill -9 but could lose the last commits on power
// loss). A write is acknowledged only when its COMMIT returned: every write function returns only
// then. Concurrency: each write is one BEGIN IMMEDIATE transaction (the write lock taken up front,
// so two writers never deadlock on a lock upgrade) and a busy timeout lets concurrent writers wait
// for each other instead of failing; a writer still blocked after the timeout gets a clear
// kEnvironment error ("locked by another process").
//
// Schema (PRAGMA user_version, migrations applied in order on open; PRAGMA application_id marks the
// file as gpudoc's):
//   1: baselines(name PK, kinds, created/updated, spec_json, machine_json, golden_run_id)
//      runs(id PK, baseline -> baselines, time, role record|check|confirm, machine_json, verdict,
//           exit_code, gpudoc_version, details_json)
//      figures(run_id -> runs, name, source, unit, direction, median, samples_json; PK(run_id, name))
//   2: results(id PK, kind, subject, time, machine_json, status, payload_json): generic results
//      (health checks and what comes later), one JSON payload each.
//
// Reading needs no write access: OpenOptions::read_only opens a store in a read-only file or
// folder (list, show, history). Before minutes of measuring, check_writable() says whether a write
// would succeed now (not read-only, not locked past the busy timeout, not damaged).
//
// A Database is one connection: use it from one thread at a time. Several processes may open the
// same file at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "store/baseline_runs.hpp"
#include "store/records.hpp"
#include "store/results.hpp"

namespace gpudoc::store {

inline constexpr int kSchemaVersion = 2;
inline constexpr std::int32_t kApplicationId = 0x47504443;  // "GPDC"

// --store, else $GPUDOC_STORE, else $XDG_DATA_HOME/gpudoc/gpudoc.db, else
// ~/.local/share/gpudoc/gpudoc.db. Errors: kEnvironment when neither XDG_DATA_HOME nor HOME is set.
[[nodiscard]] core::Result<std::string> default_store_path(const std::optional<std::string>& flag);

struct OpenOptions {
  int busy_timeout_ms = 10000;         // how long a writer waits for another
  int target_schema = kSchemaVersion;  // tests migrate step by step; production: the latest
  bool create = true;                  // false: a missing file is an error (kBadInput)
  // Open for reading only: works in a read-only file or folder, never migrates or writes (a store
  // of an older schema is read as it is; one of a newer schema is refused).
  bool read_only = false;
};

namespace detail {
struct Connection;  // the SQLite handle and its helpers (store/connection.hpp, inside store/ only)
}

class Database {
 public:
  // Opens (creating the file and its directory when allowed) and migrates to the target schema.
  // Errors: kBadInput for a file that is not an SQLite database, is damaged, belongs to another
  // program, or was written by a newer gpudoc; kEnvironment when locked past the busy timeout;
  // kIo when it cannot be created or read, or (unless read_only) cannot be written: "the store
  // PATH is read-only: ...". Messages name the path.
  [[nodiscard]] static core::Result<Database> open(const std::string& path, const OpenOptions& options = {});
  Database(Database&&) noexcept;
  Database& operator=(Database&&) noexcept;
  ~Database();

  [[nodiscard]] const std::string& path() const;
  [[nodiscard]] core::Result<int> schema_version();
  [[nodiscard]] bool read_only() const;

  // Whether a write would succeed now: the store is writable, its write lock can be taken within
  // the busy timeout (taken and released at once), and SQLite's quick_check finds no damage.
  // Errors: kIo (read-only), kEnvironment (locked), kBadInput (damaged), each naming the path.
  [[nodiscard]] core::Status check_writable();

  // Rows in one of the store's tables ("baselines", "runs", "figures", "results").
  [[nodiscard]] core::Result<std::int64_t> count_rows(const std::string& table);
  // PRAGMA integrity_check: "ok" or SQLite's list of problems.
  [[nodiscard]] core::Result<std::string> integrity_check();

  // Baselines and their runs (baseline_runs.cpp; the records and their rules: baseline_runs.hpp).

  // Creates the baseline or replaces its golden run (older runs stay in its history), in one
  // transaction. Returns the new run's id once COMMIT returned. An interrupted run (verdict
  // "interrupted") of an existing baseline is only added to its history: the golden run stays.
  [[nodiscard]] core::Result<std::int64_t> record_baseline(const NewBaseline& b);
  // Adds a check or confirm run to an existing baseline. Errors: kUsage for an unknown baseline.
  [[nodiscard]] core::Result<std::int64_t> add_run(const NewRun& run);
  [[nodiscard]] core::Result<std::optional<BaselineInfo>> find_baseline(const std::string& name);
  [[nodiscard]] core::Result<std::vector<BaselineInfo>> list_baselines();
  // Errors: kBadInput when there is no such run.
  [[nodiscard]] core::Result<StoredRun> load_run(std::int64_t id);
  // Runs of a baseline, oldest first (the last `limit` when limit > 0).
  [[nodiscard]] core::Result<std::vector<StoredRun>> runs_of(const std::string& name, int limit = 0);
  [[nodiscard]] core::Result<bool> run_exists(std::int64_t id);

  // Generic results: the health and guard history (results.cpp; the record: results.hpp).

  // A generic result (kind "health", "guard", ...). Returns its id once committed.
  [[nodiscard]] core::Result<std::int64_t> add_result(const std::string& kind, const std::string& subject,
                                                      std::int64_t time_unix_ns, const MachineContext& machine,
                                                      const std::string& status, const nlohmann::json& payload);
  // Generic results of `kind` at or after `since_unix_ns`, oldest first.
  [[nodiscard]] core::Result<std::vector<StoredResult>> results_since(const std::string& kind,
                                                                      std::int64_t since_unix_ns);

 private:
  explicit Database(std::unique_ptr<detail::Connection> connection);
  [[nodiscard]] static core::Result<Database> open_read_only(const std::string& path, const OpenOptions& options);
  std::unique_ptr<detail::Connection> impl_;
};

}  // namespace gpudoc::store
