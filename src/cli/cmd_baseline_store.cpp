// gpudoc baseline list, show and history: what the store keeps of the baselines, read-only (the
// store is never created or written here). Parse, read with baseline/gate.hpp, print with view/.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "baseline/gate.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "view/baseline_html.hpp"
#include "view/baseline_report.hpp"

namespace gpudoc::cli {
namespace {

struct StoreFlags {
  std::string name;
  std::optional<std::string> store;
  std::optional<std::string> config;
  bool json = false;
  int limit = 30;
  std::optional<std::string> html;
};

// Baseline, figure, GPU and host names come from the store: shown terminal-safe (print_text).
int run_list(const StoreFlags& f) {
  auto list = baseline::list_store(f.store);
  if (!list) return report_error(list.error(), f.json);
  return emit(f.json, view::baseline_list_json(*list), view::render_baseline_list(*list));
}

int run_show(const StoreFlags& f) {
  auto b = baseline::read_baseline(f.store, f.name, f.config, std::nullopt);
  if (!b) return report_error(b.error(), f.json);
  if (f.json) return emit(true, view::baseline_json(b->info, b->golden, b->config), "");
  auto spec = baseline::spec_from_json(b->info.spec);
  if (!spec) return report_error(spec.error().with_context(fmt::format("baseline '{}'", b->info.name)), f.json);
  print_text(stdout, view::render_baseline(b->info, b->golden, *spec, b->config));
  return core::kExitOk;
}

int run_history(const StoreFlags& f) {
  if (auto st = check_html_flag(f.html); !st) return report_error(st.error(), f.json);
  auto b = baseline::read_baseline(f.store, f.name, f.config, f.limit);
  if (!b) return report_error(b.error(), f.json);
  for (const auto& r : b->runs)
    for (const auto& d : r.damaged)
      print_text(stderr, fmt::format("gpudoc: note: run {} is damaged in the store: {}\n", r.id, d));
  if (f.html) {
    const auto page = view::history_page(b->info, b->runs, b->golden, b->config, b->store_path);
    if (auto st = write_page(*f.html, view::render_baseline_history_html(page)); !st)
      return report_error(st.error(), f.json);
  }
  nlohmann::json j = view::history_json(b->info, b->runs);
  if (f.html) j["html"] = *f.html;
  return emit(f.json, j,
              view::render_history(b->info, b->runs) + (f.html ? fmt::format("HTML page: {}\n", *f.html) : ""));
}
}  // namespace

void add_baseline_store_flags(Command& cmd, std::optional<std::string>& store, bool& json) {
  cmd.option("--store", store);
  cmd.flag("--json", json);
}

void register_baseline_store(Command& baseline, Action& action) {
  auto f = std::make_shared<StoreFlags>();
  Command lst(baseline, "list");
  add_baseline_store_flags(lst, f->store, f->json);
  lst->callback([f, &action] { action = [f] { return run_list(*f); }; });

  Command shw(baseline, "show");
  shw.option("name", f->name)->required();
  shw.option("--config", f->config);
  add_baseline_store_flags(shw, f->store, f->json);
  shw->callback([f, &action] { action = [f] { return run_show(*f); }; });

  Command his(baseline, "history");
  his.option("name", f->name)->required();
  his.number("--limit", f->limit, {.min = 0, .max = 1'000'000, .whole = true});
  his.option("--html", f->html);
  his.option("--config", f->config);
  add_baseline_store_flags(his, f->store, f->json);
  his->callback([f, &action] { action = [f] { return run_history(*f); }; });
}

}  // namespace gpudoc::cli
