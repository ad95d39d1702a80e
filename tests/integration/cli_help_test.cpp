// Every help file of docs/cli/ belongs to a command: `gpudoc PATH --help` shows its first line
// (cli/help.hpp), and every command's help has examples or exit codes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_runner.hpp"

namespace gpudoc::testing {
namespace {

// The first line of a help file's text (after its section line).
std::string first_text_line(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty() && line.front() != '[') return line;
  return {};
}

TEST(CliHelp, EveryHelpFileIsShownByItsCommand) {
  const std::filesystem::path dir = std::filesystem::path(GPUDOC_SOURCE_DIR) / "docs" / "cli";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".txt") continue;
    ++files;
    std::string path = entry.path().stem().string();  // "baseline.record" -> "baseline record"
    for (auto& c : path)
      if (c == '.') c = ' ';
    if (path == "gpudoc") path.clear();
    const auto r = run_gpudoc(path + " --help");
    EXPECT_EQ(r.exit_code, 0) << path;
    const auto line = first_text_line(entry.path());
    ASSERT_FALSE(line.empty()) << entry.path();
    EXPECT_NE(r.output.find(line), std::string::npos) << "gpudoc " << path << " --help lacks: " << line;
  }
  EXPECT_GE(files, 16);
}

TEST(CliHelp, CommandsFillTheirGeneratedParts) {
  EXPECT_NE(run_gpudoc("bench --help").output.find("hbm.copy"), std::string::npos);
  EXPECT_NE(run_gpudoc("diagnose --help").output.find("sawtooth"), std::string::npos);
  EXPECT_NE(run_gpudoc("doctor --help").output.find("sawtooth"), std::string::npos);
  EXPECT_EQ(run_gpudoc("bench --help").output.find("@benchmarks@"), std::string::npos);
}

}  // namespace
}  // namespace gpudoc::testing
