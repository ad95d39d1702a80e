// gpudoc record: sample every GPU into a trace while a command runs, for a duration, or until Ctrl-C.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "telemetry/backend_source.hpp"
#include "telemetry/recorder.hpp"

namespace gpudoc::cli {
namespace {

struct RecordFlags {
  std::string output;
  double duration_s = 0;
  bool json = false;
  bool quiet = false;
  SamplerFlags sampler;
  std::vector<std::string> command;
};

int run_record(const RecordFlags& f, Context& ctx) {
  auto duration = parse_duration(f.duration_s);
  if (!duration) return report_error(duration.error(), f.json);
  if (f.output == "-" && !f.command.empty())
    return report_error(core::Error(core::ErrorKind::kUsage,
                                    "-o - writes the trace to stdout, where the command's own output would mix into it; "
                                    "give a file name"),
                        f.json);
  auto config = f.sampler.to_config();
  if (!config) return report_error(config.error(), f.json);
  auto live = ctx.backend.open_gpus();
  if (!live) return report_error(live.error(), f.json);
  const int count = live->gpu_count;

  telemetry::RecordOptions opt;
  opt.output_path = f.output;
  opt.command = f.command;
  opt.sampler = *config;
  opt.wake_interval = live->wall_time(opt.wake_interval);
  opt.duration = *duration;
  const bool show_progress = !f.quiet && f.command.empty() && isatty(STDERR_FILENO) != 0;
  if (show_progress)
    opt.on_progress = [&](double elapsed, std::uint64_t lines) {
      std::fprintf(stderr, "\rgpudoc: recording %s: %.0f s, %llu sample lines  (Ctrl-C stops)", f.output.c_str(), elapsed,
                   static_cast<unsigned long long>(lines));
    };
  install_stop_handlers();
  if (!f.quiet) {
    if (!live->banner.empty()) std::fprintf(stderr, "gpudoc: %s\n", live->banner.c_str());
    const std::string until = f.command.empty() ? (opt.duration ? fmt::format(" for {} s", f.duration_s)
                                                                : std::string(live->replay ? " until it ends or Ctrl-C" : " until Ctrl-C"))
                                                : fmt::format(" while `{}` runs", fmt::join(f.command, " "));
    const int n = config->gpus.empty() ? count : static_cast<int>(config->gpus.size());
    std::fprintf(stderr, "gpudoc: recording %d GPU%s to %s%s\n", n, n == 1 ? "" : "s", f.output.c_str(), until.c_str());
  }

  auto r = telemetry::record(*live->backend, *live->clock, opt, stop_requests(), &forward_signal());
  if (show_progress) std::fputs("\n", stderr);
  if (!r) return report_error(r.error(), f.json);

  if (f.json) {
    nlohmann::json j = {{"trace", f.output},        {"duration_s", r->duration_s}, {"gpus", r->gpu_count},
                        {"sample_lines", r->sample_lines}, {"dropped_records", r->dropped_records},
                        {"end_reason", r->end_reason}, {"backend", telemetry::describe(*live->spec)}};
    if (r->command_exit_code) j["command_exit_code"] = *r->command_exit_code;
    print_json(j);
  }
  if (!f.quiet) {
    std::string lost;
    for (std::size_t i = 0; i < r->gpus.size(); ++i)
      if (r->gpus[i].lost) lost += fmt::format(" GPU {} was lost.", i);
    std::fprintf(stderr, "gpudoc: wrote %s: %.1f s, %zu GPU%s, %llu sample lines, %llu dropped (%s).%s\n", f.output.c_str(),
                 r->duration_s, r->gpu_count, r->gpu_count == 1 ? "" : "s", static_cast<unsigned long long>(r->sample_lines),
                 static_cast<unsigned long long>(r->dropped_records), r->end_reason.c_str(), lost.c_str());
  }
  // The command's exit code passes through, so `gpudoc record -- CMD` can stand in for CMD.
  if (r->command_exit_code) return *r->command_exit_code;
  return r->end_reason == "interrupted" ? 130 : 0;
}

}  // namespace

void register_record(CLI::App& app, Action& action, Context& ctx) {
  auto f = std::make_shared<RecordFlags>();
  auto* cmd = app.add_subcommand("record", "Record every GPU's telemetry into a trace file");
  cmd->description(
      "Record every GPU's telemetry into a trace file (JSON Lines, docs/trace-format.md).\n\n"
      "Each metric group is read on its own period, matched to how often the sensor really\n"
      "updates; a metric the GPU does not support is left out, never written as 0. With a command\n"
      "after --, gpudoc runs it (output untouched), records while it runs and exits with its exit\n"
      "code. Ctrl-C leaves a valid file: the trace ends with an \"end\" line saying why it stopped.\n\n"
      "With --backend replay:FILE it records the replayed trace (header backend \"replay\") until\n"
      "the replay ends; with --backend fake:N, N scripted GPUs (backend \"fake\").");
  cmd->add_option("-o,--output", f->output, "trace file to write (- for stdout, without a command)")->required();
  cmd->add_option("-d,--duration", f->duration_s,
                  "stop after this many seconds (with a command: whichever comes first); left out: until the command "
                  "ends or Ctrl-C");
  f->sampler.add_to(*cmd);
  cmd->add_flag("--json", f->json, "print a JSON summary on stdout at the end");
  cmd->add_flag("-q,--quiet", f->quiet, "no progress or summary on stderr");
  cmd->add_option("command", f->command, "the command to run and record while it runs (after --)");
  cmd->footer(
      "Examples:\n"
      "  gpudoc record -o idle.jsonl --duration 30\n"
      "  gpudoc record -o train.jsonl -- python3 train.py --epochs 1\n"
      "  gpudoc record -o fast.jsonl --period fast=100,gpm=100 --gpus 0 -- ./bench\n"
      "  gpudoc --backend fake:2 record -o demo.jsonl --duration 10\n"
      "Exit codes: the command's own, else 0; 130 after Ctrl-C; 2 bad flags; 3 no GPU or driver.");
  cmd->callback([f, &action, &ctx] { action = [f, &ctx] { return run_record(*f, ctx); }; });
}

}  // namespace gpudoc::cli
