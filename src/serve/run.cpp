#include "serve/run.hpp"

#include <algorithm>
#include <chrono>
#include <memory>

#include "core/stop_signals.hpp"
#include "cost/prices.hpp"
#include "serve/announce.hpp"
#include "serve/process_labels.hpp"
#include "serve/service.hpp"
#include "telemetry/recorder.hpp"
#include "telemetry/replay_backend.hpp"

namespace gpudoc::serve {
namespace {

int failed(core::LogSink& log, const core::Error& e) {
  log.write(error_record(e));
  return core::exit_code(e.kind());
}

// Sleeps until a stop signal or the end, waking once a second only to say when a replay has ended.
void wait_for_end(const telemetry::Live& live, double duration_s, core::LogSink& log) {
  const auto end = duration_s > 0
                       ? std::chrono::steady_clock::now() +
                             std::chrono::duration_cast<core::Nanos>(std::chrono::duration<double>(duration_s))
                       : std::chrono::steady_clock::time_point::max();
  bool replay_end_said = false;
  while (true) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= end) return;
    auto wait = end - now;
    if (live.replay != nullptr && !replay_end_said) wait = std::min<core::Nanos>(wait, std::chrono::seconds(1));
    if (core::wait_for_stop(std::min<core::Nanos>(wait, std::chrono::hours(24)))) return;
    if (live.replay != nullptr && live.replay->finished() && !replay_end_said) {
      replay_end_said = true;
      log.write(replay_ended_record(live.spec->file));
    }
  }
}

}  // namespace

int run(const telemetry::Live& live, const RunOptions& options, core::LogSink& log) {
  const Settings& s = options.settings;
  auto header = telemetry::make_header(*live.backend, *live.clock, options.sampler, {});
  if (!header) return failed(log, header.error());
  ServiceOptions so = service_options(s, options.sampler);
  // The prices of the environment and the prices file (docs/cost.md), exposed for the rules' money.
  auto prices = cost::load_prices({});
  if (!prices) return failed(log, prices.error());
  so.prices = std::move(*prices);
  auto labeler = std::make_shared<CgroupLabeler>();
  if (live.real()) so.label_process = [labeler](ProcessSnapshot& p) { (*labeler)(p); };
  so.backend = live.spec->text;
  Service service(live, *header, so);
  Server server({.host = s.listen.host,
                 .port = s.listen.port,
                 .dcgm_compatible = s.dcgm_compatible,
                 .web_config_file = s.web_config_file,
                 .log = [&log](core::LogRecord r) { log.write(std::move(r)); }},
                service.handlers(options.assets));
  if (auto st = service.start(); !st) return failed(log, st.error());
  auto port = server.start();
  if (!port) {
    service.stop();
    return failed(log, port.error());
  }
  if (!live.banner.empty()) log.write(backend_record(live.banner));
  log.write(listening_record(s.listen, *port, live.gpu_count, server.security()));
  if (auto w = exposure_record(s.listen, *port, server.security())) log.write(std::move(*w));
  wait_for_end(live, options.duration_s, log);
  service.stop();  // wakes the event streams first, so the server's threads can end
  server.stop();
  log.write(stopped_record(server.scrapes()));
  return core::kExitOk;
}

}  // namespace gpudoc::serve
