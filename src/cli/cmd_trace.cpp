// `gpudoc trace info FILE [--json]`: validates a recorded trace and summarises it. The file is read
// as a stream (telemetry::trace_stats_of_file): a day-long trace needs no more memory than a short
// one. The summary is view/trace_info's (terminal-safe text; JSON carries the file's text exactly).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "telemetry/trace_stats.hpp"
#include "view/trace_info.hpp"

namespace gpudoc::cli {
namespace {

struct InfoOptions {
  std::string path;
  bool json = false;
};

int run_info(const InfoOptions& opts) {
  auto stats = telemetry::trace_stats_of_file(opts.path);
  if (!stats) return report_error(stats.error(), opts.json);
  if (opts.json)
    print_json(view::trace_info_json(opts.path, *stats));
  else
    print_text(stdout, view::render_trace_info(opts.path, *stats));
  return core::kExitOk;
}
}  // namespace

void register_trace(CLI::App& app, Action& action) {
  auto* trace = app.add_subcommand("trace", "Inspect recorded traces (the files `gpudoc record` writes)");
  trace->require_subcommand(1);
  apply_help(*trace, "trace");

  auto opts = std::make_shared<InfoOptions>();
  auto* info = trace->add_subcommand("info", "Check a trace and summarise what it holds");
  info->add_option("FILE", opts->path, "the trace (JSON Lines, usually *.jsonl)")->required();
  info->add_flag("--json", opts->json, "print the summary (or the error) as JSON on stdout");
  apply_help(*info, "trace.info");
  info->callback([&action, opts] { action = [opts] { return run_info(*opts); }; });
}

}  // namespace gpudoc::cli
