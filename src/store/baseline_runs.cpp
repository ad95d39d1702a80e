#include "store/baseline_runs.hpp"

#include <fmt/format.h>
#include <sqlite3.h>

#include <cmath>
#include <string>
#include <string_view>
#include <unordered_set>

#include "core/numeric.hpp"
#include "core/version.hpp"
#include "store/connection.hpp"
#include "store/database.hpp"

namespace gpudoc::store {

using detail::Connection;
using detail::dump;
using detail::parse_or_null;
using detail::Stmt;

namespace {

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

core::Result<bool> baseline_exists(Connection& c, const std::string& name, const std::string& what) {
  Stmt s;
  if (auto st = c.prepare(s, "SELECT 1 FROM baselines WHERE name = ?1", what); !st) return st.error();
  s.bind(1, name);
  const int rc = sqlite3_step(s.get());
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return c.err(rc, what);
}

core::Result<std::int64_t> insert_run(Connection& c, const NewRun& r) {
  Stmt s;
  if (auto st =
          c.prepare(s,
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
  if (int rc = sqlite3_step(s.get()); rc != SQLITE_DONE) return c.err(rc, "adding a run");
  const std::int64_t id = sqlite3_last_insert_rowid(c.db);
  Stmt f;
  if (auto st = c.prepare(f,
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
      f.bind(6, core::median(fig.samples));
    f.bind(7, dump(nlohmann::json(fig.samples)));
    if (int rc = sqlite3_step(f.get()); rc != SQLITE_DONE)
      return c.err(rc, fmt::format("adding figure '{}'", fig.name));
  }
  return id;
}

// Inside an open transaction: adds the run and commits, or rolls back on a failed insert.
core::Result<std::int64_t> insert_run_and_commit(Connection& c, const NewRun& r, const std::string& what) {
  auto id = insert_run(c, r);
  if (!id) {
    c.rollback();
    return id.error();
  }
  if (auto st = c.commit(what); !st) return st.error();
  return *id;
}

}  // namespace

core::Result<std::int64_t> Database::record_baseline(const NewBaseline& b) {
  const std::string what = fmt::format("recording baseline '{}'", b.name);
  if (auto st = impl_->begin(what); !st) return st.error();
  NewRun run = b.run;
  run.baseline = b.name;
  run.role = "record";
  if (run.verdict == kVerdictInterrupted) {
    // Never the golden run of a baseline that has one: into its history only.
    auto exists = baseline_exists(*impl_, b.name, what);
    if (!exists) {
      impl_->rollback();
      return exists.error();
    }
    if (*exists) {
      return insert_run_and_commit(*impl_, run, what);
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
  auto id = insert_run(*impl_, run);
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

core::Result<std::int64_t> Database::add_run(const NewRun& run) {
  const std::string what = fmt::format("adding a {} run to '{}'", run.role, run.baseline);
  if (auto st = impl_->begin(what); !st) return st.error();
  auto exists = baseline_exists(*impl_, run.baseline, what);
  if (!exists || !*exists) {
    impl_->rollback();
    if (!exists) return exists.error();
    return core::Error(core::ErrorKind::kUsage, fmt::format("no baseline named '{}'", run.baseline));
  }
  return insert_run_and_commit(*impl_, run, what);
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

core::Result<std::optional<BaselineInfo>> Database::find_baseline(const std::string& name) {
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

core::Result<std::vector<BaselineInfo>> Database::list_baselines() {
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

core::Result<StoredRun> Database::load_run(std::int64_t id) {
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

core::Result<std::vector<StoredRun>> Database::runs_of(const std::string& name, int limit) {
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

core::Result<bool> Database::run_exists(std::int64_t id) {
  Stmt s;
  if (auto st = impl_->prepare(s, "SELECT 1 FROM runs WHERE id = ?1", "reading runs"); !st) return st.error();
  s.bind(1, id);
  const int rc = sqlite3_step(s.get());
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return impl_->err(rc, "reading runs");
}

}  // namespace gpudoc::store
