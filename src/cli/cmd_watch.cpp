// gpudoc watch: a live terminal view of every GPU, or a replay of a recorded trace.
#include <CLI/CLI.hpp>
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <thread>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/clock.hpp"
#include "core/text.hpp"
#include "telemetry/backend_source.hpp"
#include "telemetry/recorder.hpp"
#include "telemetry/replay_backend.hpp"
#include "view/live_state.hpp"
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

std::string local_clock(std::int64_t unix_ns) {
  std::time_t t = static_cast<std::time_t>(unix_ns / 1'000'000'000);
  std::tm tm{};
  localtime_r(&t, &tm);
  return fmt::format("{:%H:%M:%S}", tm);
}

core::Status check_flags(const WatchFlags& f) {
  if (f.interval_ms < 100) return core::Error(core::ErrorKind::kUsage, "--interval must be at least 100 ms");
  if (!(f.speed > 0) || f.speed > telemetry::kMaxReplaySpeed) return core::Error(core::ErrorKind::kUsage, "--speed must be in (0, 1000]");
  if (auto d = parse_duration(f.duration_s); !d) return d.error();
  return core::ok_status();
}

// The backend this view reads: a TRACE argument is a replay of it at --speed; otherwise the one
// chosen for the run. Both are opened by telemetry::BackendSource, so `watch TRACE` and
// `--backend replay:TRACE watch` show the same thing.
core::Result<telemetry::Live> open_watched(const WatchFlags& f, Context& ctx, std::unique_ptr<telemetry::BackendSource>& own) {
  if (f.trace.empty()) return ctx.backend.open_gpus();
  if (ctx.backend.spec().origin == "--backend")
    return core::Error(core::ErrorKind::kUsage,
                       fmt::format("give a TRACE or --backend {}, not both", ctx.backend.spec().text));
  auto spec = telemetry::parse_backend_spec("replay:" + f.trace + fmt::format("@{}", f.speed), "");
  if (!spec) return spec.error();
  own = std::make_unique<telemetry::BackendSource>(std::move(*spec));
  auto live = own->open_gpus();
  if (!live) return live.error();
  return live;
}

struct Frames {
  const WatchFlags& f;
  const telemetry::Live& live;
  view::LiveState& state;
  telemetry::Sampler& sampler;
  std::string title;
};

// Draws frames until --once, --duration, the end of a replay, Ctrl-C or a closed stdout. Returns
// how many were drawn. A replay runs on the trace's clock: --interval and --duration stay wall
// time, so they are scaled by the speed here.
int draw_frames(const Frames& fr) {
  const WatchFlags& f = fr.f;
  core::Clock& clock = *fr.live.clock;
  const double speed = fr.live.speed;
  const bool tty = isatty(STDOUT_FILENO) != 0;
  const bool clear = tty && !f.no_clear && !f.once && !f.json;
  const auto t0 = clock.now();
  const auto interval = std::chrono::duration_cast<core::Nanos>(std::chrono::milliseconds(f.interval_ms) * speed);
  // --once waits long enough for the slowest default group that a view shows (utilization).
  const auto first_frame = f.once ? std::max<core::Nanos>(interval, std::chrono::milliseconds(1500)) : interval;
  auto next = t0 + first_frame;
  if (clear) std::fputs("\x1b[?25l", stdout);  // hide the cursor while redrawing
  int frames = 0;
  while (true) {
    while (clock.now() < next) {
      for (auto& r : fr.sampler.drain(std::min<core::Nanos>(next - clock.now(), std::chrono::milliseconds(100)))) fr.state.add(r);
      if (stop_requests().load() > 0) break;
    }
    if (stop_requests().load() > 0) break;
    const double elapsed_s = core::to_seconds(clock.now() - t0) / speed;
    fr.state.set_now(clock.unix_now_ns());
    std::string clock_text = local_clock(clock.unix_now_ns());
    if (fr.live.replay != nullptr)
      clock_text = fmt::format("t={:.1f} / {:.1f} s", std::min(fr.live.replay->position_s(), fr.live.replay->trace().duration_s),
                               fr.live.replay->trace().duration_s);
    if (f.json) {
      auto j = view::watch_json(fr.state);
      if (fr.live.replay != nullptr) j["replay"] = fr.live.spec->file;
      if (!fr.live.real()) j["backend"] = telemetry::describe(*fr.live.spec);
      print_json(j, -1);
    } else {
      std::string frame = view::render_watch(fr.state, {.title = fr.title, .banner = fr.live.banner, .clock = clock_text});
      if (clear) std::fputs("\x1b[H\x1b[J", stdout);
      std::fputs(frame.c_str(), stdout);
      if (!clear) std::fputs("\n", stdout);
    }
    // A reader that went away (`| head -1`) ends the view; run() reports the failed write.
    if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0) break;
    ++frames;
    if (f.once || (f.duration_s > 0 && elapsed_s >= f.duration_s) || fr.live.backend->finished()) break;
    next += interval;
  }
  if (clear) std::fputs("\x1b[?25h", stdout);
  return frames;
}

int run_watch(const WatchFlags& f, Context& ctx) {
  if (auto s = check_flags(f); !s) return report_error(s.error(), f.json);
  // A live view drains the utilization buffer more often than a recording does, so the newest
  // bars are not seconds behind; still never faster than the buffer's 200 ms samples.
  auto defaults = telemetry::SamplerConfig::default_periods();
  defaults[gpu::index(gpu::MetricGroup::kUtilization)] = std::chrono::milliseconds(500);
  auto config = f.sampler.to_config(defaults);
  if (!config) return report_error(config.error(), f.json);
  std::unique_ptr<telemetry::BackendSource> own;
  auto live = open_watched(f, ctx, own);
  if (!live) return report_error(live.error(), f.json);
  if (live->replay != nullptr)
    for (const auto& w : live->replay->trace().warnings)
      std::fprintf(stderr, "gpudoc: warning: %s\n", core::terminal_safe(w).c_str());
  auto header = telemetry::make_header(*live->backend, *live->clock, *config, {});
  if (!header) return report_error(header.error(), f.json);

  // A replay's sampler reads every period of wall time, `speed` periods of trace time: staleness
  // is judged on the trace's clock.
  auto view_periods = config->periods;
  if (live->replay != nullptr)
    for (auto& p : view_periods)
      p = std::chrono::milliseconds(static_cast<long>(static_cast<double>(p.count()) * std::max(1.0, live->speed)));
  view::LiveState state(header->gpus, view_periods);
  telemetry::Sampler sampler(*live->backend, *live->clock, *config);
  if (auto s = sampler.start(); !s) return report_error(s.error(), f.json);
  install_stop_handlers();
  const auto& sys = header->system;
  const std::string title = fmt::format("gpudoc watch — {} — {} GPU{} — driver {}, CUDA {}", header->host, header->gpus.size(),
                                        header->gpus.size() == 1 ? "" : "s", sys.driver_version.empty() ? "?" : sys.driver_version,
                                        sys.cuda_driver_version.empty() ? "?" : sys.cuda_driver_version);
  const int frames = draw_frames({f, *live, state, sampler, title});
  sampler.stop();
  if (live->replay != nullptr && !f.json)
    std::fprintf(stderr, "gpudoc: that was a replay of %s, not a live GPU.\n", live->spec->file.c_str());
  else if (!live->real() && !f.json)
    std::fprintf(stderr, "gpudoc: those were %s, not this machine's GPUs.\n", live->spec->text.c_str());
  return frames > 0 || stop_requests().load() > 0 || std::ferror(stdout) != 0 ? 0 : core::kExitInternal;
}

}  // namespace

void register_watch(CLI::App& app, Action& action, Context& ctx) {
  auto f = std::make_shared<WatchFlags>();
  auto* cmd = app.add_subcommand("watch", "Live view of every GPU (or replay a recorded trace)");
  cmd->description(
      "Live view of every GPU, 80 columns wide: sparklines of utilization, SM activity, power,\n"
      "temperature and memory; clocks against their maximum; the clock-event (throttle) reasons;\n"
      "the processes using each GPU. A value the GPU does not report, or that has gone stale,\n"
      "shows as — (never as 0).\n\n"
      "\"util\" is the share of time any kernel ran — not how much of the chip worked. \"SM act\"\n"
      "(GPM, Hopper and newer) is the share of SMs busy: a GPU can read 100% util at 5% SM activity.\n\n"
      "With a TRACE argument, watch replays a recorded trace instead, and says so (the same as\n"
      "gpudoc --backend replay:TRACE@SPEED watch).");
  cmd->add_option("trace", f->trace, "a trace recorded by `gpudoc record` to replay instead of the live GPUs");
  cmd->add_option("--speed", f->speed, "with TRACE: replay speed (2 = twice as fast)")->capture_default_str();
  cmd->add_option("--interval", f->interval_ms, "refresh every N milliseconds")->capture_default_str();
  cmd->add_option("-d,--duration", f->duration_s, "stop after this many seconds (left out: until Ctrl-C or the replay's end)");
  cmd->add_flag("--once", f->once, "print one frame (after 1.5 s of sampling) and exit");
  cmd->add_flag("--json", f->json, "print each frame as one JSON line of the latest values instead");
  cmd->add_flag("--no-clear", f->no_clear, "print frames one after another instead of redrawing");
  f->sampler.add_to(*cmd);
  cmd->footer(
      "Examples:\n"
      "  gpudoc watch\n"
      "  gpudoc watch --gpus 0,1 --duration 60\n"
      "  gpudoc watch --once --json | jq '.gpus[].power_watts'\n"
      "  gpudoc watch tests/data/sawtooth_p1000_d50.jsonl --speed 4\n"
      "  gpudoc --backend fake:4 watch --once\n"
      "Exit codes: 0 ok, 2 bad flags or trace, 3 no GPU or driver.");
  cmd->callback([f, &action, &ctx] { action = [f, &ctx] { return run_watch(*f, ctx); }; });
}

}  // namespace gpudoc::cli
