// `gpudoc slice list` as a table and as JSON.
#include "view/slice_list.hpp"

#include <gtest/gtest.h>

namespace gpudoc::view {
namespace {

slice::Listed infer() {
  slice::Listed s;
  s.owner_running = false;
  s.state.name = "infer\x1b[2J";
  s.state.command = "python3 serve.py";
  s.state.owner_pid = 4242;
  s.state.mechanism = 0;
  s.state.limits = {.memory_bytes = 16ull << 30, .sm_percent = 30, .sm_window_offset_permyriad = 2500};
  s.state.used_bytes = 1ull << 30;
  s.state.processes.push_back({.pid = 4243, .used_bytes = 1ull << 30});
  return s;
}

// The line before the job: the name escaped, each limit or "no cap", the placement's note, then
// what the mechanism cannot enforce.
TEST(SliceStartView, NamesTheLimitsAndTheMechanism) {
  slice::Placement mps;
  mps.mechanism = slice::Mechanism::kMps;
  mps.note = "MPS: its client limits";
  slice::Limits mem;
  mem.memory_bytes = 40ull << 30;
  EXPECT_EQ(render_slice_start("infer\x1b[2J", mem, mps),
            "gpudoc slice: infer\\x1b[2J: memory 40.0 GiB, SM no cap; MPS: its client limits\n" +
                slice::enforcement_notes(mem, mps));
  slice::Placement intercepted;
  intercepted.note = "no MPS daemon: the interception library";
  slice::Limits sm;
  sm.sm_percent = 30;
  const std::string text = render_slice_start("train", sm, intercepted);
  EXPECT_EQ(text.rfind("gpudoc slice: train: memory no cap, SM 30 %; no MPS daemon: the interception library\n", 0), 0u)
      << text;
  EXPECT_FALSE(slice::enforcement_notes(sm, intercepted).empty());  // --sm without MPS is explained
  EXPECT_NE(text.find(slice::enforcement_notes(sm, intercepted)), std::string::npos) << text;
}

TEST(SliceListView, NoSlicesSaysHowToStartOne) {
  EXPECT_EQ(render_slice_list({}), "no slices run now (gpudoc slice --mem SIZE -- CMD starts one)\n");
  EXPECT_EQ(slice_list_json({}).dump(), R"({"slices":[]})");
}

TEST(SliceListView, ARowPerSliceWithItsUseAgainstItsLimits) {
  const std::string text = render_slice_list({infer()});
  EXPECT_NE(text.find("NAME"), std::string::npos);
  EXPECT_NE(text.find("infer\\x1b[2J"), std::string::npos) << text;
  EXPECT_NE(text.find("4242 (gone)"), std::string::npos) << text;
  EXPECT_NE(text.find("30 % (window from 25 %)"), std::string::npos) << text;
  EXPECT_NE(text.find("4243:"), std::string::npos) << text;
  const auto j = slice_list_json({infer()});
  ASSERT_EQ(j["slices"].size(), 1u);
  EXPECT_EQ(j["slices"][0]["mechanism"], "interception");
  EXPECT_EQ(j["slices"][0]["running"], false);
  EXPECT_EQ(j["slices"][0]["sm_window_start_percent"], 25.0);
  EXPECT_EQ(j["slices"][0]["memory_limit_bytes"], 16ull << 30);
  EXPECT_EQ(j["slices"][0]["processes"][0]["pid"], 4243);
}

}  // namespace
}  // namespace gpudoc::view
