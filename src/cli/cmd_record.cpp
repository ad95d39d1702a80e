// gpudoc record: sample every GPU into a trace while a command runs, for a duration, or until Ctrl-C.
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <cstdio>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "telemetry/backend_source.hpp"
#include "telemetry/recorder.hpp"
#include "view/record_text.hpp"

namespace gpudoc::cli {
namespace {

struct RecordFlags {
  telemetry::RecordOptions run;  // -o and the command; the sampler and the duration are set by run_record
  double duration_s = 0;
  bool json = false;
  bool quiet = false;
  SamplerFlags sampler;
};

int run_record(const RecordFlags& f, Context& ctx) {
  const std::string& output = f.run.output_path;
  if (output == "-" && !f.run.command.empty())
    return usage_error(
        "-o - writes the trace to stdout, where the command's own output would mix into it; "
        "give a file name",
        f.json);
  auto config = f.sampler.to_config();
  if (!config) return report_error(config.error(), f.json);
  auto live = open_live(ctx, f.quiet);
  if (!live) return report_error(live.error(), f.json);

  telemetry::RecordOptions opt = f.run;
  opt.sampler = *config;
  opt.wake_interval = live->wall_time(opt.wake_interval);
  opt.duration = core::duration_of(f.duration_s);
  const bool show_progress = !f.quiet && f.run.command.empty() && isatty(STDERR_FILENO) != 0;
  if (show_progress)
    opt.on_progress = [&output](double elapsed, std::uint64_t lines) {
      std::fputs(view::record_progress_line(output, elapsed, lines).c_str(), stderr);
    };
  if (!f.quiet) {
    const int n = config->gpus.empty() ? live->gpu_count : static_cast<int>(config->gpus.size());
    print_text(stderr, view::record_start_line(n, output, f.run.command, f.duration_s, live->replay != nullptr));
  }

  auto r = telemetry::record(*live->backend, *live->clock, opt, stop_requests());
  if (show_progress) std::fputs("\n", stderr);
  if (!r) return report_error(r.error(), f.json);

  if (f.json) print_json(view::record_json(*r, output, *live->spec));
  if (!f.quiet) print_text(stderr, view::record_summary_line(*r, output));
  // The command's exit code passes through, so `gpudoc record -- CMD` can stand in for CMD; after a
  // stop signal N, 128 + N (run_record's caller).
  return r->command_exit_code.value_or(0);
}

}  // namespace

void register_record(Command& gpudoc, Action& action, Context& ctx) {
  auto f = std::make_shared<RecordFlags>();
  Command cmd(gpudoc, "record");
  cmd.option("-o,--output", f->run.output_path)->required();
  cmd.number("-d,--duration", f->duration_s, core::kDurationRange);
  f->sampler.add_to(cmd);
  cmd.flag("--json", f->json);
  cmd.flag("-q,--quiet", f->quiet);
  cmd.option("command", f->run.command);
  cmd->callback([f, &action, &ctx] { action = [f, &ctx] { return exit_code_after_stop(run_record(*f, ctx)); }; });
}

}  // namespace gpudoc::cli
