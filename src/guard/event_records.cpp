#include "guard/event_records.hpp"

#include "core/log.hpp"

namespace gpudoc::guard {

core::Result<EventRecords> EventRecords::open(const RecordsOptions& options) {
  EventRecords r;
  r.backend_ = options.backend;
  if (options.log) {
    auto log = EventLog::open(*options.log);
    if (!log) return log.error();
    r.log_.emplace(std::move(*log));
    r.log_path_ = options.log;
  }
  if (!options.no_store) {
    auto keeper = store::GuardKeeper::open(options.store);
    if (keeper)
      r.keeper_.emplace(std::move(*keeper));
    else
      core::log_warn("decisions are not stored (the log has them): {}", keeper.error().message());
  }
  return r;
}

void EventRecords::keep(const nlohmann::json& event) {
  nlohmann::json e = event;
  if (!backend_.empty()) e["backend"] = backend_;
  if (log_) log_->write(e);
  if (!keeper_ || store_failed_) return;
  if (auto st = keeper_->keep(e); !st) {
    store_failed_ = true;
    core::log_warn("the store stopped taking the guard's decisions (the log keeps them): {}", st.error().message());
  }
}

void EventRecords::describe(nlohmann::json& summary) const {
  summary["log"] = log_path_ ? nlohmann::json(*log_path_) : nlohmann::json();
  summary["store"] = keeper_ ? nlohmann::json(keeper_->path()) : nlohmann::json();
  summary["run_id"] = keeper_ ? nlohmann::json(keeper_->run_id()) : nlohmann::json();
}

}  // namespace gpudoc::guard
