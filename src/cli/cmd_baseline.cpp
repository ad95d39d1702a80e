// gpudoc baseline: golden baselines and the CI regression gate — record what this machine and a
// workload do, and check later runs against it (exit 1 on a confirmed regression); list, show and
// history read the store (cmd_baseline_store.cpp). Parse, call baseline/gate.hpp, print with view/.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>

#include "baseline/gate.hpp"
#include "bench/run.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/temp_dir.hpp"
#include "view/baseline_report.hpp"

namespace gpudoc::cli {
namespace {

struct BaselineFlags {
  std::string name;
  std::optional<std::string> store;
  std::optional<std::string> config;
  bool json = false;
  baseline::RecordRequest run;  // record's flags; check takes its command, repeat and timeout (0: as recorded)
  // check
  bool allow_different_machine = false;
  bool no_confirm = false;
  cost::PriceFlags prices;  // record and check: the Cost block's (docs/cost.md)
};

// A failed write (stdout closed by `| head -1`) is ignored: what was measured is stored first.
// Baseline, figure, GPU and host names come from the store and the workload: shown terminal-safe.
void print_note(const std::string& n) { print_text(stderr, fmt::format("gpudoc: note: {}\n", n)); }

// record and check: SIGINT, SIGTERM or SIGHUP ends the workload (its whole process group), what
// was measured is stored marked interrupted, and gpudoc exits 128 + the signal. The backend is the
// one chosen for the run; a replay or fake GPUs are not this machine, which is said before anything
// runs (the stored machine context names the backend too). Every file goes in one private folder.
core::Result<baseline::GateEnv> gate_env(const BaselineFlags& f, Context& ctx, std::optional<core::PrivateDir>& dir) {
  install_stop_handlers();  // SIGINT, SIGTERM, SIGHUP: the stop policy of every command
  const telemetry::BackendOrReason b = ctx.backend.open_or_reason();
  if (auto live = ctx.backend.open()) print_banner(*live, "gpudoc: baseline");
  auto made = core::PrivateDir::create("gpudoc-baseline");
  if (!made) return made.error();
  dir = std::move(*made);
  baseline::GateEnv env = baseline::gate_env(b, stop_signal(), *dir);
  env.echo_to_stderr = f.json;
  env.on_note = print_note;
  env.on_progress = [](const std::string& s) { print_text(stderr, fmt::format("gpudoc: baseline: {}\n", s)); };
  return env;
}

// Stopped before anything was measured: nothing stored. Returns the exit code, 128 + sig.
int stopped_before_measuring(const BaselineFlags& f, int sig) {
  print_text(stderr, view::stopped_before_measuring_text(sig));
  if (f.json) print_json(view::stopped_before_measuring_json(f.name, sig));
  return baseline::exit_code_for_signal(sig);
}

int run_record(const BaselineFlags& f, Context& ctx) {
  auto spec = baseline::record_spec(f.run);
  if (!spec) return report_error(spec.error(), f.json);
  auto prices = cost::load_prices(f.prices);  // before anything runs: a bad price is exit 2 at once
  if (!prices) return report_error(prices.error(), f.json);
  auto cfg = baseline::load_config(f.config);
  if (!cfg) return report_error(cfg.error(), f.json);
  auto store = baseline::open_store(f.store, baseline::StoreUse::kWrite);
  if (!store) return report_error(store.error(), f.json);
  std::optional<core::PrivateDir> dir;
  auto env = gate_env(f, ctx, dir);
  if (!env) return report_error(env.error(), f.json);
  auto rec = baseline::record(*store, f.name, *spec, *env);
  if (!rec) return report_error(rec.error(), f.json);
  if (rec->run_id == 0) return stopped_before_measuring(f, *rec->stopped_by);
  return emit(f.json, view::recorded_json(*rec, store->path(), *cfg, *prices),
              view::render_recorded(*rec, store->path(), *cfg, *prices), rec->exit_code);
}

int run_check(const BaselineFlags& f, Context& ctx) {
  auto plan = baseline::plan_check({f.name, f.store, f.config, f.run.command, f.run.repeat, f.run.timeout_s});
  if (!plan) return report_error(plan.error(), f.json);
  auto prices = cost::load_prices(f.prices);
  if (!prices) return report_error(prices.error(), f.json);
  std::optional<core::PrivateDir> dir;
  auto env = gate_env(f, ctx, dir);
  if (!env) return report_error(env.error(), f.json);
  auto out =
      baseline::check(*plan, *env, {.allow_different_machine = f.allow_different_machine, .confirm = !f.no_confirm});
  if (!out) return report_error(out.error(), f.json);
  if (out->run_id == 0) return stopped_before_measuring(f, *out->stopped_by);
  return emit(f.json, view::check_json(*plan, *out, *prices), view::render_check(*plan, *out, *prices), out->exit_code);
}

void add_run_options(Command& cmd, BaselineFlags& f) {
  cmd.option("--config", f.config);
  cmd.number("--repeat", f.run.repeat, {.min = 1, .max = 1000, .whole = true});
  cmd.number("--timeout", f.run.timeout_s,
             {.min = 0,
              .max = core::kMaxDurationSeconds,
              .above_min = true,
              .unit = "seconds",
              .note = "leave the flag out for no timeout"});
  cmd.option("command", f.run.command);
  add_price_flags(cmd, f.prices);
  add_baseline_store_flags(cmd, f.store, f.json);
}

}  // namespace

void register_baseline(Command& gpudoc, Action& action, Context& ctx) {
  auto f = std::make_shared<BaselineFlags>();
  Command cmd(gpudoc, "baseline");
  cmd->require_subcommand(1);

  Command rec(cmd, "record");
  rec.option("name", f->name)->required();
  // one word, split on ',' by record_spec: CLI11 counts a delimiter's pieces as values
  rec.option("--bench", f->run.bench_keys)->expected(0, 1);
  rec.flag("--quick", f->run.quick);
  rec.flag("--full", f->run.full);
  rec.flag("--probe", f->run.probe);
  rec.number("--device", f->run.device, bench::kDeviceRange);
  add_run_options(rec, *f);
  rec->callback([f, rec = &*rec, &action, &ctx] {
    f->run.bench = rec->count("--bench") > 0;
    action = [f, &ctx] { return run_record(*f, ctx); };
  });

  Command chk(cmd, "check");
  chk.option("name", f->name)->required();
  chk.flag("--allow-different-machine", f->allow_different_machine);
  chk.flag("--no-confirm", f->no_confirm);
  add_run_options(chk, *f);
  chk->callback([f, &action, &ctx] { action = [f, &ctx] { return run_check(*f, ctx); }; });

  register_baseline_store(cmd, action);
}

}  // namespace gpudoc::cli
