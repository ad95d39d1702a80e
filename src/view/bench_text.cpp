#include "view/bench_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "bench/registry.hpp"
#include "core/text.hpp"
#include "view/bench_details.hpp"

namespace gpudoc::view {
namespace {

std::string format_value(double v) {
  if (v >= 100) return fmt::format("{:.0f}", v);
  if (v >= 10) return fmt::format("{:.1f}", v);
  return fmt::format("{:.2f}", v);
}

// "1980 MHz" / "—" for an optional reading.
std::string opt_value(const std::optional<double>& v, const char* unit) {
  return v ? fmt::format("{:.0f} {}", *v, unit) : std::string("—");
}

}  // namespace

std::string render_bench_list() {
  std::size_t width = 18;
  for (const bench::Benchmark* b : bench::registry().all()) width = std::max(width, b->key().size());
  std::string out;
  for (const bench::Benchmark* b : bench::registry().all())
    out += fmt::format("  {:<{}} {}\n", b->key(), width, b->description());
  return out;
}

nlohmann::json bench_list_json() {
  nlohmann::json j = nlohmann::json::array();
  for (const bench::Benchmark* b : bench::registry().all())
    j.push_back({{"key", b->key()}, {"description", b->description()}});
  return j;
}

// The machine context: GPU, driver and CUDA versions, then (from NVML) clocks, power limit,
// temperature and PCIe link as they were when the run started.
std::string render_bench_header(const bench::Report& rep) {
  const auto& ctx = rep.context;
  if (!ctx.gpu) return fmt::format("no GPU benchmark can run: {}\n", ctx.no_gpu_reason);
  std::string h =
      fmt::format("GPU {}: {} ({}), driver CUDA {}.{}, runtime {}.{}, mode {}\n", ctx.device, ctx.gpu->name,
                  ctx.gpu->uuid, ctx.gpu->driver_version / 1000, ctx.gpu->driver_version % 1000 / 10,
                  ctx.gpu->runtime_version / 1000, ctx.gpu->runtime_version % 1000 / 10, bench::to_string(rep.mode));
  if (ctx.device_count > 1) {
    std::size_t peers = 0;
    for (const auto& row : ctx.peer_access) peers += static_cast<std::size_t>(std::count(row.begin(), row.end(), true));
    h += fmt::format("  {} GPUs visible (p2p and nccl use all of them), peer access on {} of {} ordered pairs\n",
                     ctx.device_count, peers, ctx.device_count * (ctx.device_count - 1));
  }
  if (ctx.machine) {
    const auto& m = *ctx.machine;
    // Read through a replay or fake backend, the figures beside the benchmarks are not this GPU's.
    if (!m.backend.empty() && m.backend != "nvml")
      h += fmt::format("  read through the {} backend, not live NVML:\n", m.backend);
    h += fmt::format("  driver {} (CUDA {}), SM clock {} of {}, memory clock {} of {}, power limit {}, {}",
                     m.driver_version, m.cuda_driver_version, opt_value(m.sm_clock_mhz, "MHz"),
                     opt_value(m.sm_clock_max_mhz, "MHz"), opt_value(m.memory_clock_mhz, "MHz"),
                     opt_value(m.memory_clock_max_mhz, "MHz"), opt_value(m.power_limit_watts, "W"),
                     opt_value(m.temperature_celsius, "°C"));
    if (m.pcie_link_generation && m.pcie_link_width)
      h += fmt::format(", PCIe gen{} x{}", *m.pcie_link_generation, *m.pcie_link_width);
    h += "\n";
  } else {
    h += fmt::format("  no clocks, power or throttle reasons: {}\n", ctx.machine_reason);
  }
  return h;
}

std::string render_bench_text(const bench::Report& rep) {
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
      row = {o.key,
             format_value(r.median),
             r.unit,
             format_value(r.min) + "–" + format_value(r.max),
             fmt::format("{:.2f}", r.cv * 100),
             r.verified ? "yes" : "NO"};
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
  std::string out = render_bench_header(rep) + core::render_table(rows);
  // Sections beyond the table: the p2p pair matrices and the nccl size curves, then why a figure
  // spread, where the benchmark could tell (the launch figures: the host's CPU).
  std::string details, spread;
  for (const bench::Outcome& o : rep.outcomes) {
    if (!o.result) continue;
    details += details_text(*o.result);
    spread += spread_text(*o.result);
  }
  if (!details.empty()) out += "\n" + details;
  if (!spread.empty()) out += "\nspread:\n" + spread;
  if (telemetry) {
    const std::string all = bench::describe(*rep.conditions);
    if (!all.empty()) out += fmt::format("during the run: {} ({:.1f} s)\n", all, rep.wall_seconds);
  }
  return out;
}

}  // namespace gpudoc::view
