// The help files of docs/cli/ and their reading (view/help_text.hpp).
#include "view/help_text.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace gpudoc::view {
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

TEST(ParseHelp, ReadsOptionsWithTheirValueNamesAndContinuationLines) {
  auto h = parse_help(
      "[description]\nIt does.\n[options]\n--output FILE    the trace\n--duration       stop after this\n"
      "                 many seconds\ncommand\n  the command to run\n\n[footer]\nRun it.\n");
  ASSERT_TRUE(h) << h.error().message();
  ASSERT_EQ(h->options.size(), 3u);
  EXPECT_EQ(h->options[0].name, "--output");
  EXPECT_EQ(h->options[0].value, "FILE");
  EXPECT_EQ(h->options[0].text, "the trace");
  EXPECT_EQ(h->options[1].value, "");
  EXPECT_EQ(h->options[1].text, "stop after this many seconds");
  EXPECT_EQ(h->options[2].text, "the command to run");
  EXPECT_EQ(h->option("--duration"), &h->options[1]);
  EXPECT_EQ(h->option("--nope"), nullptr);
  EXPECT_EQ(h->description, "It does.");
  EXPECT_EQ(h->footer, "Run it.");
}

TEST(ParseHelp, FillsAnOptionsPlaceholdersWhenItIsAdded) {
  // The file parses without the option's value; the option's text is filled on its own, and a
  // value that starts a new line leaves no space at the end of the line before.
  auto h = parse_help("[options]\n--period GROUP=MS  read a group. Groups:\n   @groups@\n");
  ASSERT_TRUE(h) << h.error().message();
  auto text = option_text(h->options[0], {{"groups", "\n  fast 100 ms\n  slow 1000 ms"}});
  ASSERT_TRUE(text) << text.error().message();
  EXPECT_EQ(*text, "read a group. Groups:\n  fast 100 ms\n  slow 1000 ms");
  auto unfilled = option_text(h->options[0]);
  ASSERT_FALSE(unfilled);
  EXPECT_NE(unfilled.error().message().find("--period"), std::string::npos) << unfilled.error().message();
}

TEST(ParseHelp, RefusesMalformedOptions) {
  for (const char* text :
       {"[options]\n  continues nothing\n", "[options]\n--a  x\n--a  y\n", "[options]\n--a\n--b  y\n",
        "[options]\n--a B C  three words\n", "[options]\n--a  x\n[options]\n--b  y\n"}) {
    auto h = parse_help(text);
    ASSERT_FALSE(h) << text;
    EXPECT_EQ(h.error().kind(), core::ErrorKind::kInternal) << text;
  }
  auto twice = parse_help("[options]\n--a  x\n--a  y\n");
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().message().find("--a given twice"), std::string::npos);
}

// Every file the build embeds reads cleanly with the values its command fills in, and has text.
TEST(HelpFiles, EveryEmbeddedFileParses) {
  const auto names = help_names();
  for (const auto& name : names) {
    auto h = parse_help(*help_file(name), {{"findings", "F"}, {"benchmarks", "B"}});
    ASSERT_TRUE(h) << name << ": " << h.error().message();
    EXPECT_FALSE(h->description.empty() && h->footer.empty()) << name;
    for (const auto& o : h->options) EXPECT_FALSE(o.text.empty()) << name << " " << o.name;
  }
  for (const char* n : {"gpudoc", "diagnose", "baseline.record", "trace.info"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
}

TEST(HelpBook, FindsAFlagInTheNearestFileUpTheCommandsPath) {
  HelpBook book;
  for (const char* name : {"gpudoc", "baseline", "baseline.record"}) ASSERT_TRUE(book.open(name)) << name;
  auto own = book.option("baseline.record", "--repeat");  // baseline.record.txt
  ASSERT_TRUE(own) << own.error().message();
  EXPECT_NE(own->text.find("golden runs"), std::string::npos) << own->text;
  auto parents = book.option("baseline.record", "--store");  // baseline.txt
  ASSERT_TRUE(parents) << parents.error().message();
  EXPECT_EQ(parents->value, "FILE");
  auto gpudocs = book.option("baseline.record", "--period", {{"groups", "\n  fast 100 ms"}});  // gpudoc.txt
  ASSERT_TRUE(gpudocs) << gpudocs.error().message();
  EXPECT_NE(gpudocs->text.find("Groups and defaults:\n  fast 100 ms"), std::string::npos) << gpudocs->text;
  // What was not taken is listed, what was is not.
  const auto untaken = book.untaken();
  EXPECT_NE(std::find(untaken.begin(), untaken.end(), "docs/cli/baseline.txt --json"), untaken.end());
  EXPECT_EQ(std::find(untaken.begin(), untaken.end(), "docs/cli/baseline.txt --store"), untaken.end());
}

TEST(HelpBook, NamesTheFlagOrTheFileItLacks) {
  HelpBook book;
  ASSERT_TRUE(book.open("gpudoc"));
  ASSERT_TRUE(book.open("record"));
  auto none = book.option("record", "--no-such-flag");
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().kind(), core::ErrorKind::kInternal);
  EXPECT_NE(none.error().message().find("--no-such-flag of gpudoc record"), std::string::npos);
  EXPECT_NE(none.error().message().find("docs/cli/record.txt"), std::string::npos);
  auto unfilled = book.option("record", "--period");  // its @groups@ left without a value
  ASSERT_FALSE(unfilled);
  EXPECT_NE(unfilled.error().message().find("docs/cli/gpudoc.txt"), std::string::npos) << unfilled.error().message();
  auto missing = book.open("no-such-command");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message().find("docs/cli/no-such-command.txt"), std::string::npos);
  // A sibling's file is not up the path: record does not find watch's --once.
  ASSERT_TRUE(book.open("watch"));
  EXPECT_FALSE(book.option("record", "--once"));
}

TEST(HelpFiles, LookupByCommandPath) {
  EXPECT_TRUE(help_file("baseline.record"));
  EXPECT_FALSE(help_file("no-such-command"));
  const auto names = help_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "gpudoc"), names.end());
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
}

}  // namespace
}  // namespace gpudoc::view
