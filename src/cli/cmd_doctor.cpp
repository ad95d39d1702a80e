// gpudoc doctor: the first thing to run. A short live look at every GPU and its diagnosis; on a
// machine without a GPU, a replay of real H200 traces bundled with gpudoc, saying so plainly.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/diagnose_output.hpp"
#include "core/text.hpp"
#include "telemetry/backend_source.hpp"
#include "telemetry/bundled_traces.hpp"
#include "view/diagnoses.hpp"

namespace gpudoc::cli {
namespace {

struct DoctorFlags {
  double duration_s = 10;
  bool replay = false;
  OutputFlags out;
  SamplerFlags sampler;
};

int run_replay(const DoctorFlags& f, const std::string& why, const std::string& full_reason) {
  auto dir = telemetry::find_bundled_traces(telemetry::kShowcaseTraces[0]);
  if (!dir) return report_error(dir.error().with_context(why), f.out.json);
  const std::vector<std::string> names(telemetry::kShowcaseTraces.begin(), telemetry::kShowcaseTraces.end());
  auto items = diagnose::diagnose_files(names, f.out.options, *dir);
  if (!items) return report_error(items.error(), f.out.json);
  const bool asked = f.replay;
  const auto words = view::doctor_replay_words(items->size(), dir->string(), why, asked);
  PrintContext ctx{.banner = words.banner, .closing = words.closing, .replay = true};
  ctx.extra = {{"replay", true}, {"replay_reason", full_reason}, {"replay_dir", dir->string()}};
  if (!f.out.json) print_text(stdout, words.intro);
  int code = print_diagnoses(*items, f.out, ctx);
  // Without a GPU, whatever the replayed traces show, this machine has nothing to vouch for:
  // environment. With --replay the replay is what was asked for, and its findings decide.
  if (asked) return code;
  return code == core::kExitOk || code == core::kExitFinding ? core::kExitEnvironment : code;
}

int run_doctor(const DoctorFlags& f, Context& context) {
  if (auto s = check_output_flags(f.out); !s) return report_error(s.error(), f.out.json);
  if (f.replay) return run_replay(f, "--replay was given", "--replay was given");

  auto live = context.backend.open_gpus();
  if (!live) {
    const auto kind = live.error().kind();
    // No driver, no library, no GPU: show what gpudoc does on recorded traces instead. A backend
    // chosen by hand (replay, fake) that fails is the user's to fix.
    if (context.backend.spec().kind == telemetry::BackendKind::kNvml &&
        (kind == core::ErrorKind::kEnvironment || kind == core::ErrorKind::kNotSupported))
      return run_replay(f, core::first_clause(live.error().message()), live.error().message());
    return report_error(live.error(), f.out.json);
  }
  auto r = record_live(*live, {.duration_s = f.duration_s}, f.sampler, f.out, f.out.json);
  if (!r) return report_error(r.error(), f.out.json);
  PrintContext ctx{.banner = live->banner,
                   .closing = view::doctor_closing(f.duration_s, live->real(), live->replay != nullptr)};
  ctx.extra["live"] = live->real();
  // A replay or fake GPUs were asked for by name: their findings decide the exit code, as with
  // --replay; the banner and the closing line say whose GPUs they were.
  if (!live->real()) ctx.extra["backend"] = telemetry::describe(*live->spec);
  std::vector<Diagnosed> items;
  items.push_back(std::move(r->diagnosed));
  return print_diagnoses(items, f.out, ctx);
}

}  // namespace

void register_doctor(Command& gpudoc, Action& action, Context& context) {
  auto f = std::make_shared<DoctorFlags>();
  Command cmd(gpudoc, "doctor", {{"findings", view::findings_help()}});
  cmd.number("-d,--duration", f->duration_s, {.min = 0, .max = 24 * 3600, .above_min = true, .unit = "seconds"});
  add_output_flags(cmd, f->out);
  cmd.flag("--replay", f->replay);
  f->sampler.add_to(cmd, diagnose::live_periods());
  cmd->callback([f, &action, &context] { action = [f, &context] { return run_doctor(*f, context); }; });
}

}  // namespace gpudoc::cli
