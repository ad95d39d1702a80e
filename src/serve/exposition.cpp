#include "serve/exposition.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <tuple>
#include <utility>

#include "core/utf8.hpp"

namespace gpudoc::serve {
namespace {

constexpr std::string_view kPrefix = "gpudoc_";

enum class Type { kGauge, kCounter };

// How a family's name is written.
enum class Naming {
  kGpudoc,    // gpudoc_ + the name (+ _total for a counter)
  kStandard,  // the name as every Prometheus client library writes it (process_*; + _total for a counter)
  kDcgm,      // dcgm-exporter's name taken as is, never given `_total`
};

// One metric family: its name as exposed before any `_total`, and its metadata.
struct Family {
  std::string_view name;  // without the gpudoc_ prefix
  Type type;
  std::string_view help;
  Naming naming = Naming::kGpudoc;
};

// Cumulative metrics of the catalog: exposed as counters (the energy counter, the error counters).
bool is_counter(gpu::Metric m) {
  using M = gpu::Metric;
  switch (m) {
    case M::kEnergyJoules:
    case M::kEccCorrectedVolatileErrors:
    case M::kEccUncorrectedVolatileErrors:
    case M::kEccCorrectedAggregateErrors:
    case M::kEccUncorrectedAggregateErrors:
    case M::kRemappedRowsCorrectable:
    case M::kRemappedRowsUncorrectable:
    case M::kPcieReplayErrors:
    case M::kNvlinkCrcFlitErrors:
    case M::kNvlinkCrcDataErrors:
    case M::kNvlinkReplayErrors:
    case M::kNvlinkRecoveryErrors: return true;
    default: return false;
  }
}

// The OpenMetrics UNIT of a family: the unit its name ends with, if it is one.
std::string_view om_unit(std::string_view name) {
  static constexpr std::array<std::string_view, 8> kUnits = {"bytes_per_second", "percent", "watts",  "mhz",
                                                             "celsius",          "bytes",   "joules", "seconds"};
  for (std::string_view u : kUnits)
    if (name.size() > u.size() && name.ends_with(u) && name[name.size() - u.size() - 1] == '_') return u;
  return {};
}

void append_escaped(std::string& out, std::string_view value, bool quote_too) {
  for (char c : value) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '"':
        if (quote_too)
          out += "\\\"";
        else
          out += c;
        break;
      default: out += c;
    }
  }
}

// A label value, escaped and valid UTF-8.
void append_label_value(std::string& out, std::string_view value) {
  if (core::is_valid_utf8(value)) {
    append_escaped(out, value, true);
  } else {
    append_escaped(out, core::to_valid_utf8(value), true);
  }
}

void append_label(std::string& out, std::string_view name, std::string_view value, bool first = false) {
  if (!first) out += ',';
  out += name;
  out += "=\"";
  append_label_value(out, value);
  out += '"';
}

void append_value(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
  } else if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
  } else {
    fmt::format_to(std::back_inserter(out), "{}", v);
  }
}

class Writer {
 public:
  Writer(std::string& out, Format format) : out_(out), om_(format == Format::kOpenMetrics) {}

  // HELP, TYPE (and UNIT in OpenMetrics) of a family; remembers the sample name for sample().
  void family(const Family& f) {
    sample_name_.clear();
    if (f.naming == Naming::kGpudoc) sample_name_ += kPrefix;
    sample_name_ += f.name;
    const std::size_t base_size = sample_name_.size();  // the family's name (OpenMetrics: without _total)
    if (f.type == Type::kCounter && f.naming != Naming::kDcgm) sample_name_ += "_total";
    const std::string_view meta = std::string_view(sample_name_).substr(0, om_ ? base_size : sample_name_.size());
    // dcgm-exporter's counters have no _total, which OpenMetrics requires of a counter's samples:
    // there they are `unknown` (the name, which dashboards query, matters more than the type).
    const bool om_unknown = om_ && f.type == Type::kCounter && f.naming == Naming::kDcgm;
    out_ += "# HELP ";
    out_ += meta;
    out_ += ' ';
    append_escaped(out_, f.help, om_);
    out_ += "\n# TYPE ";
    out_ += meta;
    out_ += om_unknown ? " unknown\n" : f.type == Type::kCounter ? " counter\n" : " gauge\n";
    if (om_) {
      if (std::string_view unit = om_unit(f.name); !unit.empty()) {
        out_ += "# UNIT ";
        out_ += meta;
        out_ += ' ';
        out_ += unit;
        out_ += '\n';
      }
    }
  }
  // name{labels} value: `labels` already rendered (a="b",c="d"), `extra` appended after them.
  void sample(std::string_view labels, double value, std::string_view extra = {}) {
    out_ += sample_name_;
    if (!labels.empty() || !extra.empty()) {
      out_ += '{';
      out_ += labels;
      if (!labels.empty() && !extra.empty()) out_ += ',';
      out_ += extra;
      out_ += '}';
    }
    out_ += ' ';
    append_value(out_, value);
    out_ += '\n';
  }
  void end() {
    if (om_) out_ += "# EOF\n";
  }
  std::string& out() { return out_; }

 private:
  std::string& out_;
  bool om_;
  std::string sample_name_;
};

// The holders' labels of a GPU (serve/attribution.hpp: namespace, pod, container, hpc_job), each
// after a comma.
void append_attribution_labels(std::string& out, const GpuSnapshot& g) {
  for (const auto& [name, value] : attribution_labels(g.attribution)) append_label(out, name, value);
}

// gpu="0",uuid="GPU-…",name="NVIDIA H200",pci_bus_id="…" and the holders' labels for each GPU,
// rendered once a scrape.
std::vector<std::string> gpu_labels(const Snapshot& s) {
  std::vector<std::string> out;
  out.reserve(s.gpus.size());
  for (const auto& g : s.gpus) {
    std::string l;
    append_label(l, "gpu", fmt::format("{}", g.index), true);
    append_label(l, "uuid", g.uuid);
    append_label(l, "name", g.name);
    append_label(l, "pci_bus_id", g.pci_bus_id);
    append_attribution_labels(l, g);
    out.push_back(std::move(l));
  }
  return out;
}

// The one job a GPU's processes all belong to, as labels: each of the container id, pod UID and
// Slurm job id that every process on the GPU shares and that is not empty (a GPU shared by two
// pods, or idle, has none). `dcgm`: dcgm-exporter's names where it has one (pod_uid; hpc_job for
// the Slurm job, the label its --hpc-job-mapping-dir sets, left out when the mapping files name
// the GPU's job: theirs is the label then); gpudoc's otherwise.
std::string job_labels(const GpuSnapshot& g, bool dcgm) {
  std::string l;
  if (g.processes.empty()) return l;
  auto shared = [&](std::string ProcessSnapshot::*field) -> std::string_view {
    const std::string& first = g.processes.front().*field;
    for (const auto& p : g.processes)
      if (p.*field != first) return {};
    return first;
  };
  const bool mapped_job = dcgm && g.attribution.hpc_jobs.size() == 1;
  const std::pair<std::string_view, std::string_view> labels[] = {
      {"container_id", shared(&ProcessSnapshot::container_id)},
      {"pod_uid", shared(&ProcessSnapshot::pod_uid)},
      {dcgm ? "hpc_job" : "slurm_job_id", mapped_job ? std::string_view{} : shared(&ProcessSnapshot::slurm_job_id)},
  };
  for (const auto& [name, value] : labels)
    if (!value.empty()) append_label(l, name, value, l.empty());
  return l;
}

// dcgm-exporter's labels, in its template's order: gpu, UUID, pci_bus_id, device, modelName, Hostname.
std::vector<std::string> dcgm_labels(const Snapshot& s) {
  std::vector<std::string> out;
  out.reserve(s.gpus.size());
  for (const auto& g : s.gpus) {
    std::string l;
    append_label(l, "gpu", fmt::format("{}", g.index), true);
    append_label(l, "UUID", g.uuid);
    append_label(l, "pci_bus_id", g.pci_bus_id);
    append_label(l, "device", fmt::format("nvidia{}", g.index));
    append_label(l, "modelName", g.name);
    if (!s.hostname.empty()) append_label(l, "Hostname", s.hostname);
    if (!s.driver_version.empty()) append_label(l, "DCGM_FI_DRIVER_VERSION", s.driver_version);
    const std::string job = job_labels(g, true);
    if (!job.empty()) {
      l += ',';
      l += job;
    }
    append_attribution_labels(l, g);
    out.push_back(std::move(l));
  }
  return out;
}

// A GPU listed twice (same index) is exposed once: the first.
std::vector<bool> first_of_each_gpu(const Snapshot& s) {
  std::vector<bool> keep(s.gpus.size(), true);
  for (std::size_t i = 0; i < s.gpus.size(); ++i)
    for (std::size_t j = 0; j < i && keep[i]; ++j)
      if (keep[j] && s.gpus[j].index == s.gpus[i].index) keep[i] = false;
  return keep;
}

bool any_value(const Snapshot& s, const std::vector<bool>& keep, gpu::Metric m) {
  for (std::size_t i = 0; i < s.gpus.size(); ++i)
    if (keep[i] && s.gpus[i].latest[gpu::index(m)]) return true;
  return false;
}

// gpudoc_gpu_info{gpu,uuid,name,pci_bus_id[,driver_version]} 1 for each GPU, and
// gpudoc_gpu_job_info{gpu,uuid,...job labels} 1 for each GPU one job holds: the labels a query
// joins on (`* on(instance, gpu) group_left(pod_uid) gpudoc_gpu_job_info`) to share a GPU's
// series out by job without giving every series labels that change with each job.
void render_gpu_info(Writer& w, const Snapshot& s, const std::vector<bool>& keep,
                     const std::vector<std::string>& labels) {
  bool any = false;
  for (bool k : keep) any = any || k;
  if (!any) return;
  w.family({"gpu_info", Type::kGauge, "the GPU's identity and driver (always 1)"});
  std::string extra;
  if (!s.driver_version.empty()) append_label(extra, "driver_version", s.driver_version, true);
  for (std::size_t i = 0; i < s.gpus.size(); ++i)
    if (keep[i]) w.sample(labels[i], 1, extra);
  std::vector<std::string> jobs(s.gpus.size());
  bool any_job = false;
  for (std::size_t i = 0; i < s.gpus.size(); ++i) {
    if (keep[i]) jobs[i] = job_labels(s.gpus[i], false);
    any_job = any_job || !jobs[i].empty();
  }
  if (!any_job) return;
  w.family({"gpu_job_info", Type::kGauge,
            "the container, pod and Slurm job that every process on this GPU belongs to (always 1; absent "
            "when the GPU is idle or shared)"});
  std::string l;
  for (std::size_t i = 0; i < s.gpus.size(); ++i) {
    if (jobs[i].empty()) continue;
    l.clear();
    append_label(l, "gpu", fmt::format("{}", s.gpus[i].index), true);
    append_label(l, "uuid", s.gpus[i].uuid);
    w.sample(l, 1, jobs[i]);
  }
}

// gpudoc_gpu_allocation_info{gpu,uuid,namespace,pod,container} 1 for each container the kubelet
// gave (a share of) the GPU, and {gpu,uuid,hpc_job} 1 for each job of its mapping files: every
// holder of a shared GPU, whose own series carry only what the holders agree on.
void render_gpu_allocations(Writer& w, const Snapshot& s, const std::vector<bool>& keep) {
  bool any = false;
  for (std::size_t i = 0; i < s.gpus.size(); ++i)
    any = any || (keep[i] && (!s.gpus[i].attribution.pods.empty() || !s.gpus[i].attribution.hpc_jobs.empty()));
  if (!any) return;
  w.family({"gpu_allocation_info", Type::kGauge,
            "each Kubernetes container (kubelet pod-resources) and HPC job (--hpc-job-mapping-dir) holding this GPU "
            "or a share of it (always 1)"});
  std::string gpu;
  std::string holder;
  for (std::size_t i = 0; i < s.gpus.size(); ++i) {
    if (!keep[i]) continue;
    gpu.clear();
    append_label(gpu, "gpu", fmt::format("{}", s.gpus[i].index), true);
    append_label(gpu, "uuid", s.gpus[i].uuid);
    for (const auto& p : s.gpus[i].attribution.pods) {
      holder.clear();
      append_label(holder, "namespace", p.namespace_name, true);
      append_label(holder, "pod", p.pod);
      append_label(holder, "container", p.container);
      w.sample(gpu, 1, holder);
    }
    for (const auto& job : s.gpus[i].attribution.hpc_jobs) {
      holder.clear();
      append_label(holder, "hpc_job", job, true);
      w.sample(gpu, 1, holder);
    }
  }
}

void render_gpu_metrics(Writer& w, const Snapshot& s, const std::vector<bool>& keep,
                        const std::vector<std::string>& labels) {
  for (gpu::Metric m : gpu::all_metrics()) {
    if (!any_value(s, keep, m)) continue;
    const auto& mi = gpu::info(m);
    w.family({mi.name, is_counter(m) ? Type::kCounter : Type::kGauge, mi.description});
    for (std::size_t i = 0; i < s.gpus.size(); ++i)
      if (const auto& v = s.gpus[i].latest[gpu::index(m)]; keep[i] && v) w.sample(labels[i], *v);
  }
}

void render_clock_event_reasons(Writer& w, const Snapshot& s, const std::vector<bool>& keep,
                                const std::vector<std::string>& labels) {
  const auto mask_index = gpu::index(gpu::Metric::kClockEventReasonsMask);
  if (!any_value(s, keep, gpu::Metric::kClockEventReasonsMask)) return;
  w.family({"clock_event_reason", Type::kGauge,
            "1 while this clock-event (throttle) reason is active (NVML nvmlClocksEventReason bits; "
            "other: bits gpudoc does not name)"});
  std::string extra;
  for (std::size_t i = 0; i < s.gpus.size(); ++i) {
    const auto& v = s.gpus[i].latest[mask_index];
    if (!keep[i] || !v) continue;
    const auto mask = static_cast<std::uint64_t>(*v);
    std::uint64_t known = 0;
    for (const auto& r : gpu::clock_event_reasons()) {
      known |= r.bit;
      extra.clear();
      append_label(extra, "reason", r.name, true);
      w.sample(labels[i], (mask & r.bit) != 0 ? 1 : 0, extra);
    }
    w.sample(labels[i], (mask & ~known) != 0 ? 1 : 0, "reason=\"other\"");
  }
}

std::string process_labels(const GpuSnapshot& g, const ProcessSnapshot& p) {
  std::string l;
  append_label(l, "gpu", fmt::format("{}", g.index), true);
  append_label(l, "uuid", g.uuid);
  append_label(l, "pid", fmt::format("{}", p.pid));
  append_label(l, "process_name", p.name);
  if (!p.container_id.empty()) append_label(l, "container_id", p.container_id);
  if (!p.pod_uid.empty()) append_label(l, "pod_uid", p.pod_uid);
  if (!p.slurm_job_id.empty()) append_label(l, "slurm_job_id", p.slurm_job_id);
  return l;
}

void render_processes(Writer& w, const Snapshot& s, const std::vector<bool>& keep) {
  // Labels of each process once (a pid seen twice on a GPU: the first), then one family at a time.
  struct Row {
    const ProcessSnapshot* p;
    std::string labels;
  };
  std::vector<Row> rows;
  for (std::size_t i = 0; i < s.gpus.size(); ++i) {
    if (!keep[i]) continue;
    const auto& procs = s.gpus[i].processes;
    for (std::size_t k = 0; k < procs.size(); ++k) {
      bool seen = false;
      for (std::size_t j = 0; j < k && !seen; ++j) seen = procs[j].pid == procs[k].pid;
      if (!seen) rows.push_back({&procs[k], process_labels(s.gpus[i], procs[k])});
    }
  }
  if (rows.empty()) return;
  auto emit = [&](const Family& f, auto get) {
    bool any = false;
    for (const auto& r : rows) any = any || get(*r.p).has_value();
    if (!any) return;
    w.family(f);
    for (const auto& r : rows)
      if (auto v = get(*r.p)) w.sample(r.labels, static_cast<double>(*v));
  };
  emit({"process_sm_utilization_percent", Type::kGauge, "share of the sample period a kernel of this process ran"},
       [](const ProcessSnapshot& p) { return p.sm_utilization_percent; });
  emit({"process_memory_utilization_percent", Type::kGauge,
        "share of the sample period this process read or wrote device memory"},
       [](const ProcessSnapshot& p) { return p.memory_utilization_percent; });
  emit({"process_memory_used_bytes", Type::kGauge, "device memory this process holds"},
       [](const ProcessSnapshot& p) { return p.memory_used_bytes; });
}

// A finding's severity as a value: 1 info, 2 warning, 3 critical (a label would start a new
// series, and restart an alert's `for`, each time a finding's severity changes).
double severity_value(findings::Severity s) {
  switch (s) {
    case findings::Severity::kCritical: return 3;
    case findings::Severity::kWarning: return 2;
    default: return 1;
  }
}

void render_findings(Writer& w, const Snapshot& s) {
  if (s.findings.empty()) return;
  // Stable order and each series once: by (gpu, id), the first of equal keys.
  std::vector<const FindingSeries*> order;
  for (const auto& f : s.findings) order.push_back(&f);
  std::stable_sort(order.begin(), order.end(), [](const FindingSeries* a, const FindingSeries* b) {
    return std::tie(a->gpu, a->id) < std::tie(b->gpu, b->id);
  });
  order.erase(
      std::unique(order.begin(), order.end(),
                  [](const FindingSeries* a, const FindingSeries* b) { return a->gpu == b->gpu && a->id == b->id; }),
      order.end());
  std::vector<std::string> labels;
  for (const auto* f : order) {
    std::string l;
    append_label(l, "id", f->id, true);
    append_label(l, "gpu", fmt::format("{}", f->gpu));
    labels.push_back(std::move(l));
  }
  w.family({"finding", Type::kGauge,
            "1 while the sliding-window diagnosis reports this finding on this GPU (docs/findings.md)"});
  for (const auto& l : labels) w.sample(l, 1);
  w.family({"finding_severity", Type::kGauge, "the finding's severity on this GPU: 1 info, 2 warning, 3 critical"});
  for (std::size_t i = 0; i < order.size(); ++i) w.sample(labels[i], severity_value(order[i]->severity));
  bool any_lost = false;
  for (const auto* f : order) any_lost = any_lost || f->gpu_time_lost_s.has_value();
  if (!any_lost) return;
  w.family({"finding_gpu_time_lost_seconds", Type::kGauge,
            "GPU time this finding cost on this GPU over the diagnosed window"});
  for (std::size_t i = 0; i < order.size(); ++i)
    if (order[i]->gpu_time_lost_s) w.sample(labels[i], *order[i]->gpu_time_lost_s);
}

// The fleet counters (serve/accounting.hpp): time, then energy, each family once.
void render_accounts(Writer& w, const Snapshot& s) {
  if (s.accounts.empty()) return;
  std::vector<std::string> labels;
  for (const auto& a : s.accounts) {
    std::string l;
    for (const auto& [name, value] : a.labels) append_label(l, name, value, l.empty());
    labels.push_back(std::move(l));
  }
  auto plain = [&](const Family& f, auto get) {
    bool any = false;
    for (const auto& a : s.accounts) any = any || get(a).has_value();
    if (!any) return;
    w.family(f);
    for (std::size_t i = 0; i < s.accounts.size(); ++i)
      if (const std::optional<double> v = get(s.accounts[i])) w.sample(labels[i], *v);
  };
  auto by_cause = [&](const Family& f, auto get) {
    bool any = false;
    for (const auto& a : s.accounts) any = any || !get(a).empty();
    if (!any) return;
    w.family(f);
    std::string id;
    for (std::size_t i = 0; i < s.accounts.size(); ++i)
      for (const auto& [cause, v] : get(s.accounts[i])) {
        id.clear();
        append_label(id, "id", cause, true);
        w.sample(labels[i], v, id);
      }
  };
  using A = AccountSeries;
  plain({"gpu_observed_seconds", Type::kCounter, "GPU time observed (docs/serve-metrics.md: each second once)"},
        [](const A& a) { return std::optional<double>(a.observed_s); });
  plain({"gpu_useful_seconds", Type::kCounter, "of the GPU time observed: busy, and no finding claimed it"},
        [](const A& a) { return std::optional<double>(a.useful_s); });
  by_cause(
      {"gpu_lost_seconds", Type::kCounter, "of the GPU time observed: lost to this finding (id)"},
      [](const A& a) -> const auto& { return a.lost_s; });
  plain({"gpu_unexplained_seconds", Type::kCounter, "of the GPU time observed: not busy, no finding names why"},
        [](const A& a) { return std::optional<double>(a.unexplained_s); });
  plain({"gpu_energy_joules", Type::kCounter, "the GPU's energy over the time observed"},
        [](const A& a) { return a.energy_j; });
  plain({"gpu_useful_energy_joules", Type::kCounter, "of the energy observed: drawn by the useful time"},
        [](const A& a) { return a.useful_energy_j; });
  by_cause(
      {"gpu_lost_energy_joules", Type::kCounter, "of the energy observed: drawn while lost to this finding (id)"},
      [](const A& a) -> const auto& { return a.lost_energy_j; });
  plain({"gpu_unexplained_energy_joules", Type::kCounter, "of the energy observed: drawn by the unexplained time"},
        [](const A& a) { return a.unexplained_energy_j; });
}

// The prices in effect for each GPU (cost::load_prices), for the rules' money.
void render_prices(Writer& w, const Snapshot& s) {
  auto emit = [&](const Family& f, std::optional<double> PriceSeries::*field, bool money) {
    bool any = false;
    for (const auto& p : s.prices) any = any || (p.*field).has_value();
    if (!any) return;
    w.family(f);
    std::string l;
    for (const auto& p : s.prices) {
      if (!(p.*field)) continue;
      l.clear();
      append_label(l, "gpu", fmt::format("{}", p.gpu), true);
      append_label(l, "uuid", p.uuid);
      append_label(l, "name", p.name);
      if (money && !p.currency.empty()) append_label(l, "currency", p.currency);
      w.sample(l, *(p.*field));
    }
  };
  emit({"price_gpu_hour", Type::kGauge, "money per GPU-hour for this GPU, in the currency labelled (docs/cost.md)"},
       &PriceSeries::gpu_hour, true);
  emit({"price_kwh", Type::kGauge, "money per kWh at the meter for this GPU, in the currency labelled"},
       &PriceSeries::kwh, true);
  emit({"price_pue", Type::kGauge, "the facility's energy over the IT energy (power usage effectiveness)"},
       &PriceSeries::pue, false);
  emit({"price_co2_grams_per_kwh", Type::kGauge, "grams of CO2 per kWh at the meter"}, &PriceSeries::co2_g_per_kwh,
       false);
}

void render_health(Writer& w, const Snapshot& s) {
  if (!s.health) return;
  w.family({"health_last_run_timestamp_seconds", Type::kGauge,
            "when the last `gpudoc health` run kept in the store ran (Unix time)"});
  w.sample({}, static_cast<double>(s.health->time_unix_ns) * 1e-9);
  if (s.health->checks.empty()) return;
  w.family({"health_check", Type::kGauge, "1 for each check of the last health run, labelled with its status"});
  std::string l;
  for (const auto& c : s.health->checks) {
    l.clear();
    append_label(l, "check", c.check, true);
    append_label(l, "status", c.status);
    if (c.gpu) append_label(l, "gpu", fmt::format("{}", *c.gpu));
    w.sample(l, 1);
  }
}

void render_baselines(Writer& w, const Snapshot& s) {
  if (s.baselines.empty()) return;
  std::vector<std::string> labels;
  for (const auto& b : s.baselines) {
    std::string l;
    append_label(l, "baseline", b.name, true);
    labels.push_back(std::move(l));
  }
  w.family({"baseline_verdict", Type::kGauge,
            "1 for each baseline's last verdict in the store (a check, or the golden record when never checked)"});
  std::string extra;
  for (std::size_t i = 0; i < s.baselines.size(); ++i) {
    extra.clear();
    append_label(extra, "verdict", s.baselines[i].verdict, true);
    w.sample(labels[i], 1, extra);
  }
  w.family({"baseline_last_run_timestamp_seconds", Type::kGauge, "when that verdict was reached (Unix time)"});
  for (std::size_t i = 0; i < s.baselines.size(); ++i)
    w.sample(labels[i], static_cast<double>(s.baselines[i].time_unix_ns) * 1e-9);
}

// gpudoc_gpu_xid_errors_total{gpu}: every GPU's XIDs of any number, there at 0 from the start so
// that `increase(...) > 0` sees the first one.
void render_gpu_xid_totals(Writer& w, const Snapshot& s, const std::vector<bool>& keep) {
  bool any = false;
  for (bool k : keep) any = any || k;
  if (!any) return;
  w.family({"gpu_xid_errors", Type::kCounter,
            "XID errors of any number the driver reported on this GPU since gpudoc serve started (0 until the first)"});
  std::string l;
  for (std::size_t i = 0; i < s.gpus.size(); ++i) {
    if (!keep[i]) continue;
    std::uint64_t total = 0;
    for (const auto& x : s.xids)
      if (x.gpu == s.gpus[i].index) total += x.count;
    l.clear();
    append_label(l, "gpu", fmt::format("{}", s.gpus[i].index), true);
    w.sample(l, static_cast<double>(total));
  }
}

void render_xids(Writer& w, const Snapshot& s, const std::vector<bool>& keep) {
  render_gpu_xid_totals(w, s, keep);
  if (s.xids.empty()) return;
  w.family({"xid_errors", Type::kCounter, "XID errors the driver reported on this GPU since gpudoc serve started"});
  std::string l;
  for (const auto& x : s.xids) {
    l.clear();
    append_label(l, "gpu", fmt::format("{}", x.gpu), true);
    append_label(l, "xid", fmt::format("{}", x.xid));
    w.sample(l, static_cast<double>(x.count));
  }
}

void render_self(Writer& w, const Snapshot& s) {
  const auto& self = s.self;
  w.family({"sampler_up", Type::kGauge, "1 while the sampler runs"});
  w.sample({}, self.sampler_running ? 1 : 0);
  if (self.group_periods_s) {
    w.family({"sampler_period_seconds", Type::kGauge, "how often the sampler reads each metric group"});
    for (std::size_t i = 0; i < gpu::kMetricGroupCount; ++i) {
      if ((*self.group_periods_s)[i] <= 0) continue;
      std::string l;
      append_label(l, "group", gpu::info(static_cast<gpu::MetricGroup>(i)).name, true);
      w.sample(l, (*self.group_periods_s)[i]);
    }
  }
  std::vector<std::string> labels;
  for (const auto& g : self.gpus) {
    std::string l;
    append_label(l, "gpu", fmt::format("{}", g.gpu), true);
    labels.push_back(std::move(l));
  }
  auto per_gpu = [&](const Family& f, auto get) {
    if (self.gpus.empty()) return;
    w.family(f);
    for (std::size_t i = 0; i < self.gpus.size(); ++i) w.sample(labels[i], get(self.gpus[i]));
  };
  per_gpu({"sampler_reads", Type::kCounter, "backend reads the sampler made"},
          [](const SamplerGpuSelf& g) { return static_cast<double>(g.reads); });
  per_gpu({"sampler_samples", Type::kCounter, "metric samples the sampler produced"},
          [](const SamplerGpuSelf& g) { return static_cast<double>(g.samples); });
  per_gpu({"sampler_errors", Type::kCounter, "backend reads that failed (a lost GPU not counted)"},
          [](const SamplerGpuSelf& g) { return static_cast<double>(g.errors); });
  per_gpu({"sampler_gpu_lost", Type::kGauge, "1 while the GPU is lost (fallen off the bus, needs a reset)"},
          [](const SamplerGpuSelf& g) { return g.lost ? 1.0 : 0.0; });
  per_gpu({"sampler_gpu_unresponsive", Type::kGauge, "1 while a driver call on this GPU hangs"},
          [](const SamplerGpuSelf& g) { return g.unresponsive ? 1.0 : 0.0; });
  w.family({"sampler_dropped_records", Type::kCounter, "sampler records dropped because no one consumed them"});
  w.sample({}, static_cast<double>(self.dropped_records));
  w.family({"scrapes", Type::kCounter, "scrapes of /metrics served, this one included"});
  w.sample({}, static_cast<double>(self.scrapes));
  if (self.last_render_seconds) {
    w.family({"scrape_render_seconds", Type::kGauge, "CPU time the previous scrape's rendering took"});
    w.sample({}, *self.last_render_seconds);
  }
  if (self.last_diagnosis_seconds) {
    w.family({"diagnosis_seconds", Type::kGauge, "time the last sliding-window diagnosis took"});
    w.sample({}, *self.last_diagnosis_seconds);
  }
  if (!s.version.empty()) {
    std::string l;
    append_label(l, "version", s.version, true);
    if (!s.revision.empty()) append_label(l, "revision", s.revision);
    w.family({"build_info", Type::kGauge, "gpudoc's version and the commit built (always 1)"});
    w.sample(l, 1);
  }
}

// The process_* series of the Prometheus client libraries, with their names and help texts.
void render_process(Writer& w, const ProcessSelf& p) {
  const auto one = [&w](const std::optional<double>& v, const Family& f) {
    if (!v) return;
    w.family(f);
    w.sample({}, *v);
  };
  one(p.cpu_seconds,
      {"process_cpu_seconds", Type::kCounter, "Total user and system CPU time spent in seconds.", Naming::kStandard});
  one(p.open_fds, {"process_open_fds", Type::kGauge, "Number of open file descriptors.", Naming::kStandard});
  one(p.max_fds, {"process_max_fds", Type::kGauge, "Maximum number of open file descriptors.", Naming::kStandard});
  one(p.virtual_memory_bytes,
      {"process_virtual_memory_bytes", Type::kGauge, "Virtual memory size in bytes.", Naming::kStandard});
  one(p.resident_memory_bytes,
      {"process_resident_memory_bytes", Type::kGauge, "Resident memory size in bytes.", Naming::kStandard});
  one(p.start_time_seconds, {"process_start_time_seconds", Type::kGauge,
                             "Start time of the process since unix epoch in seconds.", Naming::kStandard});
}

// DCGM_FI_DEV_XID_ERRORS: the number of the newest XID on each GPU, 0 before the first (as
// dcgm-exporter's gauge, "Value of the last XID error encountered").
void render_dcgm_xid(Writer& w, const Snapshot& s, const std::vector<bool>& keep,
                     const std::vector<std::string>& labels) {
  bool any = false;
  for (bool k : keep) any = any || k;
  if (!any) return;
  w.family({"DCGM_FI_DEV_XID_ERRORS", Type::kGauge, "Value of the last XID error encountered.", Naming::kDcgm});
  for (std::size_t i = 0; i < s.gpus.size(); ++i) {
    if (!keep[i]) continue;
    const XidSeries* last = nullptr;
    for (const auto& x : s.xids)
      if (x.gpu == s.gpus[i].index && x.count > 0 && (last == nullptr || x.last_unix_ns > last->last_unix_ns))
        last = &x;
    w.sample(labels[i], last != nullptr ? last->xid : 0);
  }
}

void render_dcgm(Writer& w, const Snapshot& s, const std::vector<bool>& keep) {
  const auto labels = dcgm_labels(s);
  for (const auto& d : dcgm_mappings()) {
    if (!any_value(s, keep, d.metric)) continue;
    w.family({d.dcgm_name, d.type == "counter" ? Type::kCounter : Type::kGauge, d.help, Naming::kDcgm});
    for (std::size_t i = 0; i < s.gpus.size(); ++i) {
      const auto& v = s.gpus[i].latest[gpu::index(d.metric)];
      if (!keep[i] || !v) continue;
      const double x = *v * d.multiply / d.divide;
      w.sample(labels[i], d.whole == Whole::kFloor ? std::floor(x) : d.whole == Whole::kRound ? std::round(x) : x);
    }
  }
  render_dcgm_xid(w, s, keep, labels);
}

}  // namespace

std::string_view content_type(Format format) noexcept {
  return format == Format::kOpenMetrics ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                                        : "text/plain; version=0.0.4; charset=utf-8";
}

Format negotiate(std::string_view accept) noexcept {
  return accept.find("application/openmetrics-text") != std::string_view::npos ? Format::kOpenMetrics
                                                                               : Format::kPrometheus;
}

std::string escape_label_value(std::string_view value) {
  std::string out;
  append_label_value(out, value);
  return out;
}

std::vector<FindingSeries> finding_series(const std::vector<findings::Finding>& found,
                                          const std::vector<int>& gpu_indices) {
  std::map<std::pair<int, std::string>, FindingSeries> by_key;
  for (const auto& f : found) {
    if (f.gpus.empty()) continue;
    std::optional<double> lost;
    for (const auto& e : f.evidence)
      if (e.name == "gpu_time_lost_s") lost = e.value / static_cast<double>(f.gpus.size());
    for (int pos : f.gpus) {
      const int gpu = pos >= 0 && static_cast<std::size_t>(pos) < gpu_indices.size()
                          ? gpu_indices[static_cast<std::size_t>(pos)]
                          : pos;
      auto [it, fresh] = by_key.try_emplace({gpu, f.id}, FindingSeries{f.id, f.severity, gpu, lost});
      if (fresh) continue;
      it->second.severity = std::max(it->second.severity, f.severity);
      if (lost) it->second.gpu_time_lost_s = it->second.gpu_time_lost_s.value_or(0) + *lost;
    }
  }
  std::vector<FindingSeries> out;
  out.reserve(by_key.size());
  for (auto& [key, series] : by_key) out.push_back(std::move(series));
  return out;
}

const std::vector<DcgmMapping>& dcgm_mappings() {
  // Names, types and help from dcgm-exporter's etc/default-counters.csv and
  // etc/dcp-metrics-included.csv (NVIDIA/dcgm-exporter d5e5f51); docs/serve-metrics.md lists them.
  using M = gpu::Metric;
  static const std::vector<DcgmMapping> kMappings = {
      {M::kSmClockMhz, "DCGM_FI_DEV_SM_CLOCK", "gauge", 1, 1, Whole::kNo, "SM clock frequency (in MHz)."},
      {M::kMemoryClockMhz, "DCGM_FI_DEV_MEM_CLOCK", "gauge", 1, 1, Whole::kNo, "Memory clock frequency (in MHz)."},
      {M::kMemoryTemperatureCelsius, "DCGM_FI_DEV_MEMORY_TEMP", "gauge", 1, 1, Whole::kNo,
       "Memory temperature (in C)."},
      {M::kGpuTemperatureCelsius, "DCGM_FI_DEV_GPU_TEMP", "gauge", 1, 1, Whole::kNo, "GPU temperature (in C)."},
      {M::kPowerWatts, "DCGM_FI_DEV_POWER_USAGE", "gauge", 1, 1, Whole::kNo, "Power draw (in W)."},
      {M::kEnergyJoules, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", 1000, 1, Whole::kRound,
       "Total energy consumption since boot (in mJ)."},
      {M::kGpuUtilizationPercent, "DCGM_FI_DEV_GPU_UTIL", "gauge", 1, 1, Whole::kNo, "GPU utilization (in %)."},
      {M::kMemoryUtilizationPercent, "DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", 1, 1, Whole::kNo,
       "Memory utilization (in %)."},
      {M::kMemoryUsedBytes, "DCGM_FI_DEV_FB_USED", "gauge", 1, 1024 * 1024, Whole::kFloor,
       "Framebuffer memory used (in MiB)."},
      {M::kGpmSmActivityPercent, "DCGM_FI_PROF_SM_ACTIVE", "gauge", 1, 100, Whole::kNo,
       "The ratio of cycles an SM has at least 1 warp assigned."},
      {M::kGpmSmOccupancyPercent, "DCGM_FI_PROF_SM_OCCUPANCY", "gauge", 1, 100, Whole::kNo,
       "The ratio of number of warps resident on an SM."},
      {M::kGpmTensorActivityPercent, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", 1, 100, Whole::kNo,
       "Ratio of cycles the tensor (HMMA) pipe is active."},
      {M::kGpmDramActivityPercent, "DCGM_FI_PROF_DRAM_ACTIVE", "gauge", 1, 100, Whole::kNo,
       "Ratio of cycles the device memory interface is active sending or receiving data."},
      {M::kGpmPcieTxBytesPerSecond, "DCGM_FI_PROF_PCIE_TX_BYTES", "gauge", 1, 1, Whole::kNo,
       "The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads - in "
       "bytes per second."},
      {M::kGpmPcieRxBytesPerSecond, "DCGM_FI_PROF_PCIE_RX_BYTES", "gauge", 1, 1, Whole::kNo,
       "The rate of data received over the PCIe bus - including both protocol headers and data payloads - in bytes "
       "per second."},
      {M::kMemoryFreeBytes, "DCGM_FI_DEV_FB_FREE", "gauge", 1, 1024 * 1024, Whole::kFloor,
       "Framebuffer memory free (in MiB)."},
      {M::kGpmGraphicsActivityPercent, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", 1, 100, Whole::kNo,
       "Ratio of time the graphics engine is active."},
      {M::kPcieReplayErrors, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", 1, 1, Whole::kNo,
       "Total number of PCIe retries."},
      {M::kEccCorrectedVolatileErrors, "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", 1, 1, Whole::kNo,
       "Total number of single-bit volatile ECC errors."},
      {M::kEccUncorrectedVolatileErrors, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", 1, 1, Whole::kNo,
       "Total number of double-bit volatile ECC errors."},
      {M::kEccCorrectedAggregateErrors, "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "counter", 1, 1, Whole::kNo,
       "Total number of single-bit persistent ECC errors."},
      {M::kEccUncorrectedAggregateErrors, "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "counter", 1, 1, Whole::kNo,
       "Total number of double-bit persistent ECC errors."},
      {M::kRemappedRowsUncorrectable, "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", 1, 1, Whole::kNo,
       "Number of remapped rows for uncorrectable errors"},
      {M::kRemappedRowsCorrectable, "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", 1, 1, Whole::kNo,
       "Number of remapped rows for correctable errors"},
      {M::kRowRemapFailure, "DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", 1, 1, Whole::kNo,
       "Whether remapping of rows has failed"},
      {M::kNvlinkCrcFlitErrors, "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "counter", 1, 1, Whole::kNo,
       "Total number of NVLink flow-control CRC errors."},
      {M::kNvlinkCrcDataErrors, "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "counter", 1, 1, Whole::kNo,
       "Total number of NVLink data CRC errors."},
      {M::kNvlinkReplayErrors, "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "counter", 1, 1, Whole::kNo,
       "Total number of NVLink retries."},
      {M::kNvlinkRecoveryErrors, "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "counter", 1, 1, Whole::kNo,
       "Total number of NVLink recovery errors."},
  };
  return kMappings;
}

void render_to(std::string& out, const Snapshot& snapshot, const RenderOptions& options) {
  out.clear();
  Writer w(out, options.format);
  const auto keep = first_of_each_gpu(snapshot);
  const auto labels = gpu_labels(snapshot);
  render_gpu_metrics(w, snapshot, keep, labels);
  render_gpu_info(w, snapshot, keep, labels);
  render_gpu_allocations(w, snapshot, keep);
  render_clock_event_reasons(w, snapshot, keep, labels);
  render_processes(w, snapshot, keep);
  render_findings(w, snapshot);
  render_accounts(w, snapshot);
  render_prices(w, snapshot);
  render_health(w, snapshot);
  render_baselines(w, snapshot);
  render_xids(w, snapshot, keep);
  render_self(w, snapshot);
  render_process(w, snapshot.process);
  if (options.dcgm_compatible) render_dcgm(w, snapshot, keep);
  w.end();
}

std::string render(const Snapshot& snapshot, const RenderOptions& options) {
  std::string out;
  // About 12 KiB a GPU with its processes and every metric, 24 with dcgm-exporter's names and the
  // job's labels on each: one allocation, not a dozen doublings (they cost as much as the
  // rendering itself).
  out.reserve(4096 + snapshot.gpus.size() * (options.dcgm_compatible ? 24576 : 12288));
  render_to(out, snapshot, options);
  return out;
}

std::string render_account_families(const std::vector<AccountSeries>& accounts, Format format) {
  Snapshot s;
  s.accounts = accounts;
  std::string out;
  Writer w(out, format);
  render_accounts(w, s);
  w.end();
  return out;
}

}  // namespace gpudoc::serve
