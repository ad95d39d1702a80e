// gpudoc serve: the sampler running continuously on the backend chosen for the run, served over HTTP
// to Prometheus (/metrics), to scripts (/api/v1/...) and to people (the dashboard at /). The engine
// is serve::run (the service, the server, the wait for a stop); this file parses and hands it the
// settings, the GPUs and the dashboard's files.
#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/structured_log.hpp"
#include "serve/announce.hpp"
#include "serve/config.hpp"
#include "serve/pod_resources.hpp"
#include "serve/run.hpp"
#include "view/dashboard_assets.hpp"

namespace gpudoc::cli {
namespace {

struct ServeFlags {
  serve::SettingFlags settings;  // with --config, --store, --no-store; --period is the sampler's
  double duration_s = 0;
  SamplerFlags sampler;
};

int run_serve(const ServeFlags& f, Context& ctx) {
  serve::SettingFlags flags = f.settings;
  flags.periods = f.sampler.periods;
  auto s = serve::resolve(flags);  // flags over the config file over the defaults
  auto sampler = s ? serve::sampler_config(*s, f.sampler.gpus, !f.sampler.no_xid)
                   : core::Result<telemetry::SamplerConfig>(s.error());
  core::LogSink log(s ? s->log_format : serve::flag_log_format(f.settings));
  auto live = sampler ? open_live(ctx, true) : core::Result<telemetry::Live>(sampler.error());  // the banner: run's
  if (!live) {
    log.write(serve::error_record(live.error()));
    return core::exit_code(live.error().kind());
  }
  return serve::run(*live,
                    {.settings = *s,
                     .sampler = *sampler,
                     .duration_s = f.duration_s,
                     .assets = [](std::string_view path) -> std::optional<serve::Asset> {
                       auto a = view::dashboard_asset(path);
                       if (!a) return std::nullopt;
                       return serve::Asset{a->body, a->content_type};
                     }},
                    log);
}

}  // namespace

void register_serve(Command& gpudoc, Action& action, Context& ctx) {
  auto f = std::make_shared<ServeFlags>();
  Command cmd(gpudoc, "serve");
  cmd.option("--listen", f->settings.listen);
  cmd.option("--config", f->settings.config);
  cmd.option("--web-config-file", f->settings.web_config_file);
  cmd.option("--log-format", f->settings.log_format);
  cmd.flag("--dcgm-compatible", f->settings.dcgm_compatible);
  // The same ranges as the config file's keys (serve/config.hpp).
  cmd.number("--diagnose-window", f->settings.diagnose_window_s, {.min = 2, .max = 3600, .unit = "seconds"});
  cmd.number("--diagnose-every", f->settings.diagnose_every_s, {.min = 1, .max = 3600, .unit = "seconds"});
  cmd.number("--history", f->settings.history_s, {.min = 60, .max = 86400, .unit = "seconds"});
  cmd.flag("--kubernetes-pod-resources{" + std::string(serve::kDefaultPodResourcesSocket) + "}",
           f->settings.kubernetes_pod_resources);
  cmd.option("--hpc-job-mapping-dir", f->settings.hpc_job_mapping_dir);
  cmd.number("--attribution-every", f->settings.attribution_every_s, {.min = 1, .max = 3600, .unit = "seconds"});
  cmd.option("--store", f->settings.store);
  cmd.flag("--no-store", f->settings.no_store);
  cmd.number("-d,--duration", f->duration_s, core::kDurationRange);
  f->sampler.add_to(cmd, serve::default_periods());
  cmd->callback([f, &action, &ctx] { action = [f, &ctx] { return run_serve(*f, ctx); }; });
}

}  // namespace gpudoc::cli
