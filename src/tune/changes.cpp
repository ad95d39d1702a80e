#include "tune/changes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "health/health.hpp"

namespace gpudoc::tune {

const char* to_string(Layer layer) noexcept {
  switch (layer) {
    case Layer::kProcess: return "process";
    case Layer::kCuda: return "cuda";
    case Layer::kNccl: return "nccl";
    case Layer::kFramework: return "framework";
  }
  return "?";
}

std::string_view layer_title(Layer layer) noexcept {
  switch (layer) {
    case Layer::kProcess: return "process and OS";
    case Layer::kCuda: return "CUDA";
    case Layer::kNccl: return "NCCL";
    case Layer::kFramework: return "framework (Python shim)";
  }
  return "?";
}

std::string cpulist(const std::vector<int>& cpus) {
  std::vector<int> c(cpus);
  std::sort(c.begin(), c.end());
  c.erase(std::unique(c.begin(), c.end()), c.end());
  std::string out;
  for (std::size_t i = 0; i < c.size();) {
    std::size_t j = i;
    while (j + 1 < c.size() && c[j + 1] == c[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j == i ? fmt::format("{}", c[i]) : fmt::format("{}-{}", c[i], c[j]);
    i = j + 1;
  }
  return out;
}

namespace {

// The diagnosis's findings, as the rules below read them.
struct Signs {
  bool starved = false;        // sawtooth: the GPU waits for its input between steps
  bool launch_bound = false;   // plateau of the launch-bound kind
  bool plateau = false;        // any plateau
  bool memory_growth = false;  // device memory climbs
  bool memory_bound = false;
  bool healthy = false;
  bool pulse = false;  // GPUs wait in communication
  [[nodiscard]] bool host_bound() const { return starved || launch_bound; }
};

Signs signs_of(const Evidence& e) {
  Signs s;
  auto has = [&](std::string_view id) {
    return std::find(e.findings.begin(), e.findings.end(), id) != e.findings.end();
  };
  // Gaps the telemetry cannot name (faster than the sensor, or a plateau that may be either) may be
  // the input or the launches: both cures are pointed to, and what the job does not use is ruled
  // out by what the shim saw it do.
  s.starved = has("sawtooth") || e.gaps_unresolved;
  s.plateau = has("plateau");
  s.launch_bound = (s.plateau && e.plateau_kind == "launch_bound") || e.gaps_unresolved;
  s.memory_growth = has("memory_growth");
  s.memory_bound = has("memory_bound");
  s.healthy = has("healthy");
  s.pulse = has("pulse");
  return s;
}

// The GPUs the job works on: those the diagnosis saw at work, else every GPU the machine shows.
int job_gpus(const Evidence& e) { return e.diagnosed ? e.gpus_used : e.gpus; }

std::string env_value(const Evidence& e, const std::string& name) {
  const auto it = e.env.find(name);
  return it == e.env.end() ? std::string() : it->second;
}

// Collects the changes of one pick: a change is offered when a rule points to it (or --only names
// it), else it is listed as not tried with the rule's reason.
class Picker {
 public:
  Picker(const Evidence& e, const PickOptions& o) : e_(e), o_(o), s_(signs_of(e)) {}

  // `pointed`: the diagnosis points to it (why: `why`); otherwise `why_not` says what it lacks.
  void offer(Change c, bool pointed, const std::string& why_not) {
    const bool named = named_by_only(c);
    if (!o_.only.empty() && !named) {
      out_.not_tried.push_back({c.id, c.layer, "not named by --only"});
      return;
    }
    if (!pointed && !named) {
      out_.not_tried.push_back({c.id, c.layer, why_not});
      return;
    }
    if (!pointed) c.why = "named by --only (" + why_not + ")";
    out_.changes.push_back(std::move(c));
  }
  // A change the machine or the command rules out, whatever the diagnosis or --only says.
  void rule_out(const std::string& id, Layer layer, const std::string& why) {
    out_.not_tried.push_back({id, layer, why});
  }

  [[nodiscard]] const Evidence& e() const { return e_; }
  [[nodiscard]] const Signs& s() const { return s_; }
  Picked finish() {
    std::stable_sort(out_.changes.begin(), out_.changes.end(), [](const Change& a, const Change& b) {
      return a.layer != b.layer ? a.layer < b.layer : a.priority < b.priority;
    });
    return std::move(out_);
  }
  Picked& out() { return out_; }

 private:
  [[nodiscard]] bool named_by_only(const Change& c) const {
    return std::any_of(o_.only.begin(), o_.only.end(), [&](const std::string& n) { return n == c.id || n == c.knob; });
  }
  const Evidence& e_;
  const PickOptions& o_;
  Signs s_;
  Picked out_;
};

std::string not_pointed(const Evidence& e, std::string_view needs) {
  if (!e.diagnosed) return "no diagnosis (" + e.why_not_diagnosed + "); name it with --only to try it";
  return fmt::format("the diagnosis does not point to it (it helps {})", needs);
}

void process_layer(Picker& p) {
  const Evidence& e = p.e();
  const int cpus = static_cast<int>(e.allowed_cpus.size());
  // CPU binding to the GPU's NUMA node: only where there is a choice to make.
  if (e.numa_nodes < 2) {
    p.rule_out("cpu_bind_node", Layer::kProcess, "one NUMA node with CPUs: binding to it changes nothing");
  } else if (!e.gpu_numa_node) {
    p.rule_out("cpu_bind_node", Layer::kProcess, "the NUMA node of the job's GPUs is not known (or they span several)");
  } else {
    std::vector<int> local;
    for (int c : e.gpu_node_cpus)
      if (std::find(e.allowed_cpus.begin(), e.allowed_cpus.end(), c) != e.allowed_cpus.end()) local.push_back(c);
    if (local.empty() || local.size() == e.allowed_cpus.size()) {
      p.rule_out("cpu_bind_node", Layer::kProcess,
                 local.empty() ? "none of the CPUs this job may use is on its GPUs' node"
                               : "the job already runs only on its GPUs' node");
    } else {
      Change c{.id = "cpu_bind_node", .knob = "cpu_bind", .layer = Layer::kProcess};
      c.cpus = local;
      c.what = fmt::format("run on the CPUs of NUMA node {} (the GPUs' node): {}", *e.gpu_numa_node, cpulist(local));
      c.why = "host-bound steps (input or launches) pay for every copy and launch across the CPU interconnect";
      p.offer(std::move(c), p.s().host_bound() || p.s().pulse, not_pointed(e, "host-bound or multi-GPU jobs"));
    }
  }
  // OpenMP threads: torch's intra-op pool competes with the loader workers and the launching thread.
  const std::string omp = env_value(e, "OMP_NUM_THREADS");
  std::set<int> values = {1};
  if (cpus >= 4) values.insert(std::max(2, cpus / std::max(1, e.gpus_used) / 2));
  for (int v : values) {
    const std::string id = fmt::format("omp_threads_{}", v);
    if (omp == std::to_string(v)) {
      p.rule_out(id, Layer::kProcess, fmt::format("OMP_NUM_THREADS is already {}", v));
      continue;
    }
    Change c{.id = id, .knob = "omp_threads", .layer = Layer::kProcess};
    c.env = {fmt::format("OMP_NUM_THREADS={}", v)};
    c.what = fmt::format("OpenMP threads of the job: {} (now {})", v, omp.empty() ? "unset: one per core" : omp);
    c.why = "a host-bound step: torch's CPU thread pool competes with the data loader and the launching thread";
    p.offer(std::move(c), p.s().host_bound(), not_pointed(e, "host-bound jobs"));
  }
}

void cuda_layer(Picker& p) {
  const Evidence& e = p.e();
  const std::string alloc = env_value(e, "PYTORCH_CUDA_ALLOC_CONF");
  if (alloc.find("expandable_segments") != std::string::npos) {
    p.rule_out("alloc_expandable", Layer::kCuda, "PYTORCH_CUDA_ALLOC_CONF already sets expandable_segments");
  } else {
    Change c{.id = "alloc_expandable", .knob = "alloc_expandable", .layer = Layer::kCuda};
    c.env = {"PYTORCH_CUDA_ALLOC_CONF=" + (alloc.empty() ? std::string() : alloc + ",") + "expandable_segments:True"};
    c.what = "PyTorch's allocator maps memory in growing segments (less fragmentation, fewer cudaMalloc calls)";
    c.why = "device memory climbs: fragmentation makes the allocator reserve, free and search more";
    p.offer(std::move(c), p.s().memory_growth, not_pointed(e, "jobs whose device memory climbs or fragments"));
  }
  const std::string loading = env_value(e, "CUDA_MODULE_LOADING");
  if (loading != "EAGER") {
    p.rule_out("module_loading_lazy", Layer::kCuda,
               loading.empty() ? "CUDA_MODULE_LOADING is unset: lazy loading is CUDA's default since 12.2"
                               : "CUDA_MODULE_LOADING is already " + loading);
  } else {
    Change c{.id = "module_loading_lazy", .knob = "module_loading", .layer = Layer::kCuda};
    c.env = {"CUDA_MODULE_LOADING=LAZY"};
    c.what = "load each kernel when first used, not every module at start-up";
    c.why = "CUDA_MODULE_LOADING=EAGER loads every kernel of every library at start-up";
    p.offer(std::move(c), true, "");
  }
  const std::string conn = env_value(e, "CUDA_DEVICE_MAX_CONNECTIONS");
  if (job_gpus(e) < 2) {
    p.rule_out(
        "device_max_connections_32", Layer::kCuda,
        "the job works on one GPU: more hardware queues help only streams that overlap (communication beside compute)");
  } else if (conn == "32") {
    p.rule_out("device_max_connections_32", Layer::kCuda, "CUDA_DEVICE_MAX_CONNECTIONS is already 32");
  } else {
    Change c{.id = "device_max_connections_32", .knob = "device_max_connections", .layer = Layer::kCuda};
    c.env = {"CUDA_DEVICE_MAX_CONNECTIONS=32"};
    c.what = fmt::format("32 hardware work queues per device (now {})", conn.empty() ? "8, the default" : conn);
    c.why = "GPUs wait in communication: streams that should overlap may share a queue";
    p.offer(std::move(c), p.s().pulse, not_pointed(e, "multi-GPU jobs whose GPUs wait in communication"));
  }
}

void nccl_layer(Picker& p) {
  const Evidence& e = p.e();
  struct Option {
    const char* id;
    const char* knob;
    const char* env;
    const char* what;
  };
  const Option options[] = {
      {"nccl_algo_ring", "nccl_algo", "NCCL_ALGO=Ring", "all-reduce as a ring (bandwidth-optimal for large messages)"},
      {"nccl_algo_tree", "nccl_algo", "NCCL_ALGO=Tree", "all-reduce as a tree (lower latency for small messages)"},
      {"nccl_proto_simple", "nccl_proto", "NCCL_PROTO=Simple", "NCCL's Simple protocol (large messages)"},
      {"nccl_proto_ll128", "nccl_proto", "NCCL_PROTO=LL128", "NCCL's LL128 protocol (NVLink; mid-size messages)"},
      {"nccl_channels_16", "nccl_channels", "NCCL_MIN_NCHANNELS=16", "at least 16 NCCL channels (more SMs copying)"},
  };
  for (const Option& o : options) {
    if (job_gpus(e) < 2) {
      p.rule_out(o.id, Layer::kNccl, "the job works on one GPU: no collective communication to tune");
      continue;
    }
    const std::string name = std::string(o.env).substr(0, std::string(o.env).find('='));
    if (!env_value(e, name).empty()) {
      p.rule_out(o.id, Layer::kNccl, fmt::format("{} is already set ({})", name, env_value(e, name)));
      continue;
    }
    if (std::string_view(o.id) == "nccl_proto_ll128" && !e.nvlink) {
      p.rule_out(o.id, Layer::kNccl, "no NVLink between the GPUs: NCCL enables LL128 on NVLink only");
      continue;
    }
    Change c{.id = o.id, .knob = o.knob, .layer = Layer::kNccl};
    c.env = {o.env};
    c.what = o.what;
    c.why = "GPUs wait in communication (pulse): the collectives' algorithm, protocol and channels set their speed";
    p.offer(std::move(c), p.s().pulse, not_pointed(e, "multi-GPU jobs whose GPUs wait in communication"));
  }
}

int loader_workers(const Evidence& e) {
  const int per_gpu = static_cast<int>(e.allowed_cpus.size()) / std::max(1, e.gpus_used);
  return std::clamp(per_gpu - 2, 2, 8);
}

// Why what the shim saw in the plain run rules framework change `id` out; empty: it does not.
std::string ruled_out_by_seen(const Evidence& e, std::string_view id, int workers) {
  const ShimSeen& s = e.seen;
  if (!s.observed) return {};
  if (!s.torch) return "the job did not import torch in its plain run";
  const bool loader = id == "loader_workers" || id == "loader_workers_pinned";
  if (loader && s.dataloaders == 0) return "the job made no DataLoader in its plain run";
  if (loader && s.iterable_loaders == s.dataloaders)
    return "its DataLoaders read IterableDatasets: more workers would repeat their data";
  if (id == "loader_workers" && s.max_workers >= workers)
    return fmt::format("its DataLoader already has {} workers", s.max_workers);
  if (id == "loader_workers_pinned" && s.max_workers >= workers && s.pinned)
    return fmt::format("its DataLoader already has {} workers and pins its memory", s.max_workers);
  if (id == "compile_reduce_overhead" && !s.compile)
    return fmt::format("torch {} has no torch.compile (2.0 or newer)", s.torch_version);
  if ((id == "compile_reduce_overhead" || id == "bf16_autocast") && s.cuda_modules == 0)
    return "the job moved no module with parameters to a CUDA device with .to() or .cuda()";
  if ((id == "cudnn_benchmark" || id == "channels_last") && s.conv_modules == 0)
    return "no 2-D convolution in the modules the job moved to the GPU";
  return {};
}

void framework_layer(Picker& p) {
  const Evidence& e = p.e();
  const Signs& s = p.s();
  struct Patch {
    const char* id;
    const char* knob;
    std::vector<std::string> patches;
    bool numerics;
    std::string what;
    std::string why;
    bool pointed;
    std::string needs;
    int priority;
  };
  const int w = loader_workers(e);
  const std::vector<Patch> patches = {
      {"loader_workers",
       "loader",
       {fmt::format("workers={}", w), "persistent_workers"},
       false,
       fmt::format("DataLoaders with fewer than {} workers get {} (kept alive between epochs)", w, w),
       "the GPU waits for its input: batches are made on the training process between steps",
       s.starved,
       "input-starved jobs",
       0},
      {"loader_workers_pinned",
       "loader",
       {fmt::format("workers={}", w), "persistent_workers", "pin_memory", "prefetch=4"},
       false,
       fmt::format("DataLoaders get {} workers, pinned memory and 4 batches prefetched per worker", w),
       "the GPU waits for its input: batches made in the background and copied from pinned memory",
       s.starved,
       "input-starved jobs",
       0},
      {"compile_reduce_overhead",
       "compile",
       {"compile=reduce-overhead"},
       false,
       "the first module moved to the GPU runs under torch.compile(mode=\"reduce-overhead\") (CUDA Graphs)",
       "launch-bound: one graph replay instead of a launch per kernel",
       s.launch_bound,
       "launch-bound jobs",
       0},
      {"cudnn_benchmark",
       "cudnn_benchmark",
       {"cudnn_benchmark"},
       false,
       "torch.backends.cudnn.benchmark = True (cuDNN times its algorithms once per shape)",
       "convolutions may run a faster algorithm than cuDNN's heuristic picks",
       s.healthy || s.plateau,
       "convolutional jobs that keep the GPU busy",
       1},
      {"channels_last",
       "channels_last",
       {"channels_last"},
       false,
       "modules with 2-D convolutions moved to the GPU are converted to channels-last",
       "tensor-core convolutions read NHWC without transposes",
       s.healthy,
       "convolutional jobs",
       1},
      {"tf32",
       "tf32",
       {"tf32"},
       true,
       "float32 matmuls and convolutions on TF32 tensor cores",
       "the GPU is the bottleneck: fp32 math on tensor cores is several times faster",
       s.healthy || s.memory_bound,
       "jobs that keep the GPU busy with float32 math",
       1},
      {"bf16_autocast",
       "precision",
       {"bf16_autocast"},
       true,
       "the first module moved to the GPU runs its forward under torch.autocast(\"cuda\", torch.bfloat16)",
       "the GPU is the bottleneck: bf16 halves the bytes and runs on tensor cores",
       s.memory_bound,
       "memory-bound float32 jobs",
       1},
  };
  for (const Patch& pt : patches) {
    if (!e.python) {
      p.rule_out(pt.id, Layer::kFramework, e.why_not_python);
      continue;
    }
    if (const std::string why = ruled_out_by_seen(e, pt.id, w); !why.empty()) {
      p.rule_out(pt.id, Layer::kFramework, why);
      continue;
    }
    Change c{.id = pt.id, .knob = pt.knob, .layer = Layer::kFramework};
    c.patches = pt.patches;
    c.numerics = pt.numerics;
    c.what = pt.what;
    c.why = pt.why;
    c.priority = pt.priority;
    if (c.knob == "compile") c.start_extra_s = kCompileStartS;
    // For a busy GPU, float32 math on tensor cores is the diagnosis's own suggestion.
    if (c.knob == "tf32" && s.healthy) c.priority = 0;
    p.offer(std::move(c), pt.pointed, not_pointed(e, pt.needs));
  }
}

void advice(Picked& out, const Evidence& e) {
  if (!e.governors.empty() && (e.governors.size() > 1 || e.governors.begin()->first != "performance")) {
    std::string now;
    for (const auto& [g, n] : e.governors) now += fmt::format("{}{} ({} CPUs)", now.empty() ? "" : ", ", g, n);
    out.advice.push_back(
        {"cpu_governor", "CPU frequency governor", now, "sudo cpupower frequency-set -g performance",
         "a machine-wide setting: gpudoc never changes it, and cannot measure it without changing it"});
  }
  if (e.thp == "always")
    out.advice.push_back({"thp", "Transparent huge pages", e.thp,
                          "echo madvise | sudo tee /sys/kernel/mm/transparent_hugepage/enabled",
                          "\"always\" lets khugepaged compact memory under a running job (latency spikes); a "
                          "machine-wide setting gpudoc never changes"});
  for (const auto& a : health::sysctl_advice())
    if (const auto it = e.sysctls.find(std::string(a.name)); it != e.sysctls.end())
      out.advice.push_back({"sysctl:" + it->first, it->first, it->second, std::string(a.affects),
                            "a kernel setting of the whole machine (/etc/sysctl.d/): shown, never changed"});
}

}  // namespace

Picked pick(const Evidence& e, const PickOptions& o) {
  Picker p(e, o);
  process_layer(p);
  cuda_layer(p);
  nccl_layer(p);
  framework_layer(p);
  Picked out = p.finish();
  advice(out, e);
  return out;
}

std::vector<std::string> known_names() {
  Evidence e;
  e.diagnosed = true;
  e.findings = {"sawtooth", "plateau", "memory_growth", "memory_bound", "healthy", "pulse"};
  e.plateau_kind = "launch_bound";
  e.gpus = 2;
  e.gpus_used = 2;
  e.nvlink = true;
  e.allowed_cpus = {0, 1, 2, 3, 4, 5, 6, 7};
  e.gpu_numa_node = 0;
  e.gpu_node_cpus = {0, 1, 2, 3};
  e.numa_nodes = 2;
  e.python = true;
  e.env["CUDA_MODULE_LOADING"] = "EAGER";
  const Picked p = pick(e, {});
  std::set<std::string> names;
  for (const auto& c : p.changes) {
    // the values of a family (omp_threads_N) depend on the machine: the knob names them all
    if (c.knob != "omp_threads") names.insert(c.id);
    names.insert(c.knob);
  }
  return {names.begin(), names.end()};
}

}  // namespace gpudoc::tune
