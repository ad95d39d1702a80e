// The SQLite connection behind store::Database and the helpers every concern's source file uses
// to talk to it: one place where SQLite result codes become gpudoc errors, a statement handle, and
// the transaction steps. Inside store/ only: no header outside store/ includes this one.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/result.hpp"

namespace gpudoc::store::detail {

// The one place SQLite result codes become gpudoc errors.
[[nodiscard]] core::Error sqlite_error(sqlite3* db, int rc, const std::string& path, const std::string& what);

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

[[nodiscard]] nlohmann::json parse_or_null(const std::string& s);

// Stored JSON: text from workloads may hold bytes that are not UTF-8; they are replaced (U+FFFD),
// never a reason to lose the run.
[[nodiscard]] std::string dump(const nlohmann::json& j);

struct Connection {
  sqlite3* db = nullptr;
  std::string path;
  int busy_timeout_ms = 10000;
  bool read_only = false;
  bool empty = false;  // read-only and no schema yet: nothing stored
  Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection();

  [[nodiscard]] core::Error err(int rc, const std::string& what) const;
  [[nodiscard]] core::Status exec(const char* sql, const std::string& what);
  [[nodiscard]] core::Status prepare(Stmt& s, const char* sql, const std::string& what);
  [[nodiscard]] core::Result<std::int64_t> pragma_int(const char* sql);

  // BEGIN IMMEDIATE: the write lock up front (the busy handler waits for it).
  [[nodiscard]] core::Status begin(const std::string& what);
  // COMMIT, or ROLLBACK when the commit failed.
  [[nodiscard]] core::Status commit(const std::string& what);
  void rollback();
};

}  // namespace gpudoc::store::detail
