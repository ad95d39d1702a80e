// gpudoc health: is this GPU node healthy and set up right? Reads modes, error counters, limits,
// XIDs, versions and host settings; runs a short load of its own (HBM copy, --load-seconds) to see
// clocks, temperatures, power and the PCIe link under work. Never changes a setting. The checks
// and the load live in health/ (node.hpp, load.hpp); this file parses, calls, stores and prints.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "health/history.hpp"
#include "health/node.hpp"
#include "telemetry/backend_source.hpp"
#include "view/health_text.hpp"

namespace gpudoc::cli {
namespace {

struct HealthFlags {
  bool json = false;
  bool no_load = false;
  bool no_store = false;
  bool gate = false;
  std::vector<int> gpus;
  double load_seconds = 5.0;
  std::optional<std::string> store;
};

bool color() { return ::isatty(STDOUT_FILENO) != 0 && std::getenv("NO_COLOR") == nullptr; }

// No GPU to check: exit 3, but the host and library checks still say something useful.
// With --gate, one line for the prolog, which drains the node on exit 3 (deploy/slurm/prolog.sh).
int report_no_gpu(const HealthFlags& f, const core::Error& no_gpu) {
  const std::string why = "cannot check this node: " + no_gpu.message().substr(0, no_gpu.message().find('\n'));
  if (f.gate && !f.json) {
    print_text(stdout, why + "\n");
    return core::kExitEnvironment;
  }
  const auto t0 = std::chrono::steady_clock::now();
  health::SystemHostReader host;
  const auto results = health::check_host_only(host);
  if (f.json) {
    auto j = view::no_gpu_health_json(results, no_gpu);
    if (f.gate) j["gate"] = {{"pass", false}, {"reason", why}};
    print_json(j);
  } else {
    const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fputs(
        view::render_health_table(results, wall_s, "No GPU checks: " + no_gpu.message() + "\n\n", color()).c_str(),
        stdout);
  }
  print_text(stderr, fmt::format("gpudoc: error: {}\n", no_gpu.message()));
  return core::kExitEnvironment;
}

// --gate: one line on stdout (the drain reason, or "ok: ..."), exit 1 when a check failed.
int print_gate(const HealthFlags& f, const std::vector<health::CheckResult>& results, nlohmann::json& j) {
  const std::string reason = health::gate_reason(results);
  j["gate"] = {{"pass", reason.empty()}, {"reason", reason}};
  return emit(f.json, j, view::health_gate_line(results), reason.empty() ? core::kExitOk : core::kExitFinding);
}

int run_health(const HealthFlags& f, Context& ctx) {
  auto live = ctx.backend.open_gpus();
  if (!live) return report_no_gpu(f, live.error());
  health::SystemHostReader host;
  health::NodeOptions opt;
  opt.gpus = f.gpus;
  opt.load = {
      .seconds = f.load_seconds,
      .why_not = health::why_no_load(f.no_load || f.gate, live->real() ? "" : telemetry::to_string(live->spec->kind))};
  auto node = health::check_node(*live->backend, *live->clock, host, opt, health::hbm_copy_load(*live->clock));
  if (!node) return report_error(node.error(), f.json);

  nlohmann::json j = health::to_json(*node);
  if (!live->real()) j["backend"] = telemetry::describe(*live->spec);
  health::keep_check(f.store, f.no_store, live->real() ? "" : live->spec->text, *node, j);
  if (f.gate) return print_gate(f, node->results, j);
  if (f.json)
    print_json(j);
  else  // coloured on a terminal: the table escapes what it quotes itself
    std::fputs(
        view::render_health_table(node->results, node->wall_seconds, view::health_header(*node, live->banner), color())
            .c_str(),
        stdout);
  return health::any_failed(node->results) ? core::kExitFinding : core::kExitOk;
}

}  // namespace

void register_health(Command& gpudoc, Action& action, Context& ctx) {
  auto flags = std::make_shared<HealthFlags>();
  Command cmd(gpudoc, "health");
  cmd.flag("--json", flags->json);
  cmd.flag("--gate", flags->gate);
  cmd.flag("--no-load", flags->no_load);
  cmd.option("--gpus", flags->gpus)->delimiter(',')->allow_extra_args(false);
  cmd.number("--load-seconds", flags->load_seconds, {.min = 1, .max = 120, .unit = "seconds"});
  cmd.flag("--no-store", flags->no_store);
  cmd.option("--store", flags->store);
  cmd->callback([flags, &action, &ctx] { action = [flags, &ctx] { return run_health(*flags, ctx); }; });
}

}  // namespace gpudoc::cli
