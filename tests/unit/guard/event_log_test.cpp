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
#include "guard/policy.hpp"

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

}  // namespace
}  // namespace gpudoc::guard
