// cli::Command: a command's help from its file, docs/cli/NAME.txt — its description and footer, every
// flag of every command has help, and every [options] entry of the files is some command's flag.
#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "cli/commands.hpp"
#include "cli/common.hpp"

namespace gpudoc::cli {
namespace {

// Every option of `app` and the commands under it without help, as "PATH FLAG".
void missing_help(const CLI::App& app, const std::string& path, std::vector<std::string>& out) {
  for (const CLI::Option* o : app.get_options())
    if (o->get_description().empty()) out.push_back(path + " " + o->get_name());
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    if (!sub->get_name().empty()) missing_help(*sub, path + " " + sub->get_name(), out);
}

TEST(CommandHelp, EveryFlagHasHelpAndEveryEntryIsAFlag) {
  CLI::App app{"", "gpudoc"};
  Action action;
  Context ctx;
  Command gpudoc = Command::root(app);
  bool verbose = false;
  gpudoc.flag("-v,--verbose", verbose);
  std::optional<std::string> backend;
  gpudoc.option("--backend", backend);
  register_commands(gpudoc, action, ctx);  // throws for a flag no file describes
  std::vector<std::string> missing;
  missing_help(app, "gpudoc", missing);
  EXPECT_TRUE(missing.empty()) << ::testing::PrintToString(missing);
  EXPECT_TRUE(gpudoc.unused_help().empty()) << ::testing::PrintToString(gpudoc.unused_help());
}

TEST(CommandHelp, TakesAFlagsHelpFromTheNearestFileUpItsPath) {
  CLI::App app{"", "gpudoc"};
  Command gpudoc = Command::root(app);
  Command baseline(gpudoc, "baseline");
  Command record(baseline, "record");
  bool quick = false;
  std::optional<std::string> store;
  std::vector<int> gpus;
  EXPECT_EQ(record.flag("--quick", quick)->get_description(), "benchmarks with fewer repetitions");
  auto* s = record.option("--store", store);  // baseline.txt: every baseline subcommand's
  EXPECT_NE(s->get_description().find("$XDG_DATA_HOME"), std::string::npos);
  EXPECT_EQ(s->get_type_name(), "FILE");
  EXPECT_NE(record.option("--gpus", gpus)->get_description().find("GPU indices"), std::string::npos);  // gpudoc.txt
  EXPECT_NE(record->get_description().find("golden baseline"), std::string::npos);
  EXPECT_NE(record->get_footer().find("Exit codes"), std::string::npos);
  // Entries nobody took yet are listed: baseline.txt's --json among them.
  const auto unused = gpudoc.unused_help();
  EXPECT_NE(std::find(unused.begin(), unused.end(), "docs/cli/baseline.txt --json"), unused.end());
}

TEST(CommandHelp, AFlagNoFileDescribesIsABugOfTheBuild) {
  CLI::App app{"", "gpudoc"};
  Command gpudoc = Command::root(app);
  Command record(gpudoc, "record");
  bool b = false;
  try {
    record.flag("--no-such-flag", b);
    FAIL() << "expected a logic_error";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("--no-such-flag"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("docs/cli/record.txt"), std::string::npos) << e.what();
  }
}

TEST(CommandHelp, SetsDescriptionAndFooterWithTheFilledParts) {
  CLI::App app{"", "gpudoc"};
  Command gpudoc = Command::root(app);
  Command bench(gpudoc, "bench", {{"benchmarks", "  BENCHMARK-LIST\n"}});
  EXPECT_NE(bench->get_description().find("BENCHMARK-LIST"), std::string::npos);
  EXPECT_NE(bench->get_footer().find("Exit codes"), std::string::npos);
}

TEST(HelpFiles, ACommandNamesAFileTheBuildLacks) {
  CLI::App app{"", "gpudoc"};
  Command gpudoc = Command::root(app);
  try {
    Command missing(gpudoc, "no-such-command");
    FAIL() << "expected a logic_error";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("docs/cli/no-such-command.txt"), std::string::npos) << e.what();
  }
}

TEST(CommandHelp, NumberFlagsKeepTheirRangeAndTheFilesValueName) {
  CLI::App app{"", "gpudoc"};
  Command gpudoc = Command::root(app);
  Command watch(gpudoc, "watch");
  int interval = 500;
  auto* o = watch.number("--interval", interval, {.min = 100, .max = 1000, .whole = true, .unit = "milliseconds"});
  EXPECT_EQ(o->get_type_name(), "MS");
  EXPECT_NE(o->get_description().find("refresh every N milliseconds"), std::string::npos);
  EXPECT_NE(o->get_description().find("[milliseconds, a whole number from 100 to 1000]"), std::string::npos)
      << o->get_description();
  app.parse(std::vector<std::string>{"200", "--interval", "watch"});  // CLI11 reads the vector backwards
  EXPECT_EQ(interval, 200);
}

}  // namespace
}  // namespace gpudoc::cli
