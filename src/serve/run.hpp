// gpudoc::serve run — `gpudoc serve` from its settings to a stop: the service (the sampler, the
// sliding diagnosis, the store's verdicts) and the HTTP server on the GPUs of `live`, what it
// says on the log (serve/announce.hpp), and the wait for a stop signal (core/stop_signals.hpp) or
// the end of --duration, saying once when a replay has ended.
//
//   core::LogSink log(settings.log_format);
//   int code = serve::run(live, {.settings = settings, .sampler = config, .assets = dashboard}, log);
#pragma once

#include <functional>
#include <optional>
#include <string_view>

#include "core/structured_log.hpp"
#include "serve/config.hpp"
#include "serve/server.hpp"
#include "telemetry/backend_source.hpp"
#include "telemetry/sampler.hpp"

namespace gpudoc::serve {

struct RunOptions {
  Settings settings{};  // resolved (serve::resolve)
  telemetry::SamplerConfig sampler{};
  double duration_s = 0;  // 0: until a stop signal
  // The dashboard's files by URL path; empty: no dashboard.
  std::function<std::optional<Asset>(std::string_view path)> assets{};
};

// Serves until a stop signal or the duration, then stops the service and the server. Returns the
// exit code: 0 once stopped, else the error's (its record written to `log`): the service or the
// server could not start (a port in use, a bad certificate).
[[nodiscard]] int run(const telemetry::Live& live, const RunOptions& options, core::LogSink& log);

}  // namespace gpudoc::serve
