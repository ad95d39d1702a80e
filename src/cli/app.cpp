#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/log.hpp"
#include "core/version.hpp"

namespace gpudoc::cli {
namespace {
std::vector<std::string>& after_double_dash() {
  static std::vector<std::string> words;
  return words;
}
}  // namespace

const std::vector<std::string>& words_after_double_dash() { return after_double_dash(); }

int report_error(const core::Error& error, bool json) {
  if (json) {
    nlohmann::json j = {{"error", {{"kind", core::to_string(error.kind())}, {"message", error.message()},
                                   {"exit_code", core::exit_code(error.kind())}}}};
    print_json(j);
  }
  std::fputs(fmt::format("gpudoc: error: {}\n", error.message()).c_str(), stderr);
  return core::exit_code(error.kind());
}

int run(int argc, char** argv) {
  CLI::App app{
      "gpudoc — why your NVIDIA GPUs are not doing the work you paid for.\n\n"
      "Reads every GPU at its sensors' native rates (NVML, loaded at run time), records traces,\n"
      "and shows them live. Exit codes: 0 ok, 1 a finding at or above the threshold, 2 usage or\n"
      "bad input, 3 environment (no GPU, no driver, missing library), 4 internal error.\n",
      "gpudoc"};
  app.require_subcommand(1);
  app.set_version_flag("--version", fmt::format("gpudoc {} ({})", core::kVersion, core::kGitCommit));
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "log what gpudoc does to stderr (or set GPUDOC_LOG=debug)");
  app.footer(
      "Examples:\n"
      "  gpudoc doctor                         what holds every GPU back (a short live look)\n"
      "  gpudoc diagnose run.jsonl --html run.html\n"
      "  gpudoc diagnose -- python3 train.py   record while it runs, then diagnose\n"
      "  gpudoc watch                          live view of every GPU\n"
      "  gpudoc record -o run.jsonl -- python3 train.py\n"
      "  gpudoc trace info run.jsonl\n"
      "  gpudoc bench --quick                 memory bandwidth and launch cost of the GPU\n"
      "  gpudoc baseline check train           CI gate: exit 1 on a confirmed regression\n"
      "  gpudoc health                         is this node healthy and set up right (exit 1 on a failed check)\n"
      "Run `gpudoc COMMAND --help` for each command's options.");

  Action action;
  register_doctor(app, action);
  register_diagnose(app, action);
  register_watch(app, action);
  register_record(app, action);
  register_trace(app, action);
  register_bench(app, action);
  register_baseline(app, action);
  register_health(app, action);
  register_report(app, action);

  after_double_dash().clear();
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "--") {
      after_double_dash().assign(argv + i + 1, argv + argc);
      break;
    }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return core::kExitUsage;
  }
  if (verbose) core::set_log_level(core::LogLevel::kDebug);
  if (!action) return core::kExitUsage;
  try {
    return action();
  } catch (const std::exception& e) {
    return report_error(core::Error(core::ErrorKind::kInternal, fmt::format("unexpected: {}", e.what())), false);
  }
}

}  // namespace gpudoc::cli
