// Runs one SQL statement on an SQLite file, as a test's outside view of gpudoc's store: every
// result row's cells joined as "a|b|", NULL as "NULL", or "ERR:<message>" when it failed.
#pragma once

#include <sqlite3.h>

#include <string>

namespace gpudoc::testing {

inline std::string raw_sql(const std::string& db_path, const std::string& statement) {
  sqlite3* db = nullptr;
  sqlite3_open(db_path.c_str(), &db);
  char* err = nullptr;
  std::string out;
  sqlite3_exec(
      db, statement.c_str(),
      [](void* o, int n, char** v, char**) {
        for (int i = 0; i < n; ++i)
          *static_cast<std::string*>(o) += (v[i] != nullptr ? v[i] : "NULL") + std::string("|");
        return 0;
      },
      &out, &err);
  if (err != nullptr) out = std::string("ERR:") + err;
  sqlite3_free(err);
  sqlite3_close(db);
  return out;
}

}  // namespace gpudoc::testing
