#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/commit.hpp"
#include "core/file.hpp"
#include "core/log.hpp"
#include "core/version.hpp"
#include "telemetry/backend_source.hpp"
#include "view/error_json.hpp"

namespace gpudoc::cli {
namespace {
std::vector<std::string>& after_double_dash() {
  static std::vector<std::string> words;
  return words;
}

// A command's output that did not reach stdout (a full disk, a closed pipe) is an error, whatever
// the command returned.
int check_stdout(int code) {
  const auto flushed = core::flush_stream(stdout, "stdout");
  if (flushed) return code;
  const int io = report_error(flushed.error(), false);
  return code != core::kExitOk ? code : io;
}

}  // namespace

void register_commands(Command& gpudoc, Action& action, Context& ctx) {
  register_doctor(gpudoc, action, ctx);
  register_diagnose(gpudoc, action, ctx);
  register_watch(gpudoc, action, ctx);
  register_record(gpudoc, action, ctx);
  register_trace(gpudoc, action);
  register_bench(gpudoc, action, ctx);
  register_baseline(gpudoc, action, ctx);
  register_health(gpudoc, action, ctx);
  register_guard(gpudoc, action, ctx);
  register_serve(gpudoc, action, ctx);
  register_report(gpudoc, action);
  register_profile(gpudoc, action);
  register_tune(gpudoc, action, ctx);
  register_slice(gpudoc, action);
}

const std::vector<std::string>& words_after_double_dash() { return after_double_dash(); }

int report_error(const core::Error& error, bool json) {
  if (json) print_json(nlohmann::json{{"error", view::error_json(error)}});
  print_text(stderr, fmt::format("gpudoc: error: {}\n", error.message()));
  return core::exit_code(error.kind());
}

int usage_error(const std::string& message, bool json) {
  return report_error(core::Error(core::ErrorKind::kUsage, message), json);
}

int run(int argc, char** argv) {
  CLI::App app{"", "gpudoc"};
  app.require_subcommand(1);
  app.set_version_flag("--version", fmt::format("gpudoc {} ({})", core::kVersion, core::kGitCommit));
  bool verbose = false;
  std::optional<std::string> backend_flag;
  // Options of gpudoc itself (--backend, -v) may also come after the command's name.
  app.fallthrough();

  Action action;
  Context ctx;
  try {
    Command gpudoc = Command::root(app);
    gpudoc.flag("-v,--verbose", verbose);
    gpudoc.option("--backend", backend_flag);
    register_commands(gpudoc, action, ctx);
  } catch (const std::logic_error& e) {  // a help file the build lacks, or a flag it does not describe
    return report_error(core::Error(core::ErrorKind::kInternal, e.what()), false);
  }

  after_double_dash().clear();
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "--") {
      after_double_dash().assign(argv + i + 1, argv + argc);
      break;
    }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --help-all, --version: printed, exit 0
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::ostringstream out, err;  // the message quotes the arguments: shown terminal-safe
    app.exit(e, out, err);
    print_text(stdout, out.str());
    print_text(stderr, err.str());
    return core::kExitUsage;
  }
  if (verbose) core::set_log_level(core::LogLevel::kDebug);
  if (!action) return core::kExitUsage;
  auto spec = telemetry::choose_backend_spec(backend_flag, std::getenv("GPUDOC_BACKEND"));
  if (!spec) return report_error(spec.error(), false);
  ctx.backend.select(std::move(*spec));
  core::survive_broken_pipe();  // an EPIPE is reported by check_stdout, not a silent death
  int code = core::kExitInternal;
  try {
    code = action();
  } catch (const std::exception& e) {
    code = report_error(core::Error(core::ErrorKind::kInternal, fmt::format("unexpected: {}", e.what())), false);
  }
  return check_stdout(code);
}

}  // namespace gpudoc::cli
