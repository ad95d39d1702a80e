// The help files of docs/cli/ and their reading (cli/help.hpp).
#include "cli/help.hpp"

#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>

namespace gpudoc::cli {
namespace {

TEST(ParseHelp, SplitsDescriptionAndFooterWithoutTheBlankLinesBetween) {
  auto h = parse_help("[description]\nWhat it does.\n\nMore.\n\n[footer]\nExamples:\n  gpudoc x\n");
  ASSERT_TRUE(h) << h.error().message();
  EXPECT_EQ(h->description, "What it does.\n\nMore.");
  EXPECT_EQ(h->footer, "Examples:\n  gpudoc x");
}

TEST(ParseHelp, EitherSectionMayBeMissing) {
  auto only_footer = parse_help("[footer]\nRun it.\n");
  ASSERT_TRUE(only_footer);
  EXPECT_EQ(only_footer->description, "");
  EXPECT_EQ(only_footer->footer, "Run it.");
  auto only_description = parse_help("\n[description]\nIt does.");  // no final newline
  ASSERT_TRUE(only_description);
  EXPECT_EQ(only_description->description, "It does.");
  EXPECT_EQ(only_description->footer, "");
}

TEST(ParseHelp, FillsPlaceholdersAndLeavesOtherAtSigns) {
  auto h = parse_help("[description]\nList:\n@items@\nreplay:FILE[@SPEED] or a@b.c\n", {{"items", "  a\n  b"}});
  ASSERT_TRUE(h) << h.error().message();
  EXPECT_EQ(h->description, "List:\n  a\n  b\nreplay:FILE[@SPEED] or a@b.c");
}

TEST(ParseHelp, RefusesWhatTheBuildShouldNeverShip) {
  EXPECT_FALSE(parse_help("stray text\n[description]\nx\n"));
  EXPECT_FALSE(parse_help("[description]\nx\n[description]\ny\n"));
  EXPECT_FALSE(parse_help("[examples]\nx\n"));
  auto unfilled = parse_help("[footer]\n@findings@\n");
  ASSERT_FALSE(unfilled);
  EXPECT_NE(unfilled.error().message().find("@findings@"), std::string::npos);
}

// Every file the build embeds reads cleanly with the values its command fills in, and has text.
TEST(HelpFiles, EveryEmbeddedFileParses) {
  std::set<std::string> names;
  for (const auto& f : detail::help_files()) {
    names.insert(std::string(f.name));
    auto h = parse_help(f.body, {{"findings", "F"}, {"benchmarks", "B"}});
    ASSERT_TRUE(h) << f.name << ": " << h.error().message();
    EXPECT_FALSE(h->description.empty() && h->footer.empty()) << f.name;
  }
  for (const char* n : {"gpudoc.txt", "diagnose.txt", "baseline.record.txt", "trace.info.txt"})
    EXPECT_TRUE(names.count(n)) << n;
}

TEST(HelpFiles, ApplyHelpNamesAFileTheBuildLacks) {
  CLI::App app{"", "x"};
  try {
    apply_help(app, "no-such-command");
    FAIL() << "expected a logic_error";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("docs/cli/no-such-command.txt"), std::string::npos);
  }
}

}  // namespace
}  // namespace gpudoc::cli
