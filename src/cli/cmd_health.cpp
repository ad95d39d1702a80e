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

#include "baseline/store.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/host.hpp"
#include "core/log.hpp"
#include "core/version.hpp"
#include "health/node.hpp"
#include "telemetry/backend_source.hpp"
#include "view/health_text.hpp"

namespace gpudoc::cli {
namespace {

struct HealthFlags {
  bool json = false;
  bool no_load = false;
  bool no_store = false;
  std::vector<int> gpus;
  double load_seconds = 5.0;
  std::optional<std::string> store;
};

bool color() { return ::isatty(STDOUT_FILENO) != 0 && std::getenv("NO_COLOR") == nullptr; }

// No GPU to check: exit 3, but the host and library checks still say something useful.
int report_no_gpu(const HealthFlags& f, const core::Error& no_gpu) {
  const auto t0 = std::chrono::steady_clock::now();
  health::SystemHostReader host;
  const auto results = health::check_host_only(host);
  if (f.json) {
    nlohmann::json j = {{"status", "no_gpu"},
                        {"error", {{"kind", core::to_string(no_gpu.kind())}, {"message", no_gpu.message()},
                                   {"exit_code", core::exit_code(no_gpu.kind())}}},
                        {"gpudoc_version", core::kVersion}};
    j["checks"] = nlohmann::json::array();
    for (const auto& r : results) j["checks"].push_back(health::to_json(r));
    print_json(j);
  } else {
    const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fputs(view::render_health_table(results, wall_s, "No GPU checks: " + no_gpu.message() + "\n\n", color()).c_str(),
               stdout);
  }
  std::fputs(fmt::format("gpudoc: error: {}\n", no_gpu.message()).c_str(), stderr);
  return core::kExitEnvironment;
}

// Why no load runs, or "" when it does.
std::string why_no_load(const HealthFlags& f, const telemetry::Live& live) {
  if (f.no_load) return "--no-load";
  if (!live.real())
    return fmt::format("the {} backend's GPUs are not this machine's: no load runs on them", telemetry::to_string(live.spec->kind));
  if (std::getenv("CUDA_VISIBLE_DEVICES") != nullptr) return "CUDA_VISIBLE_DEVICES is set, so CUDA's and NVML's GPU numbers may differ";
  return {};
}

// Keeps the results for `gpudoc report`. A replay's or fake GPUs' results are not this node's
// history: they are never stored.
void store_results(const HealthFlags& f, const telemetry::Live& live, const health::NodeReport& node, nlohmann::json& j) {
  if (f.no_store) return;
  if (!live.real()) {
    core::log_warn("not stored: the results of the {} backend are not this node's", live.spec->text);
    return;
  }
  auto path = baseline::default_store_path(f.store);
  if (!path) return core::log_warn("not stored: {}", path.error().message());
  auto store = baseline::Store::open(*path);
  if (!store) return core::log_warn("not stored: {}", store.error().message());
  baseline::MachineContext m;
  m.host = core::host_name();
  for (const auto& in : node.gpus) m.gpus.push_back(in.info.name);
  m.driver_version = node.system.driver_version;
  m.cuda_version = node.system.cuda_driver_version;
  const auto now_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  if (auto id = store->add_result("health", m.host, now_ns, m, health::to_string(health::worst(node.results)), j))
    j["stored"] = {{"path", *path}, {"id", *id}};
  else
    core::log_warn("not stored: {}", id.error().message());
}

std::string header_line(const telemetry::Live& live, const health::NodeReport& node) {
  const auto& sys = node.system;
  std::string header = live.banner.empty() ? "" : live.banner + "\n";
  header += fmt::format("gpudoc health — driver {}, CUDA {}; {} GPU(s)", sys.driver_version.empty() ? "?" : sys.driver_version,
                        sys.cuda_driver_version.empty() ? "?" : sys.cuda_driver_version, node.gpus.size());
  if (!node.gpus.empty() && node.gpus[0].load.ran)
    header += fmt::format("; load: HBM copy for {:.1f} s", node.load_seconds);
  else if (!node.gpus.empty())
    header += fmt::format("; no load ({})", node.gpus[0].load.why_not);
  return header + "\n\n";
}

int run_health(const HealthFlags& f, Context& ctx) {
  auto live = ctx.backend.open_gpus();
  if (!live) return report_no_gpu(f, live.error());
  health::SystemHostReader host;
  health::NodeOptions opt;
  opt.gpus = f.gpus;
  opt.load = {.seconds = f.load_seconds, .why_not = why_no_load(f, *live)};
  auto node = health::check_node(*live->backend, *live->clock, host, opt, health::hbm_copy_load(*live->clock));
  if (!node) return report_error(node.error(), f.json);

  nlohmann::json j = health::to_json(*node);
  if (!live->real()) j["backend"] = telemetry::describe(*live->spec);
  store_results(f, *live, *node, j);
  if (f.json)
    print_json(j);
  else
    std::fputs(view::render_health_table(node->results, node->wall_seconds, header_line(*live, *node), color()).c_str(), stdout);
  return health::any_failed(node->results) ? core::kExitFinding : core::kExitOk;
}

}  // namespace

void register_health(CLI::App& app, Action& action, Context& ctx) {
  auto flags = std::make_shared<HealthFlags>();
  CLI::App* cmd = app.add_subcommand(
      "health",
      "Is this GPU node healthy and set up right? Modes, ECC/row remapping, temperatures against the GPU's own "
      "thresholds, power limit, clocks and PCIe link under a short load, NVLink, XIDs, versions, host settings. "
      "Exit 1 when a check fails, 3 without a GPU. Changes nothing. With --backend replay:FILE or fake:N it checks "
      "those GPUs (no load, nothing stored), marked as such.");
  cmd->add_flag("--json", flags->json, "print the results as JSON");
  cmd->add_flag("--no-load", flags->no_load, "skip the short GPU load (clocks and PCIe are then not judged)");
  cmd->add_option("--gpus", flags->gpus, "GPU indices to check (default: all), e.g. --gpus 0,2")
      ->delimiter(',')
      ->allow_extra_args(false);
  cmd->add_option("--load-seconds", flags->load_seconds, "how long the load runs (default 5)")->check(CLI::Range(1.0, 120.0));
  cmd->add_flag("--no-store", flags->no_store, "do not record the results in the store (for `gpudoc report`)");
  cmd->add_option("--store", flags->store, "the store file (default: $GPUDOC_STORE or ~/.local/share/gpudoc/gpudoc.db)");
  cmd->callback([flags, &action, &ctx] { action = [flags, &ctx] { return run_health(*flags, ctx); }; });
}

}  // namespace gpudoc::cli
