#include "serve/service.hpp"

#include <algorithm>

#include "core/commit.hpp"
#include "core/host.hpp"
#include "core/version.hpp"
#include "diagnose/diagnose.hpp"

namespace gpudoc::serve {
namespace {

// The first next step of a finding, or the catalog's.
std::string first_next_step(const findings::Finding& f) {
  if (!f.next_steps.empty()) return f.next_steps.front();
  if (const auto* e = findings::find_entry(f.id); e != nullptr && !e->next_steps.empty())
    return std::string(e->next_steps.front());
  return {};
}

std::optional<double> evidence_value(const findings::Finding& f, std::string_view name) {
  for (const auto& e : f.evidence)
    if (e.name == name) return e.value;
  return std::nullopt;
}

nlohmann::json finding_json(const findings::Finding& f, const std::vector<int>& gpu_indices,
                            std::int64_t window_start_unix_ns) {
  nlohmann::json gpus = nlohmann::json::array();
  for (int pos : f.gpus)
    gpus.push_back(pos >= 0 && static_cast<std::size_t>(pos) < gpu_indices.size()
                       ? gpu_indices[static_cast<std::size_t>(pos)]
                       : pos);
  const auto at = [&](double s) { return window_start_unix_ns + static_cast<std::int64_t>(s * 1e9); };
  nlohmann::json j = {{"id", f.id},
                      {"severity", findings::to_string(f.severity)},
                      {"gpus", std::move(gpus)},
                      {"window_start_unix_ns", at(f.window.start_s)},
                      {"window_end_unix_ns", at(f.window.end_s)},
                      {"summary", f.message},
                      {"next_step", first_next_step(f)},
                      {"confidence", f.confidence}};
  const auto lost = evidence_value(f, "gpu_time_lost_s");
  j["gpu_time_lost_seconds"] = lost ? nlohmann::json(*lost) : nlohmann::json(nullptr);
  return j;
}

nlohmann::json gpu_json(const GpuSnapshot& g) {
  nlohmann::json values = nlohmann::json::object();
  for (gpu::Metric m : gpu::all_metrics())
    if (const auto& v = g.latest[gpu::index(m)]) values[std::string(gpu::info(m).name)] = *v;
  nlohmann::json reasons = nlohmann::json::array();
  if (const auto& mask = g.latest[gpu::index(gpu::Metric::kClockEventReasonsMask)])
    for (const auto& r : gpu::clock_event_reasons())
      if ((static_cast<std::uint64_t>(*mask) & r.bit) != 0) reasons.push_back(r.name);
  nlohmann::json procs = nlohmann::json::array();
  for (const auto& p : g.processes) {
    nlohmann::json pj = {{"pid", p.pid}, {"name", p.name}};
    pj["used_memory_bytes"] = p.memory_used_bytes ? nlohmann::json(*p.memory_used_bytes) : nlohmann::json(nullptr);
    pj["sm_utilization_percent"] =
        p.sm_utilization_percent ? nlohmann::json(*p.sm_utilization_percent) : nlohmann::json(nullptr);
    if (!p.container_id.empty()) pj["container"] = p.container_id;
    if (!p.pod_uid.empty()) pj["pod"] = p.pod_uid;
    if (!p.slurm_job_id.empty()) pj["slurm_job"] = p.slurm_job_id;
    procs.push_back(std::move(pj));
  }
  return {{"gpu", g.index},
          {"uuid", g.uuid},
          {"name", g.name},
          {"pci_bus_id", g.pci_bus_id},
          {"values", std::move(values)},
          {"clock_event_reasons", std::move(reasons)},
          {"processes", std::move(procs)}};
}

}  // namespace

ServiceOptions service_options(const Settings& settings, telemetry::SamplerConfig sampler) {
  ServiceOptions so;
  so.sampler = std::move(sampler);
  so.history = std::chrono::seconds(static_cast<long>(settings.history_s));
  so.diagnose_window = std::chrono::seconds(static_cast<long>(settings.diagnose_window_s));
  so.diagnose_every = std::chrono::seconds(static_cast<long>(settings.diagnose_every_s));
  so.store = settings.store;
  so.attribution = settings.attribution;
  so.hostname = core::host_name();
  so.version = core::kVersion;
  so.revision = core::kGitCommit;
  return so;
}

std::vector<findings::Finding> diagnose_window(const telemetry::Trace& window, double window_s) {
  if (!window.first_sample_s) return {};
  diagnose::Options o;
  o.window_s = window_s;
  o.skip_start_s = 0;  // a sliding window has no start-up to skip
  return diagnose::diagnose(window, o).findings;
}

Service::Service(const telemetry::Live& live, const telemetry::TraceHeader& header, ServiceOptions options)
    : live_(live),
      header_(header),
      options_(std::move(options)),
      latest_(header.gpus, options_.sampler.periods),
      history_(header.gpus, std::max(options_.history, options_.diagnose_window)),
      sampler_(*live.backend, *live.clock, options_.sampler) {
  for (const auto& d : header.gpus) gpu_indices_.push_back(d.index);
  if (options_.label_process) latest_.set_labeler(options_.label_process);
  if (options_.attribution.enabled()) attributor_ = std::make_unique<Attributor>(header.gpus, options_.attribution);
}

Service::~Service() { stop(); }

std::int64_t Service::now_unix_ns() const { return live_.clock->unix_now_ns(); }

core::Status Service::start() {
  if (auto s = sampler_.start(); !s) return s;
  liveness_.start(std::chrono::steady_clock::now());
  if (attributor_) attributor_->start();
  running_ = true;
  sampling_thread_ = std::thread([this] { sampling_loop(); });
  analysis_thread_ = std::thread([this] { analysis_loop(); });
  return core::ok_status();
}

void Service::stop() {
  {
    std::lock_guard lock(stop_mu_);
    if (!running_.exchange(false) && !sampling_thread_.joinable()) return;
  }
  liveness_.stop();
  stop_cv_.notify_all();
  sampler_.stop();  // first: it wakes the sampling loop out of its drain at once
  if (sampling_thread_.joinable()) sampling_thread_.join();
  if (analysis_thread_.joinable()) analysis_thread_.join();
  if (attributor_) attributor_->stop();
  {
    std::lock_guard lock(update_mu_);
    ++sequence_;
  }
  update_cv_.notify_all();
}

void Service::sampling_loop() {
  core::name_this_thread("serve-latest");
  // One wake-up a second (earlier only for an event or a filling queue: Sampler::drain): the values
  // served are at most a second old, the event streams get one update a second, the history is
  // pruned as often. Every wake-up costs CPU, and serve's budget is the sampler's plus 0.1 % of a core.
  // The first tick comes 0.1 s after the start, so that a page opened at once finds values to plot.
  auto next_tick = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
  while (running_) {
    const auto wait = std::max(next_tick - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration(0));
    for (auto& rec : sampler_.drain(std::chrono::duration_cast<core::Nanos>(wait))) {
      latest_.apply(rec);
      history_.apply(rec);
    }
    if (const auto now = std::chrono::steady_clock::now(); now >= next_tick) {
      next_tick = now + std::chrono::seconds(1);
      liveness_.tick(now);
      history_.prune(now_unix_ns());
      {
        std::lock_guard lock(update_mu_);
        ++sequence_;
      }
      update_cv_.notify_all();
    }
  }
}

Alive Service::liveness() const { return liveness_.check(std::chrono::steady_clock::now()); }

void Service::analysis_loop() {
  core::name_this_thread("serve-diagnose");
  using Clock = std::chrono::steady_clock;
  // The first diagnosis once a fifth of the window is in (then every diagnose_every); the store at once.
  auto next_diagnosis = Clock::now() + live_.wall_time(options_.diagnose_window / 5);
  auto next_store = Clock::now();
  while (running_) {
    const auto now = Clock::now();
    if (options_.store && now >= next_store) {
      read_store_now();
      next_store = now + options_.store_every;
    }
    if (now >= next_diagnosis) {
      diagnose_now();
      next_diagnosis = Clock::now() + options_.diagnose_every;
    }
    auto wake = next_diagnosis;
    if (options_.store) wake = std::min(wake, next_store);
    std::unique_lock lock(stop_mu_);
    stop_cv_.wait_until(lock, wake, [this] { return !running_.load(); });
  }
}

void Service::diagnose_now() {
  const std::int64_t now = now_unix_ns();
  const double window = static_cast<double>(options_.diagnose_window.count());
  const auto t0 = std::chrono::steady_clock::now();
  telemetry::Trace trace = history_.window(header_, now, window);
  std::vector<findings::Finding> found = diagnose_window(trace, window);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (trace.first_sample_s) {
    const std::map<int, LabelPairs> holders = holders_now();
    std::lock_guard lock(account_mu_);
    accounting_.add_window(trace, found, holders);
  }
  {
    std::lock_guard lock(mu_);
    findings_ = std::move(found);
    findings_start_unix_ns_ = trace.header.start_unix_ns;
    last_diagnosis_seconds_ = took;
  }
  ++diagnoses_;
}

// The labels of each GPU's holders now: the kubelet's and the mapping files', the processes' ids.
std::map<int, LabelPairs> Service::holders_now() const {
  Snapshot s = latest_.snapshot(now_unix_ns());
  const Attribution holders = attributor_ ? attributor_->current() : Attribution{};
  std::map<int, LabelPairs> out;
  for (auto& g : s.gpus) {
    if (const auto it = holders.find(g.index); it != holders.end()) g.attribution = it->second;
    if (LabelPairs l = holder_labels(g); !l.empty()) out[g.index] = std::move(l);
  }
  return out;
}

void Service::read_store_now() {
  auto v = read_verdicts(*options_.store);
  std::lock_guard lock(mu_);
  if (v) {
    verdicts_ = std::move(*v);
    store_error_.clear();
  } else {
    store_error_ = v.error().message();  // the last verdicts read stay shown
  }
}

Snapshot Service::metrics_snapshot() const {
  Snapshot s = latest_.snapshot(now_unix_ns());
  {
    std::lock_guard lock(mu_);
    s.findings = finding_series(findings_, gpu_indices_);
    s.health = verdicts_.health;
    s.baselines = verdicts_.baselines;
    s.self.last_diagnosis_seconds = last_diagnosis_seconds_;
  }
  {
    std::lock_guard lock(account_mu_);
    s.accounts = accounting_.series();
  }
  if (!options_.prices.empty())
    for (const auto& d : header_.gpus) {
      const cost::GpuPrices p = options_.prices.for_gpu(options_.hostname, d.name);
      s.prices.push_back({.gpu = d.index,
                          .uuid = d.uuid,
                          .name = d.name,
                          .currency = options_.prices.currency.value_or(""),
                          .gpu_hour = p.gpu_hour,
                          .kwh = p.kwh,
                          .pue = p.pue,
                          .co2_g_per_kwh = p.co2_g_per_kwh});
    }
  s.xids = history_.xids();
  if (attributor_) {
    const Attribution holders = attributor_->current();
    for (auto& g : s.gpus)
      if (const auto it = holders.find(g.index); it != holders.end()) g.attribution = it->second;
  }
  const auto stats = sampler_.stats();
  s.self.sampler_running = liveness().ok;  // what /healthz says: running, and its loop ticks
  s.self.dropped_records = stats.dropped_records;
  std::array<double, gpu::kMetricGroupCount> periods{};
  for (std::size_t i = 0; i < periods.size(); ++i)
    periods[i] = std::chrono::duration<double>(options_.sampler.periods[i]).count();
  s.self.group_periods_s = periods;
  for (std::size_t i = 0; i < stats.gpus.size() && i < gpu_indices_.size(); ++i) {
    const auto& g = stats.gpus[i];
    s.self.gpus.push_back({.gpu = gpu_indices_[i],
                           .reads = g.reads,
                           .samples = g.samples,
                           .errors = g.errors,
                           .lost = g.lost,
                           .unresponsive = g.unresponsive});
  }
  s.hostname = options_.hostname;
  s.driver_version = header_.system.driver_version;
  s.version = options_.version;
  s.revision = options_.revision;
  return s;
}

nlohmann::json Service::state_json() const {
  const std::int64_t now = now_unix_ns();
  const Snapshot s = latest_.snapshot(now);  // the values only: findings and verdicts are added below
  nlohmann::json j = {{"schema", 1},
                      {"time_unix_ns", now},
                      {"host", options_.hostname},
                      {"backend", options_.backend},
                      {"sampler_up", liveness().ok}};
  j["gpus"] = nlohmann::json::array();
  for (const auto& g : s.gpus) j["gpus"].push_back(gpu_json(g));
  std::lock_guard lock(mu_);
  j["findings"] = nlohmann::json::array();
  for (const auto& f : findings_) j["findings"].push_back(finding_json(f, gpu_indices_, findings_start_unix_ns_));
  j["diagnosis"] = {{"window_s", options_.diagnose_window.count()},
                    {"every_s", options_.diagnose_every.count()},
                    {"runs", diagnoses_.load()}};
  const nlohmann::json v = to_json(verdicts_);
  j["health"] = v["health"];
  j["baselines"] = v["baselines"];
  j["store_error"] = store_error_.empty() ? nlohmann::json(nullptr) : nlohmann::json(store_error_);
  return j;
}

nlohmann::json Service::history_json(double seconds) const { return history_.to_json(now_unix_ns(), seconds); }

std::uint64_t Service::wait_for_update(std::uint64_t seen, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(update_mu_);
  if (!running_) return 0;
  update_cv_.wait_for(lock, timeout, [&] { return sequence_ != seen || !running_.load(); });
  return running_ ? sequence_ : 0;
}

Handlers Service::handlers(std::function<std::optional<Asset>(std::string_view path)> asset) {
  constexpr auto kDump = [](const nlohmann::json& j) {
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  Handlers h;
  h.metrics = [this] { return metrics_snapshot(); };
  h.state = [this, kDump] { return kDump(state_json()); };
  h.history = [this, kDump](double seconds) { return kDump(history_json(seconds)); };
  h.wait_for_update = [this](std::uint64_t seen, std::chrono::milliseconds timeout) {
    return wait_for_update(seen, timeout);
  };
  h.liveness = [this] { return liveness(); };
  h.asset = std::move(asset);
  return h;
}

}  // namespace gpudoc::serve
