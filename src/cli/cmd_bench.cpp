// gpudoc bench: measure what this machine's GPU really does (memory bandwidth, launch cost),
// each figure a median of repetitions with its spread, checked outside the timed region.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <sstream>

#include "bench/engine.hpp"
#include "bench/registry.hpp"
#include "cli/commands.hpp"
#include "core/text.hpp"

namespace gpudoc::cli {
namespace {

struct BenchFlags {
  bool list = false;
  std::vector<std::string> only;
  bool quick = false;
  bool full = false;
  bool json = false;
  int device = 0;
};

std::string list_text() {
  std::string out;
  for (const bench::Benchmark* b : bench::registry().all()) out += fmt::format("  {:<18} {}\n", b->key(), b->description());
  return out;
}

std::string format_value(double v) {
  if (v >= 100) return fmt::format("{:.0f}", v);
  if (v >= 10) return fmt::format("{:.1f}", v);
  return fmt::format("{:.2f}", v);
}

std::string render(const bench::Report& rep) {
  std::vector<std::vector<std::string>> rows{{"key", "median", "unit", "min–max", "CV %", "verified", "note"}};
  for (const bench::Outcome& o : rep.outcomes) {
    if (o.result) {
      const auto& r = *o.result;
      rows.push_back({o.key, format_value(r.median), r.unit, format_value(r.min) + "–" + format_value(r.max),
                      fmt::format("{:.2f}", r.cv * 100), r.verified ? "yes" : "NO",
                      o.status == bench::OutcomeStatus::kOk ? "" : o.reason});
    } else {
      std::string note = o.status == bench::OutcomeStatus::kWaived ? o.reason : "failed: " + o.reason;
      // The header already says why there is no GPU; each row keeps only the waiver itself.
      if (!rep.context.gpu && o.status == bench::OutcomeStatus::kWaived) note = note.substr(0, note.find(" ("));
      rows.push_back({o.key, "—", "", "", "", "", note});
    }
  }
  std::string header;
  const auto& ctx = rep.context;
  if (ctx.gpu)
    header = fmt::format("GPU {}: {} ({}), driver CUDA {}.{}, runtime {}.{}, mode {}\n", ctx.device, ctx.gpu->name,
                         ctx.gpu->uuid, ctx.gpu->driver_version / 1000, ctx.gpu->driver_version % 1000 / 10,
                         ctx.gpu->runtime_version / 1000, ctx.gpu->runtime_version % 1000 / 10, bench::to_string(rep.mode));
  else
    header = fmt::format("no GPU benchmark can run: {}\n", ctx.no_gpu_reason);
  return header + core::render_table(rows);
}

int run_bench(const BenchFlags& f) {
  if (f.list) {
    if (f.json) {
      nlohmann::json j = nlohmann::json::array();
      for (const bench::Benchmark* b : bench::registry().all()) j.push_back({{"key", b->key()}, {"description", b->description()}});
      std::fputs((j.dump(2) + "\n").c_str(), stdout);
    } else {
      std::fputs(list_text().c_str(), stdout);
    }
    return core::kExitOk;
  }
  if (f.quick && f.full) return report_error(core::Error(core::ErrorKind::kUsage, "--quick and --full exclude each other"), f.json);
  if (f.device < 0) return report_error(core::Error(core::ErrorKind::kUsage, "--device must be >= 0"), f.json);

  std::vector<const bench::Benchmark*> selected = bench::registry().all();
  if (!f.only.empty()) {
    auto sel = bench::registry().select(f.only);
    if (!sel) return report_error(sel.error(), f.json);
    selected = *sel;
  }
  bench::RunOptions options;
  options.mode = f.quick ? bench::Mode::kQuick : (f.full ? bench::Mode::kFull : bench::Mode::kDefault);
  if (auto n = bench::cuda::device_count(); n && *n > 0 && f.device >= *n)
    return report_error(core::Error(core::ErrorKind::kUsage, fmt::format("--device {}: there are {} CUDA devices (0 to {})",
                                                                         f.device, *n, *n - 1)),
                        f.json);
  const bench::Context ctx = bench::probe_context(f.device);

  const bool tty = isatty(STDERR_FILENO) != 0;
  bench::Progress progress;
  if (tty)
    progress = [](std::size_t i, std::size_t n, const std::string& key) {
      std::fprintf(stderr, "\r\033[Kgpudoc: bench [%zu/%zu] %s ...", i + 1, n, key.c_str());
    };
  const bench::Report rep = bench::run_benchmarks(selected, ctx, options, progress);
  if (tty) std::fputs("\r\033[K", stderr);

  if (f.json)
    std::fputs((bench::to_json(rep).dump(2) + "\n").c_str(), stdout);
  else
    std::fputs(render(rep).c_str(), stdout);
  return bench::exit_code(rep);
}

}  // namespace

void register_bench(CLI::App& app, Action& action) {
  auto f = std::make_shared<BenchFlags>();
  auto* cmd = app.add_subcommand("bench", "Measure the GPU's real memory bandwidth and launch cost");
  cmd->description(
      "Measure what the GPU really does, as baselines to compare later runs against.\n\n"
      "Each benchmark warms up, then times N repetitions with CUDA events and reports the median\n"
      "with min, max and coefficient of variation (CV = stddev / mean); the raw samples are in\n"
      "--json. Results are checked outside the timed region (verified). GB/s are 1e9 bytes per\n"
      "second. Method and formulas: docs/methodology.md, section Benchmarks.\n\n"
      "Benchmarks (key, what it measures and its formula):\n" +
      list_text() +
      "\nA benchmark that cannot run here is waived with its reason (no GPU, built without CUDA);\n"
      "one failure never stops the others.");
  cmd->add_flag("--list", f->list, "list the benchmarks and exit");
  cmd->add_option("--only", f->only, "run only these keys or groups, comma-separated (hbm,launch.latency)")->delimiter(',');
  cmd->add_flag("--quick", f->quick, "fewer repetitions (about a minute for the whole suite)");
  cmd->add_flag("--full", f->full, "more repetitions, for a baseline to keep");
  cmd->add_flag("--json", f->json, "print the results (machine, parameters, raw samples) as JSON on stdout");
  cmd->add_option("--device", f->device, "CUDA device index (CUDA_VISIBLE_DEVICES applies)");
  cmd->footer(
      "Examples:\n"
      "  gpudoc bench --list\n"
      "  gpudoc bench --quick\n"
      "  gpudoc bench --only hbm.copy,launch --json > baseline.json\n"
      "Exit codes: 0 every selected benchmark ran and verified; 2 bad flags or an unknown key;\n"
      "3 nothing could run (no GPU, built without CUDA) or a CUDA environment error; 4 a result\n"
      "did not verify or an internal error.");
  cmd->callback([f, &action] { action = [f] { return run_bench(*f); }; });
}

}  // namespace gpudoc::cli
