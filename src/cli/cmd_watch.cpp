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
#include "gpu/replay/replay_backend.hpp"
#include "telemetry/input.hpp"
#include "telemetry/recorder.hpp"
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

std::string utc_date(std::int64_t unix_ns) {
  std::time_t t = static_cast<std::time_t>(unix_ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:%Y-%m-%d %H:%M} UTC", tm);
}

int run_watch(const WatchFlags& f) {
  if (f.interval_ms < 100) return report_error(core::Error(core::ErrorKind::kUsage, "--interval must be at least 100 ms"), f.json);
  if (f.speed <= 0 || f.speed > 1000) return report_error(core::Error(core::ErrorKind::kUsage, "--speed must be in (0, 1000]"), f.json);
  // A live view drains the utilization buffer more often than a recording does, so the newest
  // bars are not seconds behind; still never faster than the buffer's 200 ms samples.
  auto defaults = telemetry::SamplerConfig::default_periods();
  defaults[gpu::index(gpu::MetricGroup::kUtilization)] = std::chrono::milliseconds(500);
  auto config = f.sampler.to_config(defaults);
  if (!config) return report_error(config.error(), f.json);

  core::SystemClock clock;
  std::unique_ptr<gpu::Backend> backend;
  gpu::ReplayBackend* replay = nullptr;
  std::string banner;
  std::int64_t replay_start_ns = 0;
  double replay_duration = 0;
  if (!f.trace.empty()) {
    auto trace = telemetry::read_telemetry_file(f.trace);
    if (!trace) return report_error(trace.error(), f.json);
    for (const auto& w : trace->warnings) std::fprintf(stderr, "gpudoc: warning: %s\n", core::terminal_safe(w).c_str());
    replay_start_ns = trace->header.start_unix_ns;
    replay_duration = trace->duration_s;
    std::string gpu_name = trace->header.gpus.empty() ? "no GPU" : trace->header.gpus[0].name;
    // "not live" comes first: the banner is cut to the terminal's width, and that must survive.
    banner = fmt::format("REPLAY, not live{}: {}, recorded {} on {}, {}{}", f.speed != 1.0 ? fmt::format(" (×{})", f.speed) : "",
                         std::filesystem::path(f.trace).filename().string(), utc_date(replay_start_ns), trace->header.host,
                         gpu_name, trace->header.gpus.size() > 1 ? fmt::format(" ×{}", trace->header.gpus.size()) : "");
    auto r = gpu::open_replay_backend(std::move(*trace), clock, gpu::ReplayOptions{f.speed});
    if (!r) return report_error(r.error(), f.json);
    replay = r->get();
    backend = std::move(*r);
  } else {
    auto live = open_live_backend();
    if (!live) return report_error(live.error(), f.json);
    backend = std::move(*live);
  }
  auto header = telemetry::make_header(*backend, clock, *config, {});
  if (!header) return report_error(header.error(), f.json);
  if (header->gpus.empty())
    return report_error(core::Error(core::ErrorKind::kEnvironment, "the NVIDIA driver is loaded but reports no GPU"), f.json);

  // In a replay the sampler reads every period of wall time, which is `speed` periods of trace
  // time: staleness is judged on the trace's clock.
  auto view_periods = config->periods;
  if (replay != nullptr)
    for (auto& p : view_periods) p = std::chrono::milliseconds(static_cast<long>(static_cast<double>(p.count()) * std::max(1.0, f.speed)));
  view::LiveState state(header->gpus, view_periods);
  telemetry::Sampler sampler(*backend, clock, *config);
  if (auto s = sampler.start(); !s) return report_error(s.error(), f.json);
  install_stop_handlers();

  const bool tty = isatty(STDOUT_FILENO) != 0;
  const bool clear = tty && !f.no_clear && !f.once && !f.json;
  const auto t0 = clock.now();
  const auto interval = std::chrono::milliseconds(f.interval_ms);
  // --once waits long enough for the slowest default group that a view shows (utilization).
  const auto first_frame = f.once ? std::max<core::Nanos>(interval, std::chrono::milliseconds(1500)) : interval;
  auto next = t0 + first_frame;
  std::string title = fmt::format("gpudoc watch — {} — {} GPU{} — driver {}, CUDA {}", header->host, header->gpus.size(),
                                  header->gpus.size() == 1 ? "" : "s", header->system.driver_version.empty() ? "?" : header->system.driver_version,
                                  header->system.cuda_driver_version.empty() ? "?" : header->system.cuda_driver_version);
  if (clear) std::fputs("\x1b[?25l", stdout);  // hide the cursor while redrawing
  int frames = 0;
  while (true) {
    while (clock.now() < next) {
      for (auto& r : sampler.drain(std::min<core::Nanos>(next - clock.now(), std::chrono::milliseconds(100)))) state.add(r);
      if (stop_requests().load() > 0) break;
    }
    if (stop_requests().load() > 0) break;
    double elapsed = core::to_seconds(clock.now() - t0);
    std::string clock_text;
    if (replay != nullptr) {
      double pos = std::min(elapsed * f.speed, replay_duration);
      state.set_now(replay_start_ns + static_cast<std::int64_t>(pos * 1e9));
      clock_text = fmt::format("t={:.1f} / {:.1f} s", pos, replay_duration);
    } else {
      state.set_now(clock.unix_now_ns());
      clock_text = local_clock(clock.unix_now_ns());
    }
    if (f.json) {
      auto j = view::watch_json(state);
      if (replay != nullptr) j["replay"] = f.trace;
      print_json(j, -1);
    } else {
      std::string frame = view::render_watch(state, {.title = title, .banner = banner, .clock = clock_text});
      if (clear) std::fputs("\x1b[H\x1b[J", stdout);
      std::fputs(frame.c_str(), stdout);
      if (!clear) std::fputs("\n", stdout);
    }
    std::fflush(stdout);
    ++frames;
    if (f.once) break;
    if (f.duration_s > 0 && elapsed >= f.duration_s) break;
    if (replay != nullptr && replay->finished()) break;
    next += interval;
  }
  if (clear) std::fputs("\x1b[?25h", stdout);
  sampler.stop();
  if (replay != nullptr && !f.json)
    std::fprintf(stderr, "gpudoc: that was a replay of %s, not a live GPU.\n", f.trace.c_str());
  return frames > 0 || stop_requests().load() > 0 ? 0 : core::kExitInternal;
}

}  // namespace

void register_watch(CLI::App& app, Action& action) {
  auto f = std::make_shared<WatchFlags>();
  auto* cmd = app.add_subcommand("watch", "Live view of every GPU (or replay a recorded trace)");
  cmd->description(
      "Live view of every GPU, 80 columns wide: sparklines of utilization, SM activity, power,\n"
      "temperature and memory; clocks against their maximum; the clock-event (throttle) reasons;\n"
      "the processes using each GPU. A value the GPU does not report, or that has gone stale,\n"
      "shows as — (never as 0).\n\n"
      "\"util\" is the share of time any kernel ran — not how much of the chip worked. \"SM act\"\n"
      "(GPM, Hopper and newer) is the share of SMs busy: a GPU can read 100% util at 5% SM activity.\n\n"
      "With a TRACE argument, watch replays a recorded trace instead, and says so.");
  cmd->add_option("trace", f->trace, "a trace recorded by `gpudoc record` to replay instead of the live GPUs");
  cmd->add_option("--speed", f->speed, "replay speed (2 = twice as fast)")->capture_default_str();
  cmd->add_option("--interval", f->interval_ms, "refresh every N milliseconds")->capture_default_str();
  cmd->add_option("-d,--duration", f->duration_s, "stop after this many seconds");
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
      "Exit codes: 0 ok, 2 bad flags or trace, 3 no GPU or driver.");
  cmd->callback([f, &action] { action = [f] { return run_watch(*f); }; });
}

}  // namespace gpudoc::cli
