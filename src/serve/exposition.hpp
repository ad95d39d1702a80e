// gpudoc::serve exposition — one scrape of `gpudoc serve`'s /metrics, rendered from a snapshot.
//
// Pure: a Snapshot (the latest value of every metric of every GPU, the processes, the findings of
// the sliding diagnosis, the sampler's own counters) in, text out; no I/O, no clock, no GPU. The
// Prometheus text format 0.0.4 by default, OpenMetrics 1.0 when asked (a scraper's Accept header);
// with `dcgm_compatible`, dcgm-exporter's names and labels are added for the metrics that have an
// equivalent (docs/serve-metrics.md lists each mapping with its unit and scale).
//
//   serve::Snapshot s;
//   s.gpus.push_back({.index = 0, .uuid = "GPU-…", .name = "NVIDIA H200", .pci_bus_id = "00000000:18:00.0"});
//   s.gpus[0].latest[gpu::index(gpu::Metric::kPowerWatts)] = 412.5;
//   std::string body = serve::render(s, {.format = serve::Format::kOpenMetrics});
//   // content type: serve::content_type(serve::Format::kOpenMetrics)
//
// Names: `gpudoc_` + the catalog's name, which already ends with its unit (gpudoc_power_watts);
// cumulative metrics are counters named `..._total` in both formats. Series come in a stable order
// (the catalog's, then GPUs as given), each at most once; label values are escaped (backslash,
// double quote, newline) and made valid UTF-8. A metric absent from a GPU's snapshot is absent
// from the scrape, never 0.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "findings/finding.hpp"
#include "gpu/metrics.hpp"
#include "serve/attribution.hpp"

namespace gpudoc::serve {

enum class Format { kPrometheus, kOpenMetrics };

// "text/plain; version=0.0.4; charset=utf-8" or "application/openmetrics-text; version=1.0.0; charset=utf-8".
[[nodiscard]] std::string_view content_type(Format format) noexcept;
// The format a scraper asked for in its Accept header: OpenMetrics when it names
// application/openmetrics-text, the Prometheus text format otherwise (also for an empty header).
[[nodiscard]] Format negotiate(std::string_view accept) noexcept;

// One process on one GPU. container_id, pod_uid and slurm_job_id (read from the process's cgroup:
// core::process_cgroup_identity) are labels only when not empty.
struct ProcessSnapshot {
  std::uint32_t pid = 0;
  std::string name;  // executable name: anything (escaped on output)
  std::string container_id;
  std::string pod_uid;
  std::string slurm_job_id;
  std::optional<double> sm_utilization_percent;
  std::optional<double> memory_utilization_percent;
  std::optional<std::uint64_t> memory_used_bytes;
};

struct GpuSnapshot {
  int index = 0;
  std::string uuid;
  std::string name;
  std::string pci_bus_id;
  std::array<std::optional<double>, gpu::kMetricCount> latest{};  // by gpu::index(Metric)
  std::vector<ProcessSnapshot> processes;                         // a pid seen twice: the first counts
  // The pods and HPC jobs holding the GPU (serve/attribution.hpp): attribution_labels on every
  // series of the GPU, native and dcgm-exporter's, and gpudoc_gpu_allocation_info for each holder.
  GpuAttribution attribution{};
};

// One finding on one GPU, as exported: gpudoc_finding{id,gpu} 1, gpudoc_finding_severity{id,gpu}
// (1 info, 2 warning, 3 critical) and its GPU time lost.
struct FindingSeries {
  std::string id;
  findings::Severity severity = findings::Severity::kInfo;
  int gpu = 0;  // the GPU's index
  std::optional<double> gpu_time_lost_s;
};

// The findings of a diagnosis as series: one per (id, GPU), at the finding's highest severity, GPU
// time lost summed. A finding's `gpus` are positions in `gpu_indices` (the trace's GPU list; a
// position past its end is used as the index itself); its gpu_time_lost_s evidence is shared out
// evenly over its GPUs, so that a sum over `gpu` gives the finding's total.
[[nodiscard]] std::vector<FindingSeries> finding_series(const std::vector<findings::Finding>& found,
                                                        const std::vector<int>& gpu_indices);

// The sampler's and the server's own counters for one GPU.
struct SamplerGpuSelf {
  int gpu = 0;
  std::uint64_t reads = 0;
  std::uint64_t samples = 0;
  std::uint64_t errors = 0;
  bool lost = false;
  bool unresponsive = false;
};

struct SelfSnapshot {
  bool sampler_running = false;
  // Each metric group's read period (gpudoc_sampler_period_seconds{group}); 0: the group is off,
  // not exposed. Absent when not known.
  std::optional<std::array<double, gpu::kMetricGroupCount>> group_periods_s;
  std::vector<SamplerGpuSelf> gpus;
  std::uint64_t dropped_records = 0;
  std::uint64_t scrapes = 0;                     // scrapes served, this one included
  std::optional<double> last_render_seconds;     // CPU time the previous render took
  std::optional<double> last_diagnosis_seconds;  // how long the last sliding diagnosis took
};

// One check of the last `gpudoc health` run kept in the store: gpudoc_health_check{check,status[,gpu]} 1.
struct HealthCheckSeries {
  std::string check;
  std::string status;  // "pass" | "warn" | "fail" | "skip"
  std::optional<int> gpu;
};

// The last health run: its checks and when it ran (gpudoc_health_last_run_timestamp_seconds).
struct HealthSnapshot {
  std::int64_t time_unix_ns = 0;
  std::string status;  // the worst check's
  std::vector<HealthCheckSeries> checks;
};

// A baseline's last check (or its golden record when never checked): gpudoc_baseline_verdict{baseline,verdict} 1.
struct BaselineSeries {
  std::string name;
  std::string verdict;  // as stored ("ok", "regression", "interrupted", ...), or "recorded": never checked
  std::int64_t time_unix_ns = 0;
};

// XID errors counted on one GPU since serve started: gpudoc_xid_errors_total{gpu,xid}; the
// newest one's number is dcgm-exporter's DCGM_FI_DEV_XID_ERRORS.
struct XidSeries {
  int gpu = 0;
  int xid = 0;
  std::uint64_t count = 0;
  std::int64_t last_unix_ns = 0;  // when this XID last came
};

// The exporter's own process, as every Prometheus client library exposes it (process_cpu_seconds_total,
// process_resident_memory_bytes, ...; serve/process_metrics.hpp reads them from /proc/self). Each
// absent one is not exposed.
struct ProcessSelf {
  std::optional<double> cpu_seconds{};  // user + system
  std::optional<double> resident_memory_bytes{};
  std::optional<double> virtual_memory_bytes{};
  std::optional<double> start_time_seconds{};  // since the Unix epoch
  std::optional<double> open_fds{};
  std::optional<double> max_fds{};  // the soft limit; absent when unlimited
};

// One GPU's time and energy counters under one set of its holders' labels (serve/accounting.hpp):
// gpudoc_gpu_observed_seconds_total, ..._useful_..., ..._lost_...{id}, ..._unexplained_..., and the
// same in joules when the GPU's energy is known. useful + every lost + unexplained == observed.
struct AccountSeries {
  std::vector<std::pair<std::string, std::string>> labels{};  // gpu, uuid, name, then the holders'
  double observed_s = 0;
  double useful_s = 0;
  double unexplained_s = 0;
  std::vector<std::pair<std::string, double>> lost_s{};  // by finding id, sorted
  std::optional<double> energy_j{};
  std::optional<double> useful_energy_j{};
  std::optional<double> unexplained_energy_j{};
  std::vector<std::pair<std::string, double>> lost_energy_j{};
};

// The prices in effect for one GPU (cost::load_prices: the environment and the prices file):
// gpudoc_price_gpu_hour, gpudoc_price_kwh, gpudoc_price_pue, gpudoc_price_co2_grams_per_kwh, each
// {gpu, uuid, name[, currency]}; an absent price is not exposed.
struct PriceSeries {
  int gpu = 0;
  std::string uuid{};
  std::string name{};
  std::string currency{};
  std::optional<double> gpu_hour{};
  std::optional<double> kwh{};
  std::optional<double> pue{};
  std::optional<double> co2_g_per_kwh{};
};

struct Snapshot {
  std::vector<GpuSnapshot> gpus;  // in the order to expose them
  std::vector<FindingSeries> findings;
  std::optional<HealthSnapshot> health;  // absent: no health run in the store (or no store)
  std::vector<BaselineSeries> baselines;
  std::vector<XidSeries> xids;
  std::vector<AccountSeries> accounts{};
  std::vector<PriceSeries> prices{};
  SelfSnapshot self;
  ProcessSelf process{};
  std::string hostname;  // dcgm-exporter's Hostname label (only with dcgm_compatible; empty: none)
  // The driver's version: gpudoc_gpu_info{driver_version}, dcgm-exporter's DCGM_FI_DRIVER_VERSION
  // label on its series (empty: none).
  std::string driver_version;
  std::string version;   // gpudoc_build_info{version}; empty: no build info series
  std::string revision;  // gpudoc_build_info{revision} when not empty: the commit built
};

struct RenderOptions {
  Format format = Format::kPrometheus;
  bool dcgm_compatible = false;  // also DCGM_FI_* series with dcgm-exporter's labels
};

// Appends one scrape's body to `out` (cleared first), reusing its capacity: the server keeps one
// buffer. Thread-safety: none needed (pure); the snapshot must not change during the call.
void render_to(std::string& out, const Snapshot& snapshot, const RenderOptions& options);
[[nodiscard]] std::string render(const Snapshot& snapshot, const RenderOptions& options);
// Only the fleet counters' families (what render() writes for `accounts`, with the same names,
// labels and escaping), ended as render() ends them (OpenMetrics: # EOF). `gpudoc trace counters`
// (replay_counters.hpp) exports a recorded trace's counters with it.
[[nodiscard]] std::string render_account_families(const std::vector<AccountSeries>& accounts, Format format);

// Escapes a label value for either format (\ -> \\, " -> \", newline -> \n) after replacing
// invalid UTF-8 with U+FFFD.
[[nodiscard]] std::string escape_label_value(std::string_view value);

// One dcgm-exporter equivalent of a gpudoc metric: DCGM value = gpudoc value * multiply / divide,
// then made whole as DCGM's integer fields are.
enum class Whole { kNo, kFloor, kRound };
struct DcgmMapping {
  gpu::Metric metric;
  std::string_view dcgm_name;  // "DCGM_FI_DEV_FB_USED"
  std::string_view type;       // "gauge" | "counter"
  double multiply;             // J -> mJ: 1000
  double divide;               // bytes -> MiB: 1048576; percent -> ratio: 100
  Whole whole;                 // FB_USED: floor (DCGM's integer MiB); energy: round (integer mJ)
  std::string_view help;       // dcgm-exporter's own help text (etc/default-counters.csv)
};
[[nodiscard]] const std::vector<DcgmMapping>& dcgm_mappings();

}  // namespace gpudoc::serve
