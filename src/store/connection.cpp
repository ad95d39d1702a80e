#include "store/connection.hpp"

#include <fmt/format.h>

namespace gpudoc::store::detail {

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

nlohmann::json parse_or_null(const std::string& s) {
  auto j = nlohmann::json::parse(s, nullptr, false);
  return j.is_discarded() ? nlohmann::json() : j;
}

std::string dump(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

Connection::~Connection() {
  if (db != nullptr) sqlite3_close_v2(db);
}

core::Error Connection::err(int rc, const std::string& what) const { return sqlite_error(db, rc, path, what); }

core::Status Connection::exec(const char* sql, const std::string& what) {
  char* msg = nullptr;
  const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &msg);
  sqlite3_free(msg);
  if (rc != SQLITE_OK) return err(rc, what);
  return {};
}

core::Status Connection::prepare(Stmt& s, const char* sql, const std::string& what) {
  const int rc = sqlite3_prepare_v2(db, sql, -1, s.out(), nullptr);
  if (rc != SQLITE_OK) return err(rc, what);
  return {};
}

core::Result<std::int64_t> Connection::pragma_int(const char* sql) {
  Stmt s;
  if (auto st = prepare(s, sql, sql); !st) return st.error();
  const int rc = sqlite3_step(s.get());
  if (rc != SQLITE_ROW) return err(rc, sql);
  return s.i64(0);
}

core::Status Connection::begin(const std::string& what) { return exec("BEGIN IMMEDIATE", what); }

core::Status Connection::commit(const std::string& what) {
  auto st = exec("COMMIT", what);
  if (!st) (void)exec("ROLLBACK", what);
  return st;
}

void Connection::rollback() { (void)exec("ROLLBACK", "rollback"); }

}  // namespace gpudoc::store::detail
