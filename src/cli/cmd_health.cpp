// gpudoc health: is this GPU node healthy and set up right? Reads modes, error counters, limits,
// XIDs, versions and host settings; runs a short load of its own (HBM copy, --load-seconds) to see
// clocks, temperatures, power and the PCIe link under work. Never changes a setting.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <mutex>
#include <thread>

#include "baseline/store.hpp"
#include "bench/cuda/hbm.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/host.hpp"
#include "core/log.hpp"
#include "core/version.hpp"
#include "health/health.hpp"
#include "health/host.hpp"

namespace gpudoc::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct HealthFlags {
  bool json = false;
  bool no_load = false;
  bool no_store = false;
  std::vector<int> gpus;
  double load_seconds = 5.0;
  std::optional<std::string> store;
};

constexpr auto kSamplePeriod = std::chrono::milliseconds(100);

// One reading of the fast and slow groups as a LoadSample; kGpuLost is returned, other failures
// leave fields absent.
core::Result<health::LoadSample> sample(gpu::Backend& b, int gpu, double t_s) {
  health::LoadSample s;
  s.t_s = t_s;
  for (gpu::MetricGroup g : {gpu::MetricGroup::kFast, gpu::MetricGroup::kSlow}) {
    auto r = b.read(gpu, g);
    if (!r) {
      if (r.error().kind() == core::ErrorKind::kGpuLost) return r.error();
      continue;
    }
    for (const auto& m : r->metrics) {
      switch (m.metric) {
        case gpu::Metric::kSmClockMhz: s.sm_clock_mhz = m.value; break;
        case gpu::Metric::kClockEventReasonsMask: s.clock_event_reasons = static_cast<std::uint64_t>(m.value); break;
        case gpu::Metric::kGpuTemperatureCelsius: s.temperature_celsius = m.value; break;
        case gpu::Metric::kMemoryTemperatureCelsius: s.memory_temperature_celsius = m.value; break;
        case gpu::Metric::kPowerWatts: s.power_watts = m.value; break;
        case gpu::Metric::kPcieLinkGeneration: s.pcie_link_generation = static_cast<int>(m.value); break;
        case gpu::Metric::kPcieLinkWidth: s.pcie_link_width = static_cast<int>(m.value); break;
        default: break;
      }
    }
  }
  return s;
}

// Runs the HBM copy kernel on CUDA device `device` until `deadline`. Returns the first error (the
// load did not run) or ok once at least one round ran.
core::Status run_load(int device, Clock::time_point deadline, std::atomic<bool>& started) {
  bench::cuda::HbmOptions opt;
  opt.device = device;
  opt.buffer_bytes = std::size_t{1} << 30;
  opt.warmup = 1;
  opt.repetitions = 10;
  opt.launches_per_sample = 20;   // ~0.1-0.3 s per round on an H200
  bool ran = false;
  while (Clock::now() < deadline) {
    auto r = bench::cuda::run_hbm(bench::cuda::HbmKernel::kCopy, opt);
    if (!r) {
      if (ran) return core::ok_status();
      return r.error();
    }
    ran = true;
    started = true;
  }
  return core::ok_status();
}

struct GpuRun {
  health::GpuInput in;
};

std::string status_cell(health::Status s) {
  const bool tty = ::isatty(1) != 0;
  const char* name = health::to_string(s);
  if (!tty) return fmt::format("{:<4}", name);
  const char* color = s == health::Status::kFail ? "\033[31m" : s == health::Status::kWarn ? "\033[33m"
                      : s == health::Status::kPass ? "\033[32m" : "\033[2m";
  return fmt::format("{}{:<4}\033[0m", color, name);
}

void print_table(const std::vector<health::CheckResult>& results, double wall_s, const std::string& header) {
  std::string out = header;
  out += fmt::format("{:<17} {:<3} {:<4}  {}\n", "CHECK", "GPU", "STAT", "EVIDENCE / NEXT STEP");
  for (const auto& r : results) {
    out += fmt::format("{:<17} {:<3} {}  {}\n", r.check, r.gpu ? std::to_string(*r.gpu) : "-", status_cell(r.status), r.evidence);
    if (!r.next_step.empty() && r.status != health::Status::kPass && r.status != health::Status::kSkip)
      out += fmt::format("{:<27}-> {}\n", "", r.next_step);
  }
  int n[5] = {0, 0, 0, 0, 0};
  for (const auto& r : results) ++n[static_cast<int>(r.status)];
  out += fmt::format("\n{} fail, {} warn, {} info, {} pass, {} skip — {:.1f} s\n", n[4], n[3], n[2], n[1], n[0], wall_s);
  std::fputs(out.c_str(), stdout);
}

int run_health(const HealthFlags& f) {
  const auto t0 = Clock::now();
  health::SystemHostReader host;
  std::vector<health::CheckResult> results;

  auto backend = open_live_backend();
  int count = 0;
  std::optional<core::Error> no_gpu;
  if (!backend) {
    no_gpu = backend.error();
  } else if (auto n = (*backend)->device_count(); !n) {
    no_gpu = n.error();
  } else if (*n == 0) {
    no_gpu = core::Error(core::ErrorKind::kEnvironment, "NVML sees no GPU on this machine");
  } else {
    count = *n;
  }
  if (no_gpu) {
    // Exit 3, but the host and library checks still say something useful.
    auto versions = health::collect_versions(host, gpu::SystemInfo{}, false);
    for (auto& r : health::check_versions(versions)) results.push_back(std::move(r));
    for (auto& r : health::check_host(health::collect_host(host, {}))) results.push_back(std::move(r));
    if (f.json) {
      nlohmann::json j = {{"status", "no_gpu"},
                          {"error", {{"kind", core::to_string(no_gpu->kind())}, {"message", no_gpu->message()},
                                     {"exit_code", core::exit_code(no_gpu->kind())}}},
                          {"gpudoc_version", core::kVersion}};
      j["checks"] = nlohmann::json::array();
      for (const auto& r : results) j["checks"].push_back(health::to_json(r));
      print_json(j);
    } else {
      print_table(results, std::chrono::duration<double>(Clock::now() - t0).count(),
                  "No GPU checks: " + no_gpu->message() + "\n\n");
    }
    std::fputs(fmt::format("gpudoc: error: {}\n", no_gpu->message()).c_str(), stderr);
    return core::kExitEnvironment;
  }
  gpu::Backend& b = **backend;

  std::vector<int> selected = f.gpus;
  if (selected.empty())
    for (int i = 0; i < count; ++i) selected.push_back(i);
  for (int g : selected)
    if (g < 0 || g >= count)
      return report_error(core::Error(core::ErrorKind::kUsage, fmt::format("--gpus: GPU {} does not exist (this machine has {})", g, count)), f.json);

  // XIDs while gpudoc runs.
  std::atomic<bool> stop{false};
  std::mutex xid_mu;
  health::XidInput xids;
  xids.nvml_events_watched = true;
  std::thread xid_thread([&] {
    while (!stop) {
      auto ev = b.wait_events(std::chrono::milliseconds(200));
      if (!ev) break;
      std::lock_guard lock(xid_mu);
      for (const auto& e : *ev)
        if (e.kind == "xid") xids.events.push_back(health::XidEvent{e.gpu >= 0 ? std::optional<int>(e.gpu) : std::nullopt, e.code, "nvml", {}});
    }
  });

  auto system = b.system_info();
  const gpu::SystemInfo sys = system ? *system : gpu::SystemInfo{};
  // torch's import takes seconds: beside the load.
  auto versions_future = std::async(std::launch::async, [&] { return health::collect_versions(host, sys, true); });

  std::vector<GpuRun> runs(selected.size());
  std::vector<std::string> bus_ids(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i)
    if (auto info = b.device_info(i)) bus_ids[static_cast<std::size_t>(i)] = info->pci_bus_id;
  for (std::size_t k = 0; k < selected.size(); ++k) {
    health::GpuInput& in = runs[k].in;
    in.gpu = selected[k];
    if (auto info = b.device_info(in.gpu)) {
      in.info = *info;
    } else if (info.error().kind() == core::ErrorKind::kGpuLost) {
      in.lost = info.error();
    }
    if (auto facts = b.health_facts(in.gpu)) {
      in.facts = *facts;
    } else if (facts.error().kind() == core::ErrorKind::kGpuLost) {
      in.lost = facts.error();
    } else {
      in.facts_error = facts.error().message();
    }
  }

  // The load (one thread per GPU) and the sampling beside it.
  std::string why_not;
  if (f.no_load) why_not = "--no-load";
  else if (std::getenv("CUDA_VISIBLE_DEVICES") != nullptr) why_not = "CUDA_VISIBLE_DEVICES is set, so CUDA's and NVML's GPU numbers may differ";
  if (why_not.empty()) ::setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0);   // CUDA ordinal i == NVML index i
  const double load_s = why_not.empty() ? std::max(1.5, f.load_seconds) : 0.3;
  const auto load_start = Clock::now();
  const auto deadline = load_start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(load_s));
  std::vector<std::atomic<bool>> started(selected.size());
  std::vector<core::Status> load_status(selected.size(), core::ok_status());
  std::vector<std::thread> loaders;
  std::atomic<int> loaders_done{0};
  if (why_not.empty())
    for (std::size_t k = 0; k < selected.size(); ++k)
      if (!runs[k].in.lost)
        loaders.emplace_back([&, k] {
          load_status[k] = run_load(selected[k], deadline, started[k]);
          ++loaders_done;
        });
  std::vector<double> started_at(selected.size(), -1.0);
  while (Clock::now() < deadline) {
    // Every load failed to start (no CUDA, no device): idle readings are enough, do not wait.
    if (!loaders.empty() && loaders_done == static_cast<int>(loaders.size()) &&
        std::none_of(started.begin(), started.end(), [](const std::atomic<bool>& s) { return s.load(); }) &&
        !runs.front().in.load.samples.empty() && runs.front().in.load.samples.size() >= 3)
      break;
    const double t = std::chrono::duration<double>(Clock::now() - load_start).count();
    for (std::size_t k = 0; k < selected.size(); ++k) {
      health::GpuInput& in = runs[k].in;
      if (in.lost) continue;
      if (started[k] && started_at[k] < 0) started_at[k] = t;
      auto s = sample(b, in.gpu, t);
      if (!s) {
        in.lost = s.error();
        continue;
      }
      in.load.samples.push_back(*s);
    }
    std::this_thread::sleep_for(kSamplePeriod);
  }
  for (auto& th : loaders) th.join();
  for (std::size_t k = 0; k < selected.size(); ++k) {
    health::LoadTelemetry& load = runs[k].in.load;
    if (!why_not.empty()) {
      load.why_not = why_not;
    } else if (!started[k]) {
      load.why_not = load_status[k] ? "the load did not start" : load_status[k].error().message();
    } else {
      load.ran = true;
      // Warm-up counts from when the first round finished (allocation and verification excluded).
      load.warmup_s = std::max(0.0, started_at[k]) + 0.5;
    }
    if (!load.ran) load.warmup_s = 0;
  }
  // A GPU that went away during the load: ask once more so the error is the driver's own.
  for (auto& r : runs)
    if (!r.in.lost)
      if (auto facts = b.health_facts(r.in.gpu); !facts && facts.error().kind() == core::ErrorKind::kGpuLost)
        r.in.lost = facts.error();

  stop = true;
  xid_thread.join();
  health::collect_kernel_xids(host, bus_ids, xids);
  const health::VersionFacts versions = versions_future.get();

  std::vector<std::pair<int, std::string>> numa_gpus;
  for (int g : selected) numa_gpus.emplace_back(g, bus_ids[static_cast<std::size_t>(g)]);
  for (auto& r : health::check_versions(versions)) results.push_back(std::move(r));
  for (const auto& r : runs)
    for (auto& c : health::check_gpu(r.in)) results.push_back(std::move(c));
  for (auto& r : health::check_xids(xids, count)) results.push_back(std::move(r));
  for (auto& r : health::check_host(health::collect_host(host, numa_gpus))) results.push_back(std::move(r));

  const double wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  const health::Status worst = health::worst(results);
  nlohmann::json j = {{"status", health::to_string(worst)}, {"gpudoc_version", core::kVersion}, {"wall_seconds", wall_s},
                      {"driver_version", sys.driver_version}, {"cuda_driver_version", sys.cuda_driver_version}};
  j["gpus"] = nlohmann::json::array();
  for (const auto& r : runs)
    j["gpus"].push_back({{"gpu", r.in.gpu}, {"name", r.in.info.name}, {"uuid", r.in.info.uuid}, {"pci_bus_id", r.in.info.pci_bus_id},
                         {"load_ran", r.in.load.ran}, {"load_why_not", r.in.load.why_not}, {"samples", r.in.load.samples.size()}});
  j["checks"] = nlohmann::json::array();
  for (const auto& r : results) j["checks"].push_back(health::to_json(r));

  if (!f.no_store) {
    auto path = baseline::default_store_path(f.store);
    if (path) {
      if (auto store = baseline::Store::open(*path)) {
        baseline::MachineContext m;
        m.host = core::host_name();
        for (const auto& r : runs) m.gpus.push_back(r.in.info.name);
        m.driver_version = sys.driver_version;
        m.cuda_version = sys.cuda_driver_version;
        const auto now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::system_clock::now().time_since_epoch()).count();
        if (auto id = store->add_result("health", m.host, now_ns, m, health::to_string(worst), j); id) {
          j["stored"] = {{"path", *path}, {"id", *id}};
        } else {
          core::log_warn("not stored: {}", id.error().message());
        }
      } else {
        core::log_warn("not stored: {}", store.error().message());
      }
    } else {
      core::log_warn("not stored: {}", path.error().message());
    }
  }

  if (f.json) {
    print_json(j);
  } else {
    std::string header = fmt::format("gpudoc health — driver {}, CUDA {}; {} GPU(s)", sys.driver_version.empty() ? "?" : sys.driver_version,
                                     sys.cuda_driver_version.empty() ? "?" : sys.cuda_driver_version, selected.size());
    if (!runs.empty() && runs[0].in.load.ran) header += fmt::format("; load: HBM copy for {:.1f} s", load_s);
    else if (!runs.empty()) header += fmt::format("; no load ({})", runs[0].in.load.why_not);
    print_table(results, wall_s, header + "\n\n");
  }
  return health::any_failed(results) ? core::kExitFinding : core::kExitOk;
}

}  // namespace

void register_health(CLI::App& app, Action& action) {
  auto flags = std::make_shared<HealthFlags>();
  CLI::App* cmd = app.add_subcommand(
      "health",
      "Is this GPU node healthy and set up right? Modes, ECC/row remapping, temperatures against the GPU's own "
      "thresholds, power limit, clocks and PCIe link under a short load, NVLink, XIDs, versions, host settings. "
      "Exit 1 when a check fails, 3 without a GPU. Changes nothing.");
  cmd->add_flag("--json", flags->json, "print the results as JSON");
  cmd->add_flag("--no-load", flags->no_load, "skip the short GPU load (clocks and PCIe are then not judged)");
  cmd->add_option("--gpus", flags->gpus, "GPU indices to check (default: all), e.g. --gpus 0,2")->delimiter(',');
  cmd->add_option("--load-seconds", flags->load_seconds, "how long the load runs (default 5)")->check(CLI::Range(1.0, 120.0));
  cmd->add_flag("--no-store", flags->no_store, "do not record the results in the store (for `gpudoc report`)");
  cmd->add_option("--store", flags->store, "the store file (default: $GPUDOC_STORE or ~/.local/share/gpudoc/gpudoc.db)");
  cmd->callback([flags, &action] { action = [flags] { return run_health(*flags); }; });
}

}  // namespace gpudoc::cli
