// gpudoc report: the history of `gpudoc health` results in the store — clocks, temperatures, power,
// error counts and non-passing checks over time — as terminal sparklines, JSON or an HTML page
// (view/health_report.hpp renders all three).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/clock.hpp"
#include "core/number_input.hpp"
#include "fleet/report.hpp"
#include "store/guard_history.hpp"
#include "store/health_history.hpp"
#include "view/fleet_html.hpp"
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
  bool fleet = false;
  std::string prometheus;
  std::string by = "namespace";
  std::optional<std::string> until;
};

// --fleet: serve's counters read back from Prometheus (fleet/report.hpp).
int run_fleet(const ReportFlags& f, std::int64_t since_s, double now_s) {
  if (f.prometheus.empty() || f.guard)
    return usage_error("--fleet needs --prometheus URL (and does not take --guard)", f.json);
  auto prom = fleet::Prometheus::open(f.prometheus);
  if (!prom) return report_error(prom.error(), f.json);
  auto r = fleet::build_report(*prom, {.end_s = now_s, .since_s = since_s, .by = f.by});
  if (!r) return report_error(r.error(), f.json);
  if (f.html)
    if (auto st = write_page(*f.html, view::fleet_html(*r)); !st) return report_error(st.error(), f.json);
  // Node, namespace and job names come from Prometheus's labels: shown terminal-safe.
  return emit(f.json, fleet::to_json(*r),
              fleet::render_text(*r) + (f.html ? fmt::format("HTML report: {}\n", *f.html) : ""));
}

int run_report(const ReportFlags& f) {
  auto since = core::parse_span("--since", f.since, core::kMaxDurationSeconds);
  if (!since) return report_error(since.error(), f.json);
  const auto now_ns = core::SystemClock().unix_now_ns();
  const auto until = f.until ? core::parse_instant("--until", *f.until) : static_cast<double>(now_ns) / 1e9;
  if (!until) return report_error(until.error(), f.json);
  if (!f.guard)
    if (auto st = check_html_flag(f.html); !st) return report_error(st.error(), f.json);
  if (f.fleet) return run_fleet(f, *since / 1'000'000'000, *until);
  if (f.guard) {
    if (f.html) return usage_error("--html is for the health history, not --guard", f.json);
    auto events = store::guard_results_since(f.store, now_ns > *since ? now_ns - *since : 0);
    if (!events) return report_error(events.error(), f.json);
    return emit(f.json, view::guard_events_json(*events), view::render_guard_events_text(*events));
  }
  auto rows = store::health_results_since(f.store, now_ns > *since ? now_ns - *since : 0);
  if (!rows) return report_error(rows.error(), f.json);
  const view::HealthHistory h = view::build_health_history(*rows);
  if (f.html)
    if (auto st = write_page(*f.html, view::render_health_history_html(h, f.since)); !st)
      return report_error(st.error(), f.json);
  // Host names, checks and evidence come from the store: shown terminal-safe.
  return emit(f.json, view::to_json(h),
              view::render_health_history_text(h, f.since) + (f.html ? fmt::format("HTML report: {}\n", *f.html) : ""));
}

}  // namespace

void register_report(Command& gpudoc, Action& action) {
  auto f = std::make_shared<ReportFlags>();
  Command cmd(gpudoc, "report");
  cmd.option("--since", f->since);
  cmd.option("--html", f->html);
  cmd.option("--store", f->store);
  cmd.flag("--json", f->json);
  cmd.flag("--fleet", f->fleet);
  cmd.option("--prometheus", f->prometheus);
  cmd.option("--by", f->by);
  cmd.option("--until", f->until);
  cmd.flag("--guard", f->guard);
  cmd->callback([f, &action] { action = [f] { return run_report(*f); }; });
}

}  // namespace gpudoc::cli
