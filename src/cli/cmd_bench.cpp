// gpudoc bench: measure what this machine's GPU really does (memory bandwidth, host link, matrix
// multiply, launch cost),
// each figure a median of repetitions with its spread, checked outside the timed region.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <sstream>

#include "bench/details.hpp"
#include "bench/engine.hpp"
#include "bench/machine.hpp"
#include "bench/registry.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/clock.hpp"
#include "core/file.hpp"
#include "core/text.hpp"
#include "gpu/nvml/nvml_backend.hpp"
#include "telemetry/sampler.hpp"
#include "view/bench_html.hpp"

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

// Writes the page for `report` to `path`. Errors: the renderer's, or kIo naming the file.
core::Status write_html(const nlohmann::json& report, const std::string& path) {
  auto page = view::render_bench_html(report);
  if (!page) return page.error();
  return core::write_file(path, *page);
}

// --from FILE --html PAGE: a saved run as a page; nothing is measured.
int render_saved(const BenchFlags& f) {
  if (!f.html)
    return report_error(core::Error(core::ErrorKind::kUsage,
                                    "--from renders a saved run as a page: give --html FILE too"),
                        f.json);
  if (f.list || f.quick || f.full || !f.only.empty())
    return report_error(core::Error(core::ErrorKind::kUsage,
                                    "--from renders a saved run; --list, --only, --quick and --full are for a new run"),
                        f.json);
  auto text = core::read_file(*f.from);
  if (!text) return report_error(text.error(), f.json);
  nlohmann::json report = nlohmann::json::parse(*text, nullptr, false);
  if (report.is_discarded())
    return report_error(core::Error(core::ErrorKind::kBadInput, fmt::format("{}: not JSON", *f.from)), f.json);
  if (auto st = write_html(report, *f.html); !st) {
    // A file that is not a report is named; a page that cannot be written names itself.
    if (st.error().kind() == core::ErrorKind::kBadInput)
      return report_error(core::Error(core::ErrorKind::kBadInput, fmt::format("{}: {}", *f.from, st.error().message())),
                          f.json);
    return report_error(st.error(), f.json);
  }
  const std::size_t n = report["results"].size();
  if (f.json)
    print_json(nlohmann::json{{"html", *f.html}, {"from", *f.from}, {"results", n}});
  else
    std::fputs(fmt::format("HTML page: {} ({} results from {})\n", *f.html, n, *f.from).c_str(), stdout);
  return core::kExitOk;
}

std::string list_text() {
  std::size_t width = 18;
  for (const bench::Benchmark* b : bench::registry().all()) width = std::max(width, b->key().size());
  std::string out;
  for (const bench::Benchmark* b : bench::registry().all())
    out += fmt::format("  {:<{}} {}\n", b->key(), width, b->description());
  return out;
}

std::string format_value(double v) {
  if (v >= 100) return fmt::format("{:.0f}", v);
  if (v >= 10) return fmt::format("{:.1f}", v);
  return fmt::format("{:.2f}", v);
}

// "1980 MHz" / "—" for an optional reading.
std::string opt_value(const std::optional<double>& v, const char* unit) {
  return v ? fmt::format("{:.0f} {}", *v, unit) : std::string("—");
}

// The machine context: GPU, driver and CUDA versions, then (from NVML) clocks, power limit,
// temperature and PCIe link as they were when the run started.
std::string render_header(const bench::Report& rep) {
  const auto& ctx = rep.context;
  if (!ctx.gpu) return fmt::format("no GPU benchmark can run: {}\n", ctx.no_gpu_reason);
  std::string h = fmt::format("GPU {}: {} ({}), driver CUDA {}.{}, runtime {}.{}, mode {}\n", ctx.device, ctx.gpu->name,
                              ctx.gpu->uuid, ctx.gpu->driver_version / 1000, ctx.gpu->driver_version % 1000 / 10,
                              ctx.gpu->runtime_version / 1000, ctx.gpu->runtime_version % 1000 / 10,
                              bench::to_string(rep.mode));
  if (ctx.device_count > 1) {
    std::size_t peers = 0;
    for (const auto& row : ctx.peer_access) peers += static_cast<std::size_t>(std::count(row.begin(), row.end(), true));
    h += fmt::format("  {} GPUs visible (p2p and nccl use all of them), peer access on {} of {} ordered pairs\n",
                     ctx.device_count, peers, ctx.device_count * (ctx.device_count - 1));
  }
  if (ctx.machine) {
    const auto& m = *ctx.machine;
    h += fmt::format("  driver {} (CUDA {}), SM clock {} of {}, memory clock {} of {}, power limit {}, {}", m.driver_version,
                     m.cuda_driver_version, opt_value(m.sm_clock_mhz, "MHz"), opt_value(m.sm_clock_max_mhz, "MHz"),
                     opt_value(m.memory_clock_mhz, "MHz"), opt_value(m.memory_clock_max_mhz, "MHz"),
                     opt_value(m.power_limit_watts, "W"), opt_value(m.temperature_celsius, "°C"));
    if (m.pcie_link_generation && m.pcie_link_width)
      h += fmt::format(", PCIe gen{} x{}", *m.pcie_link_generation, *m.pcie_link_width);
    h += "\n";
  } else {
    h += fmt::format("  no clocks, power or throttle reasons: {}\n", ctx.machine_reason);
  }
  return h;
}

std::string render(const bench::Report& rep) {
  const bool telemetry = rep.conditions.has_value();
  std::vector<std::string> head{"key", "median", "unit", "min–max", "CV %", "verified"};
  if (telemetry) {
    head.emplace_back("SM MHz");
    head.emplace_back("slowdown");
  }
  head.emplace_back("note");
  std::vector<std::vector<std::string>> rows{head};
  for (const bench::Outcome& o : rep.outcomes) {
    std::vector<std::string> row;
    std::string note;
    if (o.result) {
      const auto& r = *o.result;
      row = {o.key, format_value(r.median), r.unit, format_value(r.min) + "–" + format_value(r.max),
             fmt::format("{:.2f}", r.cv * 100), r.verified ? "yes" : "NO"};
      // A result may carry a short note (p2p/nccl: the datasheet figure beside the measured one).
      note = o.status == bench::OutcomeStatus::kOk ? r.params.value("note", std::string()) : o.reason;
    } else {
      note = o.status == bench::OutcomeStatus::kWaived ? o.reason : "failed: " + o.reason;
      // The header already says why there is no GPU; each row keeps only the waiver itself.
      if (!rep.context.gpu && o.status == bench::OutcomeStatus::kWaived) note = note.substr(0, note.find(" ("));
      row = {o.key, "—", "", "", "", ""};
    }
    if (telemetry) {
      // Clocks and slowdown reasons while this benchmark ran (only for those that ran).
      const bool ran = o.result.has_value() && o.conditions.has_value();
      row.push_back(ran && o.conditions->sm_clock_mhz ? fmt::format("{:.0f}", o.conditions->sm_clock_mhz->median) : "");
      row.push_back(ran ? bench::slowdown_reasons(*o.conditions) : "");
    }
    row.push_back(note);
    rows.push_back(std::move(row));
  }
  std::string out = render_header(rep) + core::render_table(rows);
  // Sections beyond the table: the p2p pair matrices and the nccl size curves, then why a figure
  // spread, where the benchmark could tell (the launch figures: the host's CPU).
  std::string details, spread;
  for (const bench::Outcome& o : rep.outcomes) {
    if (!o.result) continue;
    details += bench::details_text(*o.result);
    spread += bench::spread_text(*o.result);
  }
  if (!details.empty()) out += "\n" + details;
  if (!spread.empty()) out += "\nspread:\n" + spread;
  if (telemetry) {
    const std::string all = bench::describe(*rep.conditions);
    if (!all.empty()) out += fmt::format("during the run: {} ({:.1f} s)\n", all, rep.wall_seconds);
  }
  return out;
}

// Samples the benchmarked GPU's clocks, power, temperature and clock-event reasons (NVML's fast
// group, every 100 ms) while the benchmarks run, and fills the context's NVML facts. Without NVML
// the context says why and the benchmarks run unobserved.
class RunObserver {
 public:
  explicit RunObserver(bench::Context& ctx) {
    if (!ctx.gpu) {
      ctx.machine_reason = "no GPU";
      return;
    }
    auto backend = gpu::open_nvml_backend();
    if (!backend) {
      ctx.machine_reason = "NVML unavailable: " + backend.error().message();
      return;
    }
    backend_ = std::move(*backend);
    auto m = bench::probe_machine(*backend_, ctx.gpu->uuid);
    if (!m) {
      ctx.machine_reason = m.error().message();
      return;
    }
    ctx.machine = *m;
    telemetry::SamplerConfig config;
    config.periods.fill(std::chrono::milliseconds(0));
    config.periods[gpu::index(gpu::MetricGroup::kFast)] = std::chrono::milliseconds(100);
    config.gpus = {m->nvml_index};
    config.read_events = false;
    nvml_index_ = m->nvml_index;
    sampler_ = std::make_unique<telemetry::Sampler>(*backend_, clock_, config);
    if (auto st = sampler_->start(); !st) {
      ctx.machine_reason = "sampling NVML: " + st.error().message();
      sampler_.reset();
    }
  }
  ~RunObserver() {
    if (sampler_) sampler_->stop();
  }
  RunObserver(const RunObserver&) = delete;
  RunObserver& operator=(const RunObserver&) = delete;

  // Stops sampling and attaches what was seen to the report.
  void finish(bench::Report& report) {
    if (!sampler_) return;
    sampler_->stop();
    std::vector<gpu::MetricSample> samples;
    for (auto& rec : sampler_->drain(std::chrono::milliseconds(0)))
      if (rec.kind == telemetry::SamplerRecord::Kind::kSamples && rec.gpu == nvml_index_)
        samples.insert(samples.end(), rec.samples.begin(), rec.samples.end());
    sampler_.reset();
    bench::attach_conditions(report, samples);
  }

 private:
  core::SystemClock clock_;
  std::unique_ptr<gpu::Backend> backend_;
  std::unique_ptr<telemetry::Sampler> sampler_;
  int nvml_index_ = 0;
};

int run_bench(const BenchFlags& f) {
  if (f.from) return render_saved(f);
  if (f.list) {
    if (f.json) {
      nlohmann::json j = nlohmann::json::array();
      for (const bench::Benchmark* b : bench::registry().all()) j.push_back({{"key", b->key()}, {"description", b->description()}});
      print_json(j);
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
  bench::Context ctx = bench::probe_context(f.device);
  RunObserver observer(ctx);

  const bool tty = isatty(STDERR_FILENO) != 0;
  bench::Progress progress;
  if (tty)
    progress = [](std::size_t i, std::size_t n, const std::string& key) {
      std::fprintf(stderr, "\r\033[Kgpudoc: bench [%zu/%zu] %s ...", i + 1, n, key.c_str());
    };
  bench::Report rep = bench::run_benchmarks(selected, ctx, options, progress);
  observer.finish(rep);
  if (tty) std::fputs("\r\033[K", stderr);

  const nlohmann::json j = bench::to_json(rep);
  if (f.json)
    print_json(j);
  else
    std::fputs(render(rep).c_str(), stdout);
  if (f.html) {
    // The results are printed first: a page that cannot be written loses none of them.
    if (auto st = write_html(j, *f.html); !st) {
      report_error(st.error(), false);
      return std::max(bench::exit_code(rep), core::exit_code(st.error().kind()));
    }
    if (!f.json) std::fputs(fmt::format("HTML page: {}\n", *f.html).c_str(), stdout);
  }
  return bench::exit_code(rep);
}

}  // namespace

void register_bench(CLI::App& app, Action& action) {
  auto f = std::make_shared<BenchFlags>();
  auto* cmd = app.add_subcommand("bench", "Measure the GPU's real memory and PCIe bandwidth, GEMM throughput and launch cost");
  cmd->description(
      "Measure what the GPU really does, as baselines to compare later runs against.\n\n"
      "Each benchmark warms up, then times N repetitions with CUDA events and reports the median\n"
      "with min, max and coefficient of variation (CV = stddev / mean); the raw samples are in\n"
      "--json. Results are checked outside the timed region (verified). GB/s are 1e9 bytes per\n"
      "second, TFLOP/s 1e12 floating-point operations per second. Method and formulas:\n"
      "docs/methodology.md, section Benchmarks. With NVML (the driver's libnvidia-ml) the run\n"
      "records the driver, clocks, power limit and temperature, and the SM clock and slowdown\n"
      "(throttle) reasons seen while each benchmark ran.\n\n"
      "Benchmarks (key, what it measures and its formula):\n" +
      list_text() +
      "\nA benchmark that cannot run here is waived with its reason (no GPU, built without CUDA);\n"
      "one failure never stops the others. p2p.* and nccl.* use every visible GPU and need two or\n"
      "more; nccl.* loads libnccl.so.2 at run time (or the file GPUDOC_NCCL_LIBRARY names) and sets\n"
      "NCCL_NVLS_ENABLE=0 (no NVLink multicast) unless you set it.");
  cmd->add_flag("--list", f->list, "list the benchmarks and exit");
  cmd->add_option("--only", f->only, "run only these keys or groups, comma-separated (hbm,launch.latency)")->delimiter(',');
  cmd->add_flag("--quick", f->quick, "fewer repetitions (about a minute for the whole suite)");
  cmd->add_flag("--full", f->full, "more repetitions, for a baseline to keep");
  cmd->add_flag("--json", f->json, "print the results (machine, parameters, raw samples) as JSON on stdout");
  cmd->add_option("--device", f->device, "CUDA device index (CUDA_VISIBLE_DEVICES applies)");
  cmd->add_option("--html", f->html,
                  "also write the results as a page that opens offline: the table, every benchmark's samples in "
                  "the order measured, the NCCL size curves, the GPU-pair matrices")
      ->type_name("FILE");
  cmd->add_option("--from", f->from, "with --html: make the page from a saved `gpudoc bench --json` output, measuring nothing")
      ->type_name("RUN.json");
  cmd->footer(
      "Examples:\n"
      "  gpudoc bench --list\n"
      "  gpudoc bench --quick\n"
      "  gpudoc bench --only hbm.copy,launch --json > baseline.json\n"
      "  gpudoc bench --full --html bench.html\n"
      "  gpudoc bench --from baseline.json --html baseline.html\n"
      "Exit codes: 0 every selected benchmark ran and verified (or --from wrote its page); 2 bad\n"
      "flags, an unknown key, a --from file that is not a bench report, or a page that cannot be written;\n"
      "3 nothing could run (no GPU, built without CUDA) or a CUDA environment error; 4 a result\n"
      "did not verify or an internal error.");
  cmd->callback([f, &action] { action = [f] { return run_bench(*f); }; });
}

}  // namespace gpudoc::cli
