// gpudoc report: the history of `gpudoc health` results in the store — clocks, temperatures, power,
// error counts and non-passing checks over time — as terminal sparklines, JSON or an HTML page
// (view/health_report.hpp renders all three).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/clock.hpp"
#include "core/file.hpp"
#include "core/number_input.hpp"
#include "store/guard_history.hpp"
#include "store/health_history.hpp"
#include "view/guard_report.hpp"
#include "view/health_report.hpp"

namespace gpudoc::cli {
namespace {

struct ReportFlags {
  std::string since = "7d";
  std::optional<std::string> html;
  std::optional<std::string> store;
  bool json = false;
  bool guard = false;
};

int run_report(const ReportFlags& f) {
  auto since = core::parse_span("--since", f.since, kMaxDurationSeconds);
  if (!since) return report_error(since.error(), f.json);
  const auto now_ns = core::SystemClock().unix_now_ns();
  if (f.guard) {
    if (f.html) return usage_error("--html is for the health history, not --guard", f.json);
    auto events = store::guard_results_since(f.store, now_ns > *since ? now_ns - *since : 0);
    if (!events) return report_error(events.error(), f.json);
    if (f.json)
      print_json(view::guard_events_json(*events));
    else
      print_text(stdout, view::render_guard_events_text(*events));
    return core::kExitOk;
  }
  auto rows = store::health_results_since(f.store, now_ns > *since ? now_ns - *since : 0);
  if (!rows) return report_error(rows.error(), f.json);
  std::vector<view::StoredHealthRun> runs;
  for (auto& r : *rows) runs.push_back({r.time_unix_ns, std::move(r.payload)});
  const view::HealthHistory h = view::build_health_history(runs);
  if (f.html) {
    auto page = view::render_health_history_html(h, f.since);
    if (!page) return report_error(page.error(), f.json);
    if (auto st = core::write_file(*f.html, *page); !st) return report_error(st.error(), f.json);
  }
  if (f.json) {
    print_json(view::to_json(h));
  } else {
    // Host names, checks and evidence come from the store: shown terminal-safe.
    print_text(stdout, view::render_health_history_text(h, f.since));
    if (f.html) print_text(stdout, fmt::format("HTML report: {}\n", *f.html));
  }
  return core::kExitOk;
}

}  // namespace

void register_report(CLI::App& app, Action& action) {
  auto f = std::make_shared<ReportFlags>();
  CLI::App* cmd = app.add_subcommand("report", "History of the health checks, or of the guard's decisions");
  apply_help(*cmd, "report");
  cmd->add_option("--since", f->since, "how far back: 7d (default), 12h, 2w, ...");
  cmd->add_option("--html", f->html, "also write one self-contained HTML page (zoomable plots, opens offline) to FILE")
      ->type_name("FILE");
  cmd->add_option("--store", f->store, "the store file (default: $GPUDOC_STORE or ~/.local/share/gpudoc/gpudoc.db)");
  cmd->add_flag("--json", f->json, "print the series as JSON");
  cmd->add_flag("--guard", f->guard, "the guard's decisions and actions (gpudoc guard) instead of the health history");
  cmd->callback([f, &action] { action = [f] { return run_report(*f); }; });
}

}  // namespace gpudoc::cli
