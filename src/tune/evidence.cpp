#include "tune/evidence.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <set>
#include <sys/stat.h>

#include "diagnose/session.hpp"
#include "tune/launch.hpp"

namespace gpudoc::tune {

const std::vector<std::string>& watched_variables() {
  static const std::vector<std::string> kNames = {
      "OMP_NUM_THREADS", "PYTORCH_CUDA_ALLOC_CONF", "CUDA_MODULE_LOADING", "CUDA_DEVICE_MAX_CONNECTIONS", "NCCL_ALGO",
      "NCCL_PROTO",      "NCCL_MIN_NCHANNELS",      "NCCL_MAX_NCHANNELS"};
  return kNames;
}

namespace {

// The positions (in the trace) of the GPUs the job worked on, and the diagnosis's summary.
std::vector<int> diagnose_plain(const std::string& trace_path, DiagnosisSummary& out, Evidence& e) {
  std::vector<int> used;
  auto d = diagnose::diagnose_file(trace_path, diagnose::Options{}, "the plain run");
  if (!d) {
    out.why_not = d.error().message();
    return used;
  }
  out.diagnosed = true;
  out.findings = d->diagnosis.findings;
  for (const auto& f : d->diagnosis.findings) {
    e.findings.push_back(f.id);
    if (!f.details.is_object()) continue;
    if (f.id == "plateau" && f.details.contains("kind") && f.details["kind"].is_string())
      e.plateau_kind = f.details["kind"].get<std::string>();
    if ((f.id == "sawtooth" && f.details.value("below_sensor_resolution", false)) ||
        (f.id == "plateau" && f.details.contains("undecided_between")))
      e.gaps_unresolved = true;
  }
  for (const auto& g : d->diagnosis.gpus)
    if (!g.primary.empty() && g.primary != "idle" && g.primary != "insufficient_data") used.push_back(g.gpu);
  for (int pos : used)
    if (pos >= 0 && static_cast<std::size_t>(pos) < d->trace.header.gpus.size())
      e.gpu_bus_ids.emplace_back(d->trace.header.gpus[static_cast<std::size_t>(pos)].index,
                                 d->trace.header.gpus[static_cast<std::size_t>(pos)].pci_bus_id);
  return used;
}

void machine_facts(const Env& env, Evidence& e) {
  if (env.backend != nullptr) {
    if (auto n = env.backend->device_count()) e.gpus = *n;
    for (const auto& [index, bus] : e.gpu_bus_ids)
      if (auto facts = env.backend->health_facts(index); facts && !facts->nvlinks.empty()) e.nvlink = true;
  }
  if (env.host == nullptr) return;
  const health::HostFacts h = health::collect_host(*env.host, e.gpu_bus_ids);
  e.allowed_cpus = h.allowed_cpus;
  e.governors = h.governors;
  e.sysctls = h.sysctls;
  std::set<int> nodes;
  for (const auto& g : h.gpus) nodes.insert(g.numa_node.value_or(-1));
  if (nodes.size() == 1 && *nodes.begin() >= 0) {
    e.gpu_numa_node = *nodes.begin();
    e.gpu_node_cpus = h.gpus.front().node_cpus;
  }
  int with_cpus = 0;
  for (const auto& p : env.host->glob("/sys/devices/system/node/node[0-9]*/cpulist")) {
    auto list = env.host->read_file(p);
    if (list && !health::parse_cpulist(*list).empty()) ++with_cpus;
  }
  e.numa_nodes = std::max(1, with_cpus);
  if (auto thp = env.host->read_file("/sys/kernel/mm/transparent_hugepage/enabled")) {
    const auto open = thp->find('['), close = thp->find(']');
    if (open != std::string::npos && close != std::string::npos && close > open)
      e.thp = thp->substr(open + 1, close - open - 1);
  }
}

}  // namespace

Evidence gather_evidence(const Env& env, const std::vector<std::string>& command, const Trial& plain,
                         const std::string& trace_path, DiagnosisSummary& diagnosis) {
  Evidence e;
  if (env.backend == nullptr) {
    diagnosis.why_not = env.no_gpu_reason.empty() ? "no GPU backend" : env.no_gpu_reason;
  } else if (plain.status == TrialStatus::kStopped) {
    diagnosis.why_not = "stopped";
  } else {
    struct stat st {};
    if (::stat(trace_path.c_str(), &st) == 0)
      e.gpus_used = static_cast<int>(diagnose_plain(trace_path, diagnosis, e).size());
    else
      diagnosis.why_not = "the plain run left no trace";
  }
  e.diagnosed = diagnosis.diagnosed;
  e.why_not_diagnosed = diagnosis.why_not;
  machine_facts(env, e);
  if (e.gpus_used == 0) e.gpus_used = 1;
  for (const auto& name : watched_variables())
    if (const char* v = std::getenv(name.c_str()); v != nullptr) e.env[name] = v;
  e.python = python_command(command, &e.why_not_python).has_value();
  e.seen = plain.seen;
  return e;
}

}  // namespace gpudoc::tune
