#include "store/results.hpp"

#include <fmt/format.h>
#include <sqlite3.h>

#include <string>

#include "store/connection.hpp"
#include "store/database.hpp"

namespace gpudoc::store {

using detail::dump;
using detail::parse_or_null;
using detail::Stmt;

core::Result<std::int64_t> Database::add_result(const std::string& kind, const std::string& subject,
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

core::Result<std::vector<StoredResult>> Database::results_since(const std::string& kind, std::int64_t since_unix_ns) {
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

}  // namespace gpudoc::store
