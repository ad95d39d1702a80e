// gpudoc report: the history of `gpudoc health` results in the store — clocks, temperatures, power,
// error counts and non-passing checks over time — as terminal sparklines, JSON or an HTML page
// (view/health_report.hpp renders all three).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <map>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/clock.hpp"
#include "core/file.hpp"
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

// "7d", "12h", "30m", "90s" -> nanoseconds: a whole number of the unit, at least 1, and a span of at
// most kMaxDurationSeconds (31.7 years), read by core::parse_number. Errors: kUsage naming the value.
core::Result<std::int64_t> parse_since(const std::string& s) {
  struct Unit {
    std::int64_t seconds;
    std::string_view name;
  };
  static const std::map<char, Unit> kUnits = {{'s', {1, "seconds"}},
                                              {'m', {60, "minutes"}},
                                              {'h', {3600, "hours"}},
                                              {'d', {86400, "days"}},
                                              {'w', {604800, "weeks"}}};
  const auto unit = s.empty() ? kUnits.end() : kUnits.find(s.back());
  if (unit == kUnits.end())
    return core::Error(core::ErrorKind::kUsage,
                       fmt::format("--since {}: expected a number and s, m, h, d or w (e.g. 7d)", s));
  const auto& [per, name] = unit->second;
  const core::NumberRange range{
      .min = 1, .max = std::floor(kMaxDurationSeconds / static_cast<double>(per)), .whole = true, .unit = name};
  auto n = core::parse_number("--since", std::string_view(s).substr(0, s.size() - 1), range, s);
  if (!n) return n.error();
  return static_cast<std::int64_t>(*n) * per * 1'000'000'000;
}

int run_report(const ReportFlags& f) {
  auto since = parse_since(f.since);
  if (!since) return report_error(since.error(), f.json);
  const auto now_ns = core::SystemClock().unix_now_ns();
  if (f.guard) {
    if (f.html)
      return report_error(core::Error(core::ErrorKind::kUsage, "--html is for the health history, not --guard"),
                          f.json);
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
  CLI::App* cmd = app.add_subcommand(
      "report",
      "History of `gpudoc health` results (clocks, temperatures, power, errors), or --guard: the guard's decisions");
  cmd->add_option("--since", f->since, "how far back: 7d (default), 12h, 2w, ...");
  cmd->add_option("--html", f->html, "also write one self-contained HTML page (zoomable plots, opens offline) to FILE")
      ->type_name("FILE");
  cmd->add_option("--store", f->store, "the store file (default: $GPUDOC_STORE or ~/.local/share/gpudoc/gpudoc.db)");
  cmd->add_flag("--json", f->json, "print the series as JSON");
  cmd->add_flag("--guard", f->guard, "the guard's decisions and actions (gpudoc guard) instead of the health history");
  cmd->callback([f, &action] { action = [f] { return run_report(*f); }; });
}

}  // namespace gpudoc::cli
