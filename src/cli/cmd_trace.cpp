// `gpudoc trace info FILE [--json]`: validates a recorded trace and summarises it. The file is read
// as a stream (telemetry::trace_stats_of_file): a day-long trace needs no more memory than a short
// one. The summary is view/trace_info's (terminal-safe text; JSON carries the file's text exactly).
// `gpudoc trace counters FILE`: serve's fleet counters for the trace, scrape by scrape, as
// OpenMetrics with timestamps (serve/replay_counters.hpp).
#include <CLI/CLI.hpp>
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
  return emit(opts.json, view::trace_info_json(opts.path, *stats), view::render_trace_info(opts.path, *stats));
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

void register_trace(Command& gpudoc, Action& action) {
  Command trace(gpudoc, "trace");
  trace->require_subcommand(1);

  auto opts = std::make_shared<InfoOptions>();
  Command info(trace, "info");
  info.option("FILE", opts->path)->required();
  info.flag("--json", opts->json);
  info->callback([&action, opts] { action = [opts] { return run_info(*opts); }; });

  auto c = std::make_shared<CountersOptions>();
  Command counters(trace, "counters");
  counters.option("FILE", c->path)->required();
  counters.number("--every", c->replay.every_s, {.min = 1, .max = 3600, .whole = true, .unit = "seconds"});
  counters.number("--window", c->replay.window_s, {.min = 2, .max = 3600, .whole = true, .unit = "seconds"});
  counters.option("--instance", c->replay.instance);
  counters.option("--start", c->start);
  counters->callback([&action, c] { action = [c] { return run_counters(*c); }; });
}

}  // namespace gpudoc::cli
