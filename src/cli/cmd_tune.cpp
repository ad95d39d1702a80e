// gpudoc tune: the changes the diagnosis points to, measured on the user's job one layer at a time
// (tune/tune.hpp); flags in, the report out (view/tune_report.hpp), and --apply / --baseline.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "baseline/gate.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/temp_dir.hpp"
#include "core/text.hpp"
#include "health/host.hpp"
#include "tune/apply.hpp"
#include "tune/tune.hpp"
#include "view/tune_report.hpp"

namespace gpudoc::cli {
namespace {

struct TuneFlags {
  tune::Request request;
  double budget_min = tune::kDefaultBudgetS / 60;
  std::string only;
  bool apply = false;
  bool print = false;
  bool json = false;
  std::optional<std::string> html;
  std::optional<std::string> baseline;
  std::optional<std::string> store;
};

int run_tune(TuneFlags& f, Context& ctx) {
  if (f.apply && f.print) return usage_error("--apply and --print: give one", f.json);
  f.request.budget_s = f.budget_min * 60;
  f.request.only = core::split_list(f.only);
  // A page that cannot be written, or a store that cannot be opened, fails now, not after minutes
  // of tuning.
  if (auto st = check_html_flag(f.html); !st) return report_error(st.error(), f.json);
  std::optional<store::Database> store;
  if (f.baseline) {
    auto s = baseline::open_store(f.store, baseline::StoreUse::kWrite);
    if (!s) return report_error(s.error(), f.json);
    store = std::move(*s);
  }
  install_stop_handlers();
  const telemetry::BackendOrReason b = ctx.backend.open_or_reason();
  if (auto live = ctx.backend.open()) print_banner(*live, "gpudoc: tune");
  auto dir = core::PrivateDir::create("gpudoc-tune");
  if (!dir) return report_error(dir.error(), f.json);
  health::SystemHostReader host;
  tune::Env env{.backend = b.backend,
                .clock = b.clock,
                .no_gpu_reason = b.why_not.substr(0, b.why_not.find('\n')),
                .stop = &stop_signal(),
                .dir = &*dir,
                .host = &host,
                .on_progress = [](const std::string& s) { print_text(stderr, "gpudoc: tune: " + s + "\n"); }};
  auto report = tune::run(f.request, env);
  if (!report) return report_error(report.error(), f.json);
  nlohmann::json j = tune::to_json(*report);
  int code = report->exit_code;
  int page_code = core::kExitOk;
  // A page that cannot be written (a missing folder) is reported, and the report still printed.
  if (f.html) {
    if (auto st = write_page(*f.html, view::tune_html(*report)); !st) {
      report_error(st.error(), false);
      page_code = core::exit_code(st.error().kind());
      f.html.reset();
    } else {
      j["html"] = *f.html;
    }
  }
  if (store && !report->stopped_by) {
    baseline::GateEnv gate = baseline::gate_env(b, stop_signal(), *dir);
    gate.echo_to_stderr = true;
    gate.on_note = [](const std::string& n) { print_text(stderr, "gpudoc: note: " + n + "\n"); };
    auto rec = tune::record_tuned(*store, *f.baseline, *report, gate);
    if (!rec) return report_error(rec.error(), f.json);
    j["baseline"] = {{"name", *f.baseline}, {"run_id", rec->run_id}, {"command", tune::tuned_command(*report)}};
    print_text(stderr, fmt::format("gpudoc: tune: the tuned job is baseline '{}' (run {}): `gpudoc baseline check {}` "
                                   "guards it\n",
                                   *f.baseline, rec->run_id, *f.baseline));
  }
  if (f.json) {
    print_json(j);
  } else if (f.print) {
    print_text(stderr, view::tune_text(*report));
    for (const auto& line : report->apply_lines) print_text(stdout, line + "\n");
  } else {
    print_text(stdout, view::tune_text(*report) + (f.html ? "HTML page: " + *f.html + "\n" : ""));
  }
  if (f.apply && !report->stopped_by) {
    auto ran = tune::run_tuned(f.request, *report, env);
    if (!ran) return report_error(ran.error(), f.json);
    code = *ran;
  }
  return std::max(code, page_code);
}

}  // namespace

void register_tune(Command& gpudoc, Action& action, Context& ctx) {
  auto f = std::make_shared<TuneFlags>();
  Command cmd(gpudoc, "tune");
  cmd.number("--budget", f->budget_min, {.min = 0, .max = 10080, .above_min = true, .unit = "minutes"});
  cmd.number("--steps", f->request.steps, {.min = 1, .max = 100000, .whole = true});
  cmd.number("--warmup", f->request.warmup, {.min = 0, .max = 100000, .whole = true});
  cmd.option("--metric", f->request.metric);
  cmd.option("--only", f->only);
  cmd.flag("--allow-numerics", f->request.allow_numerics);
  cmd.number("--min-gain", f->request.min_gain_percent, {.min = 0, .max = 1000, .unit = "percent"});
  cmd.flag("--apply", f->apply);
  cmd.flag("--print", f->print);
  cmd.flag("--json", f->json);
  cmd.option("--html", f->html);
  cmd.option("--baseline", f->baseline);
  cmd.option("--store", f->store);
  cmd.option("--logs", f->request.logs_dir);
  cmd.option("command", f->request.command);
  cmd->callback([f, &action, &ctx] { action = [f, &ctx] { return exit_code_after_stop(run_tune(*f, ctx)); }; });
}

}  // namespace gpudoc::cli
