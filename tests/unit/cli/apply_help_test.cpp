// cli::apply_help: a command's help file set on its CLI11 command.
#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "cli/common.hpp"

namespace gpudoc::cli {
namespace {

TEST(ApplyHelp, SetsDescriptionAndFooterWithTheFilledParts) {
  CLI::App app{"", "gpudoc"};
  auto* bench = app.add_subcommand("bench", "");
  apply_help(*bench, "bench", {{"benchmarks", "  BENCHMARK-LIST\n"}});
  EXPECT_NE(bench->get_description().find("BENCHMARK-LIST"), std::string::npos);
  EXPECT_NE(bench->get_footer().find("Exit codes"), std::string::npos);
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
