// view/record_text: what `gpudoc record` says before, during and after a recording.
#include "view/record_text.hpp"

#include <gtest/gtest.h>

namespace gpudoc::view {
namespace {

TEST(RecordText, TheStartLineSaysUntilWhen) {
  EXPECT_EQ(record_start_line(2, "run.jsonl", {"python3", "train.py"}, 0, false),
            "gpudoc: recording 2 GPUs to run.jsonl while `python3 train.py` runs\n");
  EXPECT_EQ(record_start_line(1, "run.jsonl", {}, 30, false), "gpudoc: recording 1 GPU to run.jsonl for 30 s\n");
  EXPECT_EQ(record_start_line(1, "run.jsonl", {}, 0, true),
            "gpudoc: recording 1 GPU to run.jsonl until it ends or Ctrl-C\n");
}

// Redrawn in place (a carriage return, no newline), whole seconds, the file name terminal-safe.
TEST(RecordText, TheProgressLineIsRedrawnInPlace) {
  EXPECT_EQ(record_progress_line("run.jsonl", 12.4, 3456),
            "\rgpudoc: recording run.jsonl: 12 s, 3456 sample lines  (Ctrl-C stops)");
  const std::string hostile = record_progress_line("a\x1b[2Jb.jsonl", 0, 0);
  EXPECT_EQ(hostile.find('\x1b'), std::string::npos) << hostile;
  EXPECT_NE(hostile.find("a\\x1b[2Jb.jsonl"), std::string::npos) << hostile;
}

}  // namespace
}  // namespace gpudoc::view
