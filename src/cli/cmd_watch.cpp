// gpudoc watch: a live terminal view of every GPU, or a replay of a recorded trace. The frames are
// sampled by telemetry::LiveLoop and rendered by view::watch_frame; this file parses, opens the
// backend and writes them.
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <cstdio>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/file.hpp"
#include "telemetry/backend_source.hpp"
#include "telemetry/live_loop.hpp"
#include "telemetry/recorder.hpp"
#include "view/watch_render.hpp"

namespace gpudoc::cli {
namespace {

struct WatchFlags {
  std::string trace;
  double speed = 1.0;
  int interval_ms = 500;
  double duration_s = 0;
  bool once = false;
  bool json = false;
  bool no_clear = false;
  SamplerFlags sampler;
};

// The backend this view reads: a TRACE argument is a replay of it at --speed, opened here;
// otherwise the one chosen for the run.
core::Result<telemetry::Live> open_watched(const WatchFlags& f, Context& ctx,
                                           std::unique_ptr<telemetry::BackendSource>& own) {
  if (f.trace.empty()) return ctx.backend.open_gpus();
  auto spec = telemetry::trace_argument_spec(ctx.backend.spec(), f.trace, f.speed);
  if (!spec) return spec.error();
  own = std::make_unique<telemetry::BackendSource>(std::move(*spec));
  return own->open_gpus();
}

int run_watch(const WatchFlags& f, Context& ctx) {
  auto config = f.sampler.to_config();
  if (!config) return report_error(config.error(), f.json);
  std::unique_ptr<telemetry::BackendSource> own;
  auto live = open_watched(f, ctx, own);
  if (!live) return report_error(live.error(), f.json);
  print_text(stderr, view::watch_start_warnings(*live));
  auto header = telemetry::make_header(*live->backend, *live->clock, *config, {});
  if (!header) return report_error(header.error(), f.json);
  telemetry::LiveLoop loop(
      *live, *header, *config,
      {.interval = std::chrono::milliseconds(f.interval_ms), .duration_s = f.duration_s, .once = f.once});
  if (auto s = loop.start(); !s) return report_error(s.error(), f.json);
  install_stop_handlers();
  const bool clear = isatty(STDOUT_FILENO) != 0 && !f.no_clear && !f.once && !f.json;
  if (clear) std::fputs("\x1b[?25l", stdout);  // hide the cursor while redrawing
  const int frames = loop.run(
      [&, clear, json = f.json](const telemetry::LiveState& state) {
        const std::string frame = view::watch_frame(state, *live, *header, json);
        if (clear) std::fputs("\x1b[H\x1b[J", stdout);
        std::fputs(frame.c_str(), stdout);
        if (!clear && !json) std::fputs("\n", stdout);  // a blank line between frames
        // A reader that went away (`| head -1`) ends the view; run() reports the failed write.
        return core::flush_stream(stdout, "stdout").ok();
      },
      [] { return stop_requests().load() > 0; });
  if (clear) std::fputs("\x1b[?25h", stdout);
  print_text(stderr, view::watch_end_note(*live, f.json));
  return frames > 0 || stop_requests().load() > 0 || std::ferror(stdout) != 0 ? 0 : core::kExitInternal;
}

}  // namespace

void register_watch(Command& gpudoc, Action& action, Context& ctx) {
  auto f = std::make_shared<WatchFlags>();
  Command cmd(gpudoc, "watch");
  cmd.option("trace", f->trace);
  cmd.number("--speed", f->speed,
             {.min = 0, .max = telemetry::kMaxReplaySpeed, .above_min = true, .unit = "times as fast"});
  cmd.number("--interval", f->interval_ms, {.min = 100, .max = 3'600'000, .whole = true, .unit = "milliseconds"});
  cmd.number("-d,--duration", f->duration_s, core::kDurationRange);
  cmd.flag("--once", f->once);
  cmd.flag("--json", f->json);
  cmd.flag("--no-clear", f->no_clear);
  f->sampler.add_to(cmd, telemetry::LiveLoop::default_periods());
  cmd->callback([f, &action, &ctx] { action = [f, &ctx] { return run_watch(*f, ctx); }; });
}

}  // namespace gpudoc::cli
