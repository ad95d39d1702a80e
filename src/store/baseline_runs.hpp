// gpudoc::store baseline runs — the records of the baselines, runs and figures tables: a baseline
// (its name, what to run again, its golden run) and every record, check and confirm run of it with
// its figures. Database::record_baseline, add_run, find_baseline, list_baselines, load_run, runs_of
// and run_exists (store/database.hpp) write and read them.
//
//   store::NewBaseline b{.name = "resnet", .kinds = "workload", .spec = spec, .run = golden};
//   auto id = db->record_baseline(b);
//   auto runs = db->runs_of("resnet", 10);   // Result<vector<StoredRun>>, oldest first
//
// Damage is never silently skipped: a stored figure whose samples or direction cannot be read back
// is named in StoredRun::damaged (the gate refuses such a baseline).
//
// An interrupted run (verdict "interrupted") never replaces a baseline's golden run: record_baseline
// adds it to the history of an existing baseline, and a new baseline gets it as its golden run
// marked interrupted, which `baseline check` refuses until it is recorded again.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/records.hpp"

namespace gpudoc::store {

// The verdict (status) of a record or check run that gpudoc was asked to stop (SIGINT...).
inline constexpr const char* kVerdictInterrupted = "interrupted";
// The key of a run's details_json that lists the names of the figures stored with it: load_run
// names each one whose row is gone in StoredRun::damaged (the gate then refuses the baseline).
inline constexpr const char* kFigureNamesKey = "figure_names";

struct NewRun {
  std::string baseline;  // the baseline's name
  std::int64_t time_unix_ns = 0;
  std::string role;  // "record", "check", "confirm"
  MachineContext machine;
  std::string verdict;  // "" for record; "ok", "regression", ... for checks;
                        // "interrupted" for either when gpudoc was stopped
  std::optional<int> exit_code;
  nlohmann::json details = nlohmann::json::object();  // notes, command exit, comparison...
  std::vector<Figure> figures;
};

struct NewBaseline {
  std::string name;
  std::string kinds;                               // "hardware,probe,workload"
  nlohmann::json spec = nlohmann::json::object();  // what to run again at check time
  NewRun run;                                      // the golden run (role "record")
};

struct BaselineInfo {
  std::string name;
  std::string kinds;
  std::int64_t created_unix_ns = 0;
  std::int64_t updated_unix_ns = 0;
  nlohmann::json spec;
  MachineContext machine;
  std::int64_t golden_run_id = 0;
  std::int64_t run_count = 0;
  std::string golden_verdict;  // "interrupted" when the golden run was cut short
  [[nodiscard]] bool golden_interrupted() const { return golden_verdict == kVerdictInterrupted; }
};

struct StoredRun {
  std::int64_t id = 0;
  std::string baseline;
  std::int64_t time_unix_ns = 0;
  std::string role;
  MachineContext machine;
  std::string verdict;
  std::optional<int> exit_code;
  std::string gpudoc_version;
  nlohmann::json details;
  std::vector<Figure> figures;
  // What could not be read back, one line each ("figure 'step_ms': samples are not valid JSON");
  // a damaged figure keeps only its readable samples. Empty when the run is whole.
  std::vector<std::string> damaged;
  [[nodiscard]] bool interrupted() const { return verdict == kVerdictInterrupted; }
};

}  // namespace gpudoc::store
