#include "health/node.hpp"

#include <fmt/format.h>

#include <atomic>
#include <future>
#include <mutex>
#include <thread>

#include "core/version.hpp"

namespace gpudoc::health {
namespace {

// XIDs reported through the backend's events while the check runs, on a thread of its own.
class XidWatch {
 public:
  explicit XidWatch(gpu::Backend& b) {
    xids_.nvml_events_watched = true;
    thread_ = std::thread([this, &b] {
      while (!stop_) {
        auto ev = b.wait_events(std::chrono::milliseconds(200));
        if (!ev) break;
        std::lock_guard lock(mu_);
        for (const auto& e : *ev)
          if (e.kind == "xid")
            xids_.events.push_back(XidEvent{e.gpu >= 0 ? std::optional<int>(e.gpu) : std::nullopt, e.code, "nvml", {}});
      }
    });
  }
  ~XidWatch() { finish(); }
  XidWatch(const XidWatch&) = delete;
  XidWatch& operator=(const XidWatch&) = delete;

  XidInput finish() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    std::lock_guard lock(mu_);
    return xids_;
  }

 private:
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  XidInput xids_;
  std::thread thread_;
};

core::Result<std::vector<int>> selected_gpus(const std::vector<int>& wanted, int count) {
  std::vector<int> selected = wanted;
  if (selected.empty())
    for (int i = 0; i < count; ++i) selected.push_back(i);
  for (int g : selected)
    if (g < 0 || g >= count)
      return core::Error(core::ErrorKind::kUsage,
                         fmt::format("--gpus: GPU {} does not exist (this machine has {})", g, count));
  return selected;
}

// Each selected GPU's static facts and health facts; a GPU that is lost already is marked so.
std::vector<GpuInput> read_facts(gpu::Backend& b, const std::vector<int>& selected) {
  std::vector<GpuInput> gpus(selected.size());
  for (std::size_t k = 0; k < selected.size(); ++k) {
    GpuInput& in = gpus[k];
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
  return gpus;
}

std::vector<CheckResult> all_checks(const NodeReport& node, const VersionFacts& versions, const XidInput& xids,
                                    const HostFacts& host) {
  std::vector<CheckResult> results;
  for (auto& r : check_versions(versions)) results.push_back(std::move(r));
  for (const auto& in : node.gpus)
    for (auto& c : check_gpu(in)) results.push_back(std::move(c));
  for (auto& r : check_xids(xids, node.gpu_count)) results.push_back(std::move(r));
  for (auto& r : check_host(host)) results.push_back(std::move(r));
  return results;
}

}  // namespace

core::Result<NodeReport> check_node(gpu::Backend& b, core::Clock& clock, HostReader& host, const NodeOptions& options,
                                    const LoadFn& load) {
  const core::MonoTime t0 = clock.now();
  NodeReport node;
  auto count = b.device_count();
  if (!count) return count.error();
  node.gpu_count = *count;
  auto selected = selected_gpus(options.gpus, *count);
  if (!selected) return selected.error();

  XidWatch xid_watch(b);
  if (auto system = b.system_info()) node.system = *system;
  // torch's import takes seconds: beside the load.
  auto versions_future =
      std::async(std::launch::async, [&] { return collect_versions(host, node.system, options.with_torch); });
  std::vector<std::string> bus_ids(static_cast<std::size_t>(*count));
  for (int i = 0; i < *count; ++i)
    if (auto info = b.device_info(i)) bus_ids[static_cast<std::size_t>(i)] = info->pci_bus_id;
  node.gpus = read_facts(b, *selected);
  node.load_seconds = run_load(b, clock, options.load, load, node.gpus);
  // A GPU that went away during the load: ask once more so the error is the driver's own.
  for (auto& in : node.gpus)
    if (!in.lost)
      if (auto facts = b.health_facts(in.gpu); !facts && facts.error().kind() == core::ErrorKind::kGpuLost)
        in.lost = facts.error();

  XidInput xids = xid_watch.finish();
  collect_kernel_xids(host, bus_ids, xids);
  const VersionFacts versions = versions_future.get();
  std::vector<std::pair<int, std::string>> numa_gpus;
  for (int g : *selected) numa_gpus.emplace_back(g, bus_ids[static_cast<std::size_t>(g)]);
  node.results = all_checks(node, versions, xids, collect_host(host, numa_gpus));
  node.wall_seconds = core::to_seconds(clock.now() - t0);
  return node;
}

std::vector<CheckResult> check_host_only(HostReader& host) {
  std::vector<CheckResult> results;
  for (auto& r : check_versions(collect_versions(host, gpu::SystemInfo{}, false))) results.push_back(std::move(r));
  for (auto& r : check_host(collect_host(host, {}))) results.push_back(std::move(r));
  return results;
}

nlohmann::json to_json(const NodeReport& node) {
  const Status w = worst(node.results);
  nlohmann::json j = {{"status", to_string(w)},
                      {"gpudoc_version", core::kVersion},
                      {"wall_seconds", node.wall_seconds},
                      {"driver_version", node.system.driver_version},
                      {"cuda_driver_version", node.system.cuda_driver_version}};
  j["gpus"] = nlohmann::json::array();
  for (const auto& in : node.gpus)
    j["gpus"].push_back({{"gpu", in.gpu},
                         {"name", in.info.name},
                         {"uuid", in.info.uuid},
                         {"pci_bus_id", in.info.pci_bus_id},
                         {"load_ran", in.load.ran},
                         {"load_why_not", in.load.why_not},
                         {"samples", in.load.samples.size()}});
  j["checks"] = nlohmann::json::array();
  for (const auto& r : node.results) j["checks"].push_back(to_json(r));
  return j;
}

}  // namespace gpudoc::health
