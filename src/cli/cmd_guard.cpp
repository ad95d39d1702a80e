// gpudoc guard: runs a training job (or watches running processes) and guards it: forecasts each
// GPU's temperature and memory headroom, escalates per the policy, advises the job over the job
// channel, and logs every decision. The engine is guard/session.hpp; this file parses, opens the
// backend, the channel and where events are kept (guard/event_records.hpp), and prints.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "guard/channel.hpp"
#include "guard/event_records.hpp"
#include "guard/policy.hpp"
#include "guard/session.hpp"
#include "health/health.hpp"
#include "view/guard_live.hpp"

namespace gpudoc::cli {
namespace {

struct GuardFlags {
  std::optional<std::string> policy;
  bool show_policy = false;
  std::string signals;
  guard::RecordsOptions records;  // --log, --store, --no-store
  bool json = false;
  bool quiet = false;
  guard::SessionOptions session;  // --dry-run, --pid, --ack-deadline, the command
  SamplerFlags sampler;
};

int run_guard(GuardFlags f, Context& ctx) {
  auto policy = f.policy ? guard::load_policy(*f.policy) : core::Result<guard::Policy>(guard::default_policy());
  if (!policy) return report_error(policy.error(), f.json);
  if (f.show_policy) {
    std::fputs(std::string(guard::default_policy_text()).c_str(), stdout);
    return 0;
  }
  if (f.session.command.empty() == f.session.pids.empty())
    return usage_error("give a command after -- or --pid PID..., not both", f.json);
  auto signals = guard::signal_opt_in_from_text(f.signals);
  if (!signals) return report_error(signals.error(), f.json);
  auto config = f.sampler.to_config();
  if (!config) return report_error(config.error(), f.json);

  auto records = guard::EventRecords::open(f.records);
  if (!records) return report_error(records.error(), f.json);
  auto live = open_live(ctx, true);  // the banner after the store's warnings
  if (!live) return report_error(live.error(), f.json);
  if (!live->real()) records->set_backend(live->spec->text);
  auto channel = guard::ChannelServer::open(*live->clock);
  if (!channel) return report_error(channel.error(), f.json);

  guard::SessionOptions o = f.session;
  o.policy = std::move(*policy);
  o.signal_opt_in = *signals;
  o.sampler = *config;
  o.real_gpus = live->real();
  o.clock_speed = live->speed > 0 ? live->speed : 1.0;
  o.fatal_xid = health::xid_needs_reset;
  if (!f.quiet) print_banner(*live);
  guard::EventSink sink = [&](const nlohmann::json& e) {
    records->keep(e);
    if (!f.quiet)
      if (auto line = view::guard_event_line(e)) print_text(stderr, fmt::format("gpudoc guard: {}\n", *line));
  };
  auto r = guard::run_session(*live->backend, *live->clock, *channel, o, stop_requests(), sink);
  if (!r) return report_error(r.error(), f.json);
  if (f.json) {
    auto j = guard::to_json(*r);
    records->describe(j);
    print_json(j);
  }
  return r->exit_code.value_or(0);  // after stop signal N: 128 + N (run_guard's caller)
}

}  // namespace

void register_guard(Command& gpudoc, Action& action, Context& ctx) {
  auto f = std::make_shared<GuardFlags>();
  Command cmd(gpudoc, "guard");
  cmd.option("--policy", f->policy);
  cmd.flag("--show-policy", f->show_policy);
  cmd.flag("--dry-run", f->session.dry_run);
  cmd.option("--pid", f->session.pids)->delimiter(',');
  cmd.option("--signal", f->signals);
  cmd.option("--log", f->records.log);
  cmd.option("--store", f->records.store);
  cmd.flag("--no-store", f->records.no_store);
  cmd.number("--ack-deadline", f->session.ack_deadline_s,
             {.min = 0, .max = 3600, .above_min = true, .unit = "seconds"});
  f->sampler.add_to(cmd, guard::sampler_periods());
  cmd.flag("--json", f->json);
  cmd.flag("-q,--quiet", f->quiet);
  cmd.option("command", f->session.command);
  cmd->callback([f, &action, &ctx] { action = [f, &ctx] { return exit_code_after_stop(run_guard(*f, ctx)); }; });
}

}  // namespace gpudoc::cli
