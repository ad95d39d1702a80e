// gpudoc profile: run a CUDA program under the CUPTI injection library (libgpudoc_profile.so, by
// CUDA_INJECTION64_PATH) and say, step by step, where its GPU time goes and whether CUDA Graphs
// would help. The program is not modified; its records land in a private folder made here.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/host.hpp"
#include "core/process.hpp"
#include "profile/analysis.hpp"
#include "profile/chrome_trace.hpp"
#include "profile/launch.hpp"
#include "profile/records.hpp"
#include "view/profile_report.hpp"

namespace gpudoc::cli {
namespace {

struct ProfileFlags {
  std::string trace_output;  // -o: Chrome/Perfetto trace
  std::string html;
  std::string input;  // --input: analyse saved records, run nothing
  std::size_t steps = 0;
  bool json = false;
  std::string sample;       // --sample ON:OFF seconds
  profile::ProfileRun run;  // the command, --duration, --records (keep the raw records)
  cost::PriceFlags prices;  // the Cost block's (docs/cost.md)
  cost::PriceBook book;     // what they came to (run_profile)
  std::string host;
  [[nodiscard]] view::ProfileCost cost() const { return {.prices = &book, .host = host}; }
};

core::Status write_outputs(const ProfileFlags& f, const profile::RecordSet& set, const profile::Profile& p) {
  if (!f.trace_output.empty())
    if (auto st = profile::save_chrome_trace(set, f.trace_output); !st) return st;
  if (!f.html.empty()) return write_page(f.html, view::profile_html(p, f.run.command, f.cost()));
  return core::ok_status();
}

int run_profile(ProfileFlags& f) {
  // Before anything runs: a bad price is exit 2, a page this build cannot write exit 3, at once.
  auto book = cost::load_prices(f.prices);
  if (!book) return report_error(book.error(), f.json);
  if (auto st = check_html_flag(f.html); !st) return report_error(st.error(), f.json);
  f.book = std::move(*book);
  f.host = core::host_name();
  if (f.run.command.empty() == f.input.empty())
    return usage_error(
        "give a command to profile after -- (gpudoc profile -- python3 train.py), or "
        "--input RECORDS to analyse saved records, not both",
        f.json);
  if (!f.sample.empty() && (f.run.sample_env = profile::sample_to_env(f.sample)).empty())
    return usage_error(fmt::format("--sample {}: give seconds traced and seconds not, as ON:OFF "
                                   "(2:18 traces 2 s of every 20 s), each at least 0.001",
                                   f.sample),
                       f.json);
  core::Result<profile::Profiled> run = core::Error(core::ErrorKind::kInternal, "nothing run");
  if (!f.input.empty()) {
    run = profile::read_saved_records(f.input, f.run.records_copy);
  } else {
    install_stop_handlers();  // before the spawn: from then on a stop signal stops the program's group
    bool stopped = false;
    f.run.stdout_to_stderr = f.json;  // stdout is the JSON document's
    run = profile::profile_program(f.run, stop_requests(), stopped);
    if (!run && stopped) {  // the caller exits 128 + N
      std::fprintf(stderr, "gpudoc: profile: stopped by %s before the program wrote its records: nothing to analyse\n",
                   core::signal_name(stop_signal().signal.load()).c_str());
      return 0;
    }
  }
  if (!run) return report_error(run.error(), f.json);
  const auto& set = run->records;
  const int exit_code = run->exit_code;
  const std::size_t files = run->processes;
  profile::AnalysisOptions opt;
  opt.max_steps = f.steps;
  const profile::Profile p = profile::analyse(set, opt);
  const auto what = f.input.empty() ? f.run.command : std::vector<std::string>{f.input};
  if (f.json) {
    auto j = view::profile_json(p, what, f.cost());
    j["processes_profiled"] = files;
    j["exit_code"] = exit_code;
    print_json(j);
  } else {
    // Kernel names and the command come from the profiled program: shown terminal-safe.
    print_text(stdout, view::profile_text(p, what, f.cost()));
    if (files > 1) std::printf("(%zu processes were profiled; this is the one that ran the most kernels)\n", files);
  }
  // The analysis is printed first: a trace or page that cannot be written loses none of it.
  if (auto st = write_outputs(f, set, p); !st) {
    report_error(st.error(), false);
    return std::max(exit_code, core::exit_code(st.error().kind()));
  }
  return exit_code;
}

}  // namespace

void register_profile(Command& gpudoc, Action& action) {
  auto f = std::make_shared<ProfileFlags>();
  Command cmd(gpudoc, "profile");
  cmd.option("-o,--output", f->trace_output);
  cmd.option("--html", f->html);
  cmd.number("-d,--duration", f->run.duration_s, core::kDurationRange);
  cmd.option("--sample", f->sample);
  cmd.number("--steps", f->steps, {.min = 1, .max = 1e9, .whole = true});
  cmd.flag("--json", f->json);
  cmd.option("--records", f->run.records_copy);
  cmd.option("--input", f->input);
  add_price_flags(cmd, f->prices);
  cmd.option("command", f->run.command);
  cmd->callback([f, &action] { action = [f] { return exit_code_after_stop(run_profile(*f)); }; });
}

}  // namespace gpudoc::cli
