#include "cli/diagnose_output.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "cli/commands.hpp"
#include "core/file.hpp"
#include "view/cost_view.hpp"
#include "view/diagnoses.hpp"

namespace gpudoc::cli {

findings::Severity OutputFlags::threshold() const {
  return findings::parse_severity(min_severity).value_or(findings::Severity::kWarning);
}

void add_output_flags(Command& cmd, OutputFlags& out) {
  cmd.flag("--json", out.json);
  cmd.option("--html", out.html);
  cmd.option("--min-severity", out.min_severity)->capture_default_str();
  // A window shorter than kMinWindowS can never hold enough of the 0.1 s grid to say anything.
  cmd.number("--window", out.options.window_s,
             {.min = diagnose::kMinWindowS,
              .max = 1e6,
              .unit = "seconds",
              .note = "a window holds at least 20 samples of the 0.1 s analysis grid before anything is concluded"});
}

core::Status check_output_flags(const OutputFlags& f) {
  if (!findings::parse_severity(f.min_severity))
    return core::Error(core::ErrorKind::kUsage,
                       fmt::format("--min-severity {}: expected info, warning or critical", f.min_severity));
  return check_html_flag(f.html);
}

core::Result<diagnose::LiveResult> record_live(const telemetry::Live& live, diagnose::LiveRun run,
                                               const SamplerFlags& sampler, const OutputFlags& f, bool quiet) {
  auto config = sampler.to_config();
  if (!config) return config.error();
  run.sampler = std::move(*config);
  run.command_stdout_to_stderr = f.json;
  run.narrate = quiet ? nullptr : stderr;
  install_stop_handlers();
  return diagnose::record_and_diagnose(live, run, f.options, stop_requests());
}

int print_diagnoses(const std::vector<Diagnosed>& items, const OutputFlags& f, const PrintContext& ctx) {
  const auto threshold = f.threshold();
  const auto tally = view::tally(items, threshold);
  if (!f.html.empty()) {
    auto page = view::diagnoses_html(items, {.banner = ctx.banner, .prices = ctx.prices});
    if (!page) return report_error(page.error().with_context(fmt::format("--html {}", f.html)), f.json);
    if (auto st = core::write_file(f.html, *page); !st) return report_error(st.error(), f.json);
    print_text(stderr,
               fmt::format("gpudoc: wrote {} ({} kB; opens offline in any browser)\n", f.html, page->size() / 1024));
  }
  if (f.json) {
    auto j = view::diagnoses_json(items, threshold, tally);
    if (ctx.prices != nullptr) view::add_costs(j, items, *ctx.prices);
    j.update(ctx.extra);  // the command's own keys, over the diagnoses'
    print_json(j);
    return tally.exit_code();
  }
  const bool color = isatty(STDOUT_FILENO) != 0 && std::getenv("NO_COLOR") == nullptr;
  const auto text = view::render_diagnoses(
      items, threshold, tally,
      {.color = color, .banner = ctx.banner, .closing = ctx.closing, .replay = ctx.replay, .prices = ctx.prices});
  // The report escapes every field it takes from a trace (view/diagnose_render.hpp); without colour
  // the whole text goes through the same escape once more (it changes nothing already escaped).
  if (color)
    std::fputs(text.c_str(), stdout);
  else
    print_text(stdout, text);
  return tally.exit_code();
}

}  // namespace gpudoc::cli
