// gpudoc bench: measure what this machine's GPU really does (memory bandwidth, host link, matrix
// multiply, launch cost),
// each figure a median of repetitions with its spread, checked outside the timed region.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>

#include "bench/run.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/file.hpp"
#include "telemetry/backend_source.hpp"
#include "view/bench_html.hpp"
#include "view/bench_text.hpp"

namespace gpudoc::cli {
namespace {

struct BenchFlags {
  bool list = false;
  std::vector<std::string> only;
  bool quick = false;
  bool full = false;
  bool json = false;
  int device = 0;
  std::optional<std::string> html;  // write the page here
  std::optional<std::string> from;  // render this saved `bench --json` instead of running
};

// --from FILE --html PAGE: a saved run as a page; nothing is measured.
int render_saved(const BenchFlags& f) {
  if (!f.html) return usage_error("--from renders a saved run as a page: give --html FILE too", f.json);
  if (f.list || f.quick || f.full || !f.only.empty())
    return usage_error("--from renders a saved run; --list, --only, --quick and --full are for a new run", f.json);
  auto text = bench::read_saved_run(*f.from);
  if (!text) return report_error(text.error(), f.json);
  auto saved = view::render_saved_bench_html(*text, *f.from);
  if (!saved) return report_error(saved.error(), f.json);
  if (auto st = core::write_file(*f.html, saved->page); !st) return report_error(st.error(), f.json);
  const std::size_t n = saved->results;
  return emit(f.json, nlohmann::json{{"html", *f.html}, {"from", *f.from}, {"results", n}},
              fmt::format("HTML page: {} ({} results from {})\n", *f.html, n, *f.from), core::kExitOk);
}

int print_list(bool json) { return emit(json, view::bench_list_json(), view::render_bench_list(), core::kExitOk); }

int run_bench(const BenchFlags& f, Context& context) {
  if (auto st = check_html_flag(f.html); !st) return report_error(st.error(), f.json);  // before minutes of measuring
  if (f.from) return render_saved(f);
  if (f.list) return print_list(f.json);
  if (f.quick && f.full) return usage_error("--quick and --full exclude each other", f.json);
  auto plan =
      bench::make_plan({.only = f.only,
                        .mode = f.quick ? bench::Mode::kQuick : (f.full ? bench::Mode::kFull : bench::Mode::kDefault),
                        .device = f.device});
  if (!plan) return report_error(plan.error(), f.json);

  const bool tty = isatty(STDERR_FILENO) != 0;
  bench::Progress progress;
  if (tty)
    progress = [](std::size_t i, std::size_t n, const std::string& key) {
      std::fprintf(stderr, "\r\033[Kgpudoc: bench [%zu/%zu] %s ...", i + 1, n, key.c_str());
    };
  const bench::Report rep = bench::run(*plan, bench::observe_through(context.backend), progress);
  if (tty) std::fputs("\r\033[K", stderr);

  const nlohmann::json j = bench::to_json(rep);
  emit(f.json, j, view::render_bench_text(rep));  // GPU and host names: terminal-safe
  if (f.html) {
    // The results are printed first: a page that cannot be written loses none of them.
    if (auto st = write_page(*f.html, view::render_bench_html(j)); !st) {
      report_error(st.error(), false);
      return std::max(bench::exit_code(rep), core::exit_code(st.error().kind()));
    }
    if (!f.json) print_text(stdout, fmt::format("HTML page: {}\n", *f.html));
  }
  return bench::exit_code(rep);
}

}  // namespace

void register_bench(Command& gpudoc, Action& action, Context& context) {
  auto f = std::make_shared<BenchFlags>();
  Command cmd(gpudoc, "bench", {{"benchmarks", view::render_bench_list()}});
  cmd.flag("--list", f->list);
  cmd.option("--only", f->only)->delimiter(',')->allow_extra_args(false);
  cmd.flag("--quick", f->quick);
  cmd.flag("--full", f->full);
  cmd.flag("--json", f->json);
  cmd.number("--device", f->device, bench::kDeviceRange);
  cmd.option("--html", f->html);
  cmd.option("--from", f->from);
  cmd->callback([f, &action, &context] { action = [f, &context] { return run_bench(*f, context); }; });
}

}  // namespace gpudoc::cli
