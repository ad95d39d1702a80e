// The guard's event log (--log): appended JSON lines, never through a link, a clear error when
// it cannot be opened; and the --signal opt-in list.
#include "guard/event_log.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/temp_dir.hpp"
#include "guard/event_records.hpp"
#include "guard/policy.hpp"
#include "store/guard_history.hpp"

namespace gpudoc::guard {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(GuardEventLog, AppendsOneLinePerEventAfterWhatWasThere) {
  auto dir = core::PrivateDir::create("gpudoc-test-eventlog");
  ASSERT_TRUE(dir.ok());
  const std::string path = dir->path() + "/guard.jsonl";
  std::ofstream(path) << "{\"type\":\"earlier\"}\n";
  {
    auto log = EventLog::open(path);
    ASSERT_TRUE(log.ok()) << log.error().message();
    log->write({{"type", "start"}, {"gpus", {0, 1}}});
    EventLog moved(std::move(*log));  // the moved-from log closes nothing
    moved.write({{"type", "note"}, {"message", "bad \xff byte"}});
    EXPECT_FALSE(moved.failed());
  }
  EXPECT_EQ(slurp(path),
            "{\"type\":\"earlier\"}\n{\"gpus\":[0,1],\"type\":\"start\"}\n{\"message\":\"bad \xef\xbf\xbd byte\","
            "\"type\":\"note\"}\n");
}

TEST(GuardEventLog, RefusesALinkAndNamesTheFlag) {
  auto dir = core::PrivateDir::create("gpudoc-test-eventlog");
  ASSERT_TRUE(dir.ok());
  const std::string target = dir->path() + "/target", link = dir->path() + "/link";
  std::ofstream(target) << "";
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  auto log = EventLog::open(link);
  ASSERT_FALSE(log.ok());
  EXPECT_EQ(log.error().kind(), core::ErrorKind::kIo);
  EXPECT_EQ(log.error().message().rfind("--log " + link + ": ", 0), 0u) << log.error().message();
  EXPECT_EQ(slurp(target), "");
}

TEST(GuardSignalOptIn, ReadsCheckpointAndStopOnly) {
  auto both = signal_opt_in_from_text("checkpoint,,stop");
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(*both, (std::vector<Action>{Action::kCheckpointNow, Action::kStop}));
  auto none = signal_opt_in_from_text("");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  auto bad = signal_opt_in_from_text("stop,shrink_batch");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind(), core::ErrorKind::kUsage);
  EXPECT_EQ(bad.error().message(), "--signal 'shrink_batch': allowed: checkpoint (SIGUSR1), stop (SIGTERM)");
}

// The log takes every event, the store the decisions, both marked with a fake backend; --json
// names where they went.
TEST(GuardEventRecords, LogAndStoreEachTakeTheirEventsMarkedWithTheBackend) {
  auto dir = core::PrivateDir::create("gpudoc-test-records");
  ASSERT_TRUE(dir.ok());
  const std::string log = dir->path() + "/guard.jsonl", db = dir->path() + "/gpudoc.db";
  auto records = EventRecords::open({.log = log, .store = db, .backend = "fake:1"});
  ASSERT_TRUE(records.ok()) << records.error().message();
  records->keep({{"type", "decision"}, {"gpu", 0}});
  records->keep({{"type", "note"}, {"message", "log only"}});
  EXPECT_EQ(slurp(log),
            "{\"backend\":\"fake:1\",\"gpu\":0,\"type\":\"decision\"}\n"
            "{\"backend\":\"fake:1\",\"message\":\"log only\",\"type\":\"note\"}\n");
  auto kept = store::guard_results_since(db, 0);
  ASSERT_TRUE(kept.ok()) << kept.error().message();
  ASSERT_EQ(kept->size(), 1U);
  EXPECT_EQ(kept->front().payload.value("backend", ""), "fake:1");
  nlohmann::json summary;
  records->describe(summary);
  EXPECT_EQ(summary["log"], log);
  EXPECT_EQ(summary["store"], db);
  EXPECT_FALSE(summary["run_id"].get<std::string>().empty());
}

TEST(GuardEventRecords, WithoutLogOrStoreNothingIsKeptAndABadLogIsAnError) {
  auto none = EventRecords::open({.no_store = true});
  ASSERT_TRUE(none.ok());
  none->keep({{"type", "decision"}});
  nlohmann::json summary;
  none->describe(summary);
  EXPECT_TRUE(summary["log"].is_null());
  EXPECT_TRUE(summary["store"].is_null());
  EXPECT_TRUE(summary["run_id"].is_null());
  auto bad = EventRecords::open({.log = "/nonexistent-dir/guard.jsonl", .no_store = true});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("/nonexistent-dir/guard.jsonl"), std::string::npos);
}

}  // namespace
}  // namespace gpudoc::guard
