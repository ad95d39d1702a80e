// `gpudoc trace info FILE [--json]`: validates a recorded trace and summarises it. The file is read
// as a stream (telemetry::trace_stats_of_file): a day-long trace needs no more memory than a short
// one. The summary is view/trace_info's (terminal-safe text; JSON carries the file's text exactly).
// `gpudoc trace counters FILE`: serve's fleet counters for the trace, scrape by scrape, as
// OpenMetrics with timestamps (serve/replay_counters.hpp).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/number_input.hpp"
#include "serve/replay_counters.hpp"
#include "telemetry/input.hpp"
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

struct CountersOptions {
  std::string path;
  serve::CounterReplayOptions replay{};
  std::optional<std::string> start;
};

int run_counters(CountersOptions opts) {
  if (opts.start) {
    auto at = core::parse_instant("--start", *opts.start);
    if (!at) return report_error(at.error(), false);
    opts.replay.start_unix_s = *at;
  }
  auto trace = telemetry::read_telemetry_file(opts.path);
  if (!trace) return report_error(trace.error(), false);
  auto text = serve::replay_counters(*trace, opts.replay);
  if (!text) return report_error(text.error().with_context(opts.path), false);
  print_text(stdout, *text);
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

  auto c = std::make_shared<CountersOptions>();
  auto* counters =
      trace->add_subcommand("counters", "The fleet counters serve would export for a trace, as OpenMetrics");
  counters->add_option("FILE", c->path, "the trace (JSON Lines, usually *.jsonl)")->required();
  add_number(*counters, "--every", c->replay.every_s, {.min = 1, .max = 3600, .whole = true, .unit = "seconds"},
             "a diagnosis and a scrape this often (serve's --diagnose-every; default 10)");
  add_number(*counters, "--window", c->replay.window_s, {.min = 2, .max = 3600, .whole = true, .unit = "seconds"},
             "the sliding diagnosis' window (serve's --diagnose-window; default 120)");
  counters->add_option("--instance", c->replay.instance, "the instance label a scrape adds (default: none)")
      ->type_name("NAME");
  counters->add_option("--start", c->start, "the trace's start, Unix seconds or RFC 3339 (default: its own)")
      ->type_name("TIME");
  apply_help(*counters, "trace.counters");
  counters->callback([&action, c] { action = [c] { return run_counters(*c); }; });
}

}  // namespace gpudoc::cli
