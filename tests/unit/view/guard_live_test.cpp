// The lines `gpudoc guard` shows a person for the session's events.
#include "view/guard_live.hpp"

#include <gtest/gtest.h>

namespace gpudoc::view {
namespace {

TEST(GuardLiveLine, SaysWhatChangedAndEscapesTheJobsText) {
  EXPECT_EQ(guard_event_line({{"type", "start"}, {"gpus", {0}}, {"horizon_s", 5.0}, {"socket", "/run/g.sock"}}),
            "guarding GPU(s) [0] (horizon 5 s); job channel /run/g.sock");
  EXPECT_EQ(guard_event_line({{"type", "decision"},
                              {"gpu", 1},
                              {"previous_level", 0},
                              {"level", 2},
                              {"rate_limited", true},
                              {"reason", "hot"}}),
            "GPU 1: level 0 -> 2 (rate limited: nothing sent): hot");
  EXPECT_EQ(guard_event_line(
                {{"type", "advice"}, {"id", "j1-3"}, {"job", "j1"}, {"action", "shrink_batch"}, {"factor", 0.75}}),
            "  advice j1-3 to j1: shrink_batch 0.75");
  EXPECT_EQ(guard_event_line({{"type", "job_left"}, {"job", "j\x1b[2J"}, {"how", "exited"}}),
            "job j\\x1b[2J left (exited)");
  EXPECT_EQ(guard_event_line({{"type", "sample"}}), std::nullopt);
}

}  // namespace
}  // namespace gpudoc::view
