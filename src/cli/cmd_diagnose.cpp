// gpudoc diagnose: what the GPUs' waveforms mean — from trace files, from a short live look, or
// from a recording made while a command runs — with evidence and next steps.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/diagnose_output.hpp"
#include "telemetry/backend_source.hpp"
#include "view/diagnoses.hpp"

namespace gpudoc::cli {
namespace {

struct DiagnoseFlags {
  std::vector<std::string> traces;
  OutputFlags out;
  cost::PriceFlags prices;  // the Cost block's (docs/cost.md)
  bool live = false;
  bool quiet = false;
  diagnose::LiveRun run;  // --duration, -o, --keep-trace, the command
  SamplerFlags sampler;
};

constexpr double kDefaultLiveSeconds = 30;

int run_diagnose(DiagnoseFlags f, Context& context) {
  // CLI11 puts everything after -- into the positionals: with --live or -o those are the command.
  if (auto s = check_output_flags(f.out); !s) return report_error(s.error(), f.out.json);
  auto prices = cost::load_prices(f.prices);  // before anything runs: a bad price is exit 2 at once
  if (!prices) return report_error(prices.error(), f.out.json);
  const bool record_mode = f.live || !f.run.command.empty();
  if (record_mode && !f.traces.empty())
    return usage_error(
        fmt::format("give trace files or --live / -- CMD, not both (got {} and a live run)", f.traces.front()),
        f.out.json);
  if (!record_mode && f.traces.empty())
    return usage_error(
        "nothing to diagnose: give a trace (gpudoc diagnose run.jsonl), --live, or a command "
        "after -- (gpudoc diagnose -- python3 train.py); see gpudoc diagnose --help",
        f.out.json);
  if (!record_mode && (f.run.duration_s > 0 || !f.run.output.empty() || f.run.keep_trace))
    return usage_error("--duration, -o and --keep-trace apply to --live and -- CMD only", f.out.json);

  if (!record_mode) {
    auto items = diagnose::diagnose_files(f.traces, f.out.options);
    if (!items) return report_error(items.error(), f.out.json);
    PrintContext ctx;
    ctx.prices = &*prices;
    return print_diagnoses(*items, f.out, ctx);
  }

  if (f.run.command.empty() && f.run.duration_s == 0) f.run.duration_s = kDefaultLiveSeconds;
  auto live = context.backend.open_gpus();
  if (!live) return report_error(live.error(), f.out.json);
  auto r = record_live(*live, f.run, f.sampler, f.out, f.quiet || f.out.json);
  if (!r) return report_error(r.error(), f.out.json);
  auto summary = view::live_summary(*r);
  PrintContext ctx{.banner = live->banner, .extra = std::move(summary.extra), .closing = summary.closing};
  if (!live->real()) ctx.extra["backend"] = telemetry::describe(*live->spec);
  std::vector<Diagnosed> items;
  items.push_back(std::move(r->diagnosed));
  ctx.prices = &*prices;
  return print_diagnoses(items, f.out, ctx);
}

}  // namespace

void register_diagnose(Command& gpudoc, Action& action, Context& context) {
  auto f = std::make_shared<DiagnoseFlags>();
  Command cmd(gpudoc, "diagnose", {{"findings", view::findings_help()}});
  cmd.option("traces", f->traces);
  add_output_flags(cmd, f->out);
  add_price_flags(cmd, f->prices);
  cmd.flag("--live", f->live);
  cmd.number("-d,--duration", f->run.duration_s, core::kDurationRange);
  cmd.option("-o,--output", f->run.output);
  cmd.flag("--keep-trace", f->run.keep_trace);
  cmd.flag("-q,--quiet", f->quiet);
  f->sampler.add_to(cmd, diagnose::live_periods());
  cmd->callback([f, &action, &context] {
    action = [f, &context] {
      DiagnoseFlags copy = *f;
      // CLI11 puts the words after `--` among the positionals: they are the command.
      std::size_t n = words_after_double_dash().size();
      if (n > 0 && n <= copy.traces.size()) {
        copy.run.command.assign(copy.traces.end() - static_cast<long>(n), copy.traces.end());
        copy.traces.resize(copy.traces.size() - n);
      }
      return exit_code_after_stop(run_diagnose(std::move(copy), context));  // 128 + N after stop signal N
    };
  });
}

}  // namespace gpudoc::cli
