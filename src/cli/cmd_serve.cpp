// gpudoc serve: the sampler running continuously on the backend chosen for the run, served over HTTP
// to Prometheus (/metrics), to scripts (/api/v1/...) and to people (the dashboard at /). The engine
// is serve::Service, the HTTP side serve::Server; this file parses, wires them and waits for a stop.
#include <CLI/CLI.hpp>

#include <chrono>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/structured_log.hpp"
#include "serve/announce.hpp"
#include "serve/config.hpp"
#include "serve/pod_resources.hpp"
#include "serve/process_labels.hpp"
#include "serve/server.hpp"
#include "serve/service.hpp"
#include "telemetry/recorder.hpp"
#include "telemetry/replay_backend.hpp"
#include "view/dashboard_assets.hpp"

namespace gpudoc::cli {
namespace {

struct ServeFlags {
  serve::SettingFlags settings;  // with --config, --store, --no-store; --period is the sampler's
  double duration_s = 0;
  SamplerFlags sampler;
};

// Flags over the config file over the defaults, and the sampler's configuration.
struct Settings : serve::Settings {
  telemetry::SamplerConfig sampler;
};

core::Result<Settings> settings_of(ServeFlags f) {
  f.settings.periods = f.sampler.periods;
  auto resolved = serve::resolve(f.settings);
  if (!resolved) return resolved.error();
  Settings s;
  static_cast<serve::Settings&>(s) = *resolved;
  f.sampler.periods = s.periods;
  auto config = f.sampler.to_config(serve::default_periods());
  if (!config) return config.error();
  s.sampler = std::move(*config);
  return s;
}

int failed(core::LogSink& log, const core::Error& e) {
  log.write(serve::error_record(e));
  return core::exit_code(e.kind());
}

int run_serve(const ServeFlags& f, Context& ctx) {
  auto s = settings_of(f);
  core::LogSink log(s ? s->log_format : serve::flag_log_format(f.settings));
  if (!s) return failed(log, s.error());
  auto live = open_live(ctx, true);  // the banner once the address is bound
  if (!live) return failed(log, live.error());
  auto header = telemetry::make_header(*live->backend, *live->clock, s->sampler, {});
  if (!header) return failed(log, header.error());
  serve::ServiceOptions so = serve::service_options(*s, s->sampler);
  auto labeler = std::make_shared<serve::CgroupLabeler>();
  if (live->real()) so.label_process = [labeler](serve::ProcessSnapshot& p) { (*labeler)(p); };
  so.backend = live->spec->text;
  serve::Service service(*live, *header, so);
  serve::Server server({.host = s->listen.host,
                        .port = s->listen.port,
                        .dcgm_compatible = s->dcgm_compatible,
                        .web_config_file = s->web_config_file,
                        .log = [&log](core::LogRecord r) { log.write(std::move(r)); }},
                       service.handlers([](std::string_view path) -> std::optional<serve::Asset> {
                         auto a = view::dashboard_asset(path);
                         if (!a) return std::nullopt;
                         return serve::Asset{a->body, a->content_type};
                       }));
  if (auto st = service.start(); !st) return failed(log, st.error());
  auto port = server.start();
  if (!port) {
    service.stop();
    return failed(log, port.error());
  }
  if (!live->banner.empty()) log.write(serve::backend_record(live->banner));
  log.write(serve::listening_record(s->listen, *port, live->gpu_count, server.security()));
  if (auto w = serve::exposure_record(s->listen, *port, server.security())) log.write(std::move(*w));
  const auto t0 = std::chrono::steady_clock::now();
  bool replay_end_said = false;
  const auto end = f.duration_s > 0
                       ? t0 + std::chrono::duration_cast<core::Nanos>(std::chrono::duration<double>(f.duration_s))
                       : std::chrono::steady_clock::time_point::max();
  // Sleeps until a signal or the end, waking once a second only to say when a replay has ended.
  while (true) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= end) break;
    auto wait = end - now;
    if (live->replay != nullptr && !replay_end_said) wait = std::min<core::Nanos>(wait, std::chrono::seconds(1));
    if (wait_for_stop(std::min<core::Nanos>(wait, std::chrono::hours(24)))) break;
    if (live->replay != nullptr && live->replay->finished() && !replay_end_said) {
      replay_end_said = true;
      log.write(serve::replay_ended_record(live->spec->file));
    }
  }
  service.stop();  // wakes the event streams first, so the server's threads can end
  server.stop();
  log.write(serve::stopped_record(server.scrapes()));
  return core::kExitOk;
}

}  // namespace

void register_serve(CLI::App& app, Action& action, Context& ctx) {
  auto f = std::make_shared<ServeFlags>();
  auto* cmd =
      app.add_subcommand("serve", "Serve live GPU metrics, findings and verdicts to Prometheus and a dashboard");
  apply_help(*cmd, "serve");
  cmd->add_option("--listen", f->settings.listen, "HOST:PORT, [IPV6]:PORT or PORT (loopback); default 127.0.0.1:9401");
  cmd->add_option("--config", f->settings.config, "a JSON file of settings (docs/serve.md); flags override it");
  cmd->add_option("--web-config-file", f->settings.web_config_file, "TLS and basic auth: exporter-toolkit YAML");
  cmd->add_option("--log-format", f->settings.log_format, "stderr as text (default), logfmt or json");
  cmd->add_flag("--dcgm-compatible", f->settings.dcgm_compatible,
                "also expose dcgm-exporter's metric names and labels (its Grafana dashboard works unchanged)");
  // The same ranges as the config file's keys (serve/config.hpp).
  add_number(*cmd, "--diagnose-window", f->settings.diagnose_window_s, {.min = 2, .max = 3600, .unit = "seconds"},
             "seconds the sliding diagnosis looks at (default 120)");
  add_number(*cmd, "--diagnose-every", f->settings.diagnose_every_s, {.min = 1, .max = 3600, .unit = "seconds"},
             "seconds between two diagnoses (default 10)");
  add_number(*cmd, "--history", f->settings.history_s, {.min = 60, .max = 86400, .unit = "seconds"},
             "seconds of waveforms kept for the dashboard (default 600)");
  cmd->add_flag("--kubernetes-pod-resources{" + std::string(serve::kDefaultPodResourcesSocket) + "}",
                f->settings.kubernetes_pod_resources, "label GPU series with the kubelet's pod (=SOCKET: its socket)");
  cmd->add_option("--hpc-job-mapping-dir", f->settings.hpc_job_mapping_dir, "label GPU series with DIR/<gpu>'s job");
  add_number(*cmd, "--attribution-every", f->settings.attribution_every_s, {.min = 1, .max = 3600, .unit = "seconds"},
             "seconds between two reads of the kubelet and of the folder (default 10)");
  cmd->add_option("--store", f->settings.store,
                  "the store to read verdicts from (default: $GPUDOC_STORE or the user's data folder)");
  cmd->add_flag("--no-store", f->settings.no_store, "read no store: no health or baseline series");
  add_number(*cmd, "-d,--duration", f->duration_s, kDurationRange,
             "stop after this many seconds (default: until SIGINT/SIGTERM)");
  f->sampler.add_to(*cmd, "serve reads gpm every 1000 ms, not 200 (docs/serve.md)");
  cmd->callback([f, &action, &ctx] { action = [f, &ctx] { return run_serve(*f, ctx); }; });
}

}  // namespace gpudoc::cli
