#include "telemetry/sampler.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/host.hpp"
#include "core/log.hpp"

namespace gpudoc::telemetry {

using core::MonoTime;
using core::Nanos;
using gpu::MetricGroup;

namespace {

SamplerRecord event_record(int gpu, std::int64_t time_unix_ns, std::string kind, nlohmann::json fields) {
  SamplerRecord r;
  r.kind = SamplerRecord::Kind::kEvent;
  r.gpu = gpu;
  r.time_unix_ns = time_unix_ns;
  r.event_kind = std::move(kind);
  r.event_fields = std::move(fields);
  return r;
}

SamplerRecord record_of(const gpu::DeviceEvent& e) {
  return event_record(e.gpu, e.time_unix_ns, e.kind, {{"code", e.code}});
}

}  // namespace

std::array<std::chrono::milliseconds, gpu::kMetricGroupCount> SamplerConfig::default_periods() {
  std::array<std::chrono::milliseconds, gpu::kMetricGroupCount> p{};
  for (MetricGroup g : gpu::all_groups()) p[gpu::index(g)] = gpu::info(g).default_period;
  return p;
}

struct Sampler::GpuState {
  int gpu = 0;
  std::size_t slot = 0;
  std::array<MonoTime, gpu::kMetricGroupCount> next_due{};
  std::atomic<std::int64_t> call_started_ns{0};  // monotonic ns of the call in flight, 0 = none
  std::atomic<int> call_group{-1};
  std::atomic<bool> unresponsive{false};
  std::atomic<bool> abandoned{false};  // stop() gave up waiting for a hung call
  bool lost = false;
  MonoTime lost_retry_at{};
  GpuStats polled;  // the counters as the polling thread keeps them; published to `stats` once a poll
  mutable std::mutex stats_mu;
  GpuStats stats;  // what stats() reports (under stats_mu)
};

Sampler::Sampler(gpu::Backend& backend, core::Clock& clock, SamplerConfig config)
    : backend_(backend), clock_(clock), config_(std::move(config)) {}

Sampler::~Sampler() { stop(); }

core::Status Sampler::resolve_gpus() {
  auto count = backend_.device_count();
  if (!count) return count.error().with_context("counting GPUs");
  if (config_.gpus.empty()) {
    for (int i = 0; i < *count; ++i) gpus_.push_back(i);
  } else {
    for (int g : config_.gpus) {
      if (g < 0 || g >= *count)
        return core::Error(core::ErrorKind::kBadInput, fmt::format("GPU {} does not exist (this machine has {} GPU{})",
                                                                   g, *count, *count == 1 ? "" : "s"));
      gpus_.push_back(g);
    }
  }
  MonoTime now = clock_.now();
  for (std::size_t slot = 0; slot < gpus_.size(); ++slot) {
    auto st = std::make_shared<GpuState>();
    st->gpu = gpus_[slot];
    st->slot = slot;
    st->next_due.fill(now);
    states_.push_back(std::move(st));
  }
  return {};
}

// One poll of a GPU: whatever is due is read, and the counters this poll changed are published
// under the stats lock once, at its end (only this GPU's polling thread writes them; the watchdog
// only sets `unresponsive`, which publishing keeps).
MonoTime Sampler::poll_due(GpuState& g, MonoTime now, const Emit& emit) {
  const MonoTime next = poll_groups(g, now, emit);
  if (!g.abandoned.load()) publish_stats(g);
  return next;
}

MonoTime Sampler::poll_groups(GpuState& g, MonoTime now, const Emit& emit) {
  if (g.lost && !retry_lost(g, now, emit)) return g.lost_retry_at;
  MonoTime next = MonoTime::max();
  for (MetricGroup grp : gpu::all_groups()) {
    const std::size_t i = gpu::index(grp);
    if (config_.periods[i].count() <= 0 || g.polled.group_disabled[i]) continue;
    if (g.next_due[i] <= now) {
      switch (read_group(g, grp, now, emit)) {
        case ReadOutcome::kAbandoned: return MonoTime::max();
        case ReadOutcome::kLost: return g.lost_retry_at;
        case ReadOutcome::kDisabled: continue;
        case ReadOutcome::kRead: break;
      }
    }
    next = std::min(next, g.next_due[i]);
  }
  return next;
}

bool Sampler::retry_lost(GpuState& g, MonoTime now, const Emit& emit) {
  if (now < g.lost_retry_at) return false;
  // A lost GPU is tried again rarely: it may come back after a reset by the operator.
  if (!backend_.device_info(g.gpu)) {
    g.lost_retry_at = now + config_.lost_retry;
    return false;
  }
  g.lost = false;
  g.polled.lost = false;
  emit_event(g, "gpu_recovered", {{"after", "lost"}}, emit);
  g.next_due.fill(now);
  return true;
}

Sampler::ReadOutcome Sampler::read_group(GpuState& g, MetricGroup grp, MonoTime now, const Emit& emit) {
  const std::size_t i = gpu::index(grp);
  g.call_group.store(static_cast<int>(i));
  g.call_started_ns.store(std::max<std::int64_t>(1, clock_.now().time_since_epoch().count()));
  auto r = backend_.read(g.gpu, grp);
  g.call_started_ns.store(0);
  if (g.abandoned.load()) return ReadOutcome::kAbandoned;  // stop() has moved on; drop the late result

  if (g.unresponsive.exchange(false)) emit_event(g, "gpu_recovered", {{"after", "unresponsive"}}, emit);
  Nanos period = config_.periods[i];
  if (r) {
    period = emit_reading(g, grp, std::move(*r), emit);
  } else if (const ReadOutcome failed = on_read_error(g, grp, r.error(), now, emit); failed != ReadOutcome::kRead) {
    return failed;
  }
  schedule_next(g, i, period);
  return ReadOutcome::kRead;
}

Nanos Sampler::emit_reading(GpuState& g, MetricGroup grp, gpu::GroupReading&& r, const Emit& emit) {
  Nanos period = config_.periods[gpu::index(grp)];
  g.polled.reads++;
  g.polled.samples += r.metrics.size();
  if (!r.metrics.empty()) {
    SamplerRecord rec;
    rec.kind = SamplerRecord::Kind::kSamples;
    rec.gpu = g.gpu;
    rec.samples = std::move(r.metrics);
    emit(std::move(rec));
  }
  if (grp != MetricGroup::kProcesses) return period;
  if (config_.contended_processes_period.count() > 0 && config_.contended_processes_period < period) {
    std::vector<std::uint32_t> pids;
    for (const auto& p : r.processes)
      if (std::find(pids.begin(), pids.end(), p.pid) == pids.end()) pids.push_back(p.pid);
    const bool contended = pids.size() >= 2;
    if (contended) period = config_.contended_processes_period;
    g.polled.contended = contended;
  }
  SamplerRecord rec;
  rec.kind = SamplerRecord::Kind::kProcesses;
  rec.gpu = g.gpu;
  rec.time_unix_ns = clock_.unix_now_ns();
  rec.processes = std::move(r.processes);
  emit(std::move(rec));
  return period;
}

Sampler::ReadOutcome Sampler::on_read_error(GpuState& g, MetricGroup grp, const core::Error& e, MonoTime now,
                                            const Emit& emit) {
  if (e.kind() == core::ErrorKind::kGpuLost) {
    g.lost = true;
    g.lost_retry_at = now + config_.lost_retry;
    g.polled.lost = true;
    core::log_warn("GPU {} lost: {}; the other GPUs are still sampled", g.gpu, e.message());
    emit_event(g, "gpu_lost", {{"message", e.message()}}, emit);
    return ReadOutcome::kLost;
  }
  if (e.kind() == core::ErrorKind::kNotSupported) {
    core::log_debug("GPU {}: group {} not supported ({}); not polling it again", g.gpu, gpu::info(grp).name,
                    e.message());
    g.polled.group_disabled[gpu::index(grp)] = true;
    return ReadOutcome::kDisabled;
  }
  const std::uint64_t errors = ++g.polled.errors;
  // Log the first few and then every thousandth, so a flaky sensor cannot flood stderr.
  if (errors <= 3 || errors % 1000 == 0)
    core::log_warn("GPU {}: reading {} failed ({} so far): {}", g.gpu, gpu::info(grp).name, errors, e.message());
  return ReadOutcome::kRead;
}

void Sampler::schedule_next(GpuState& g, std::size_t i, Nanos period) {
  // Fixed cadence: the next slot after now, without bursts to catch up after a stall.
  // (The processes group's period may have just changed: see contended_processes_period.)
  const MonoTime after = clock_.now();
  g.next_due[i] += period;
  if (g.next_due[i] <= after) {
    auto behind = (after - g.next_due[i]) / period + 1;
    g.next_due[i] += period * behind;
  }
}

void Sampler::emit_event(const GpuState& g, std::string kind, nlohmann::json fields, const Emit& emit) {
  emit(event_record(g.gpu, clock_.unix_now_ns(), std::move(kind), std::move(fields)));
}

void Sampler::publish_stats(GpuState& g) {
  std::lock_guard lock(g.stats_mu);
  const bool unresponsive = g.stats.unresponsive;  // the watchdog's
  g.stats = g.polled;
  g.stats.unresponsive = unresponsive;
}

core::Status Sampler::start() {
  if (started_) return core::Error(core::ErrorKind::kInternal, "sampler started twice");
  if (auto s = resolve_gpus(); !s) return s;
  started_ = true;
  running_.store(true);
  for (auto& st : states_) threads_.emplace_back(&Sampler::gpu_thread, this, st.get());
  threads_.emplace_back(&Sampler::watchdog_thread, this);
  if (config_.read_events) threads_.emplace_back(&Sampler::event_thread, this);
  return {};
}

void Sampler::gpu_thread(GpuState* g) {
  core::name_this_thread("gpudoc-gpu" + std::to_string(g->gpu));
  auto emit = [this](SamplerRecord&& r) { push(std::move(r)); };
  while (running_.load()) {
    MonoTime next = poll_due(*g, clock_.now(), emit);
    if (g->abandoned.load()) return;
    std::unique_lock lk(stop_mu_);
    // The wait is measured on the sampler's clock, not taken as a steady_clock time point: a
    // replay's clock (telemetry::ReplayClock) counts trace seconds from its own origin.
    const Nanos ahead = next == MonoTime::max() ? Nanos(std::chrono::seconds(1)) : next - clock_.now();
    stop_cv_.wait_for(lk, std::max(ahead, Nanos(0)), [this] { return !running_.load(); });
  }
  read_buffered_once_more(*g, emit);
}

void Sampler::read_buffered_once_more(GpuState& g, const Emit& emit) {
  // The driver's buffers (utilization samples, per-process samples) hold what it sampled since the
  // last read, up to a period ago: read them once more so the record ends when the sampling does.
  // The energy counter too (read every 30 s): so a recording's energy is the counter's own
  // difference from its start to its end (docs/methodology.md, "Cost accounting").
  // On this GPU's own thread, like every other call to it, so a hung driver stalls nobody (stop()
  // gives up on it after the hang timeout).
  if (g.lost || g.unresponsive.load() || g.abandoned.load()) return;
  const MonoTime now = clock_.now();
  bool any = false;
  for (MetricGroup grp : {MetricGroup::kUtilization, MetricGroup::kProcesses, MetricGroup::kEnergy}) {
    const std::size_t i = gpu::index(grp);
    if (config_.periods[i].count() <= 0 || g.next_due[i] <= now) continue;
    g.next_due[i] = now;
    any = true;
  }
  if (any) (void)poll_due(g, now, emit);
}

void Sampler::watchdog_thread() {
  core::name_this_thread("gpudoc-watchdog");
  // Half the hang timeout: a hung call is reported within 1.5 timeouts, with one wake-up a second.
  const Nanos tick = std::max<Nanos>(std::chrono::milliseconds(10), config_.hang_timeout / 2);
  while (running_.load()) {
    std::int64_t now = clock_.now().time_since_epoch().count();
    for (auto& g : states_) {
      std::int64_t started = g->call_started_ns.load();
      if (started != 0 && now - started > config_.hang_timeout.count() && !g->unresponsive.exchange(true)) {
        int grp = g->call_group.load();
        std::string_view group_name = grp >= 0 ? gpu::info(static_cast<MetricGroup>(grp)).name : "?";
        core::log_warn("GPU {}: a driver call ({}) has not returned for {} ms; the other GPUs are still sampled",
                       g->gpu, group_name, (now - started) / 1'000'000);
        {
          std::lock_guard lock(g->stats_mu);
          g->stats.unresponsive = true;
        }
        push(event_record(g->gpu, clock_.unix_now_ns(), "gpu_unresponsive",
                          {{"group", group_name}, {"waited_ms", (now - started) / 1'000'000}}));
      }
    }
    std::unique_lock lk(stop_mu_);
    stop_cv_.wait_for(lk, tick, [this] { return !running_.load(); });
  }
}

void Sampler::event_thread() {
  core::name_this_thread("gpudoc-events");
  while (running_.load()) {
    // The wait returns early when an event arrives; its timeout only bounds how long stop()
    // waits for this thread. Two wake-ups a second instead of four: each one costs CPU.
    auto events = backend_.wait_events(std::chrono::milliseconds(500));
    if (!events) {
      core::log_debug("device events unavailable: {}", events.error().message());
      std::unique_lock lk(stop_mu_);
      stop_cv_.wait_for(lk, std::chrono::seconds(5), [this] { return !running_.load(); });
      continue;
    }
    for (const auto& e : *events) push(record_of(e));
  }
}

void Sampler::push(SamplerRecord&& r) {
  bool wake;
  {
    std::lock_guard lock(queue_mu_);
    if (queue_.size() >= config_.queue_capacity) {
      queue_.pop_front();
      dropped_++;
    }
    queue_.push_back(std::move(r));
    // The consumer sleeps out its drain interval; wake it early only when the queue is filling up
    // or an event arrives. Every wake-up costs CPU, and the sampler's budget is a few per second.
    wake = queue_.size() == config_.queue_capacity / 2 || queue_.back().kind == SamplerRecord::Kind::kEvent;
  }
  if (wake) queue_cv_.notify_one();
}

std::vector<SamplerRecord> Sampler::drain(Nanos timeout) {
  std::unique_lock lk(queue_mu_);
  queue_cv_.wait_for(lk, timeout, [this] {
    return queue_.size() >= config_.queue_capacity / 2 ||
           (!queue_.empty() && queue_.back().kind == SamplerRecord::Kind::kEvent) || !running_.load();
  });
  std::vector<SamplerRecord> out;
  out.reserve(queue_.size());
  for (auto& r : queue_) out.push_back(std::move(r));
  queue_.clear();
  // Give the deque's blocks back after a burst, so a slow consumer cannot leave memory high.
  if (out.size() > 4096) queue_.shrink_to_fit();
  return out;
}

void Sampler::stop() {
  if (!started_ || !running_.exchange(false)) return;
  { std::lock_guard lk(stop_mu_); }
  stop_cv_.notify_all();
  queue_cv_.notify_all();
  // GPU threads are first in threads_, in the order of states_.
  for (std::size_t i = 0; i < threads_.size(); ++i) {
    if (i < states_.size()) {
      GpuState& g = *states_[i];
      auto deadline = std::chrono::steady_clock::now() + config_.hang_timeout;
      while (g.call_started_ns.load() != 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      if (g.call_started_ns.load() != 0) {
        // Stuck in the driver: it cannot be cancelled. Leave it; its late result is discarded.
        g.abandoned.store(true);
        core::log_warn("GPU {}: leaving a driver call that has not returned", g.gpu);
        threads_[i].detach();
        continue;
      }
    }
    if (threads_[i].joinable()) threads_[i].join();
  }
  threads_.clear();
}

core::Status Sampler::run_until(MonoTime end, const Emit& sink) {
  if (states_.empty()) {
    if (auto s = resolve_gpus(); !s) return s;
  }
  while (true) {
    MonoTime now = clock_.now();
    if (now >= end) break;
    MonoTime next = end;
    for (auto& g : states_) next = std::min(next, poll_due(*g, now, sink));
    if (config_.read_events) {
      auto events = backend_.wait_events(Nanos(0));
      if (events)
        for (const auto& e : *events) sink(record_of(e));
    }
    clock_.sleep_until(std::max(next, clock_.now()));
    if (clock_.now() == now && next <= now) clock_.sleep_until(now + Nanos(1));
  }
  return {};
}

SamplerStats Sampler::stats() const {
  SamplerStats s;
  for (const auto& g : states_) {
    std::lock_guard lock(g->stats_mu);
    s.gpus.push_back(g->stats);
  }
  s.dropped_records = dropped_.load();
  return s;
}

core::Status SamplerConfig::set_periods(const std::vector<std::string>& group_ms) {
  for (const auto& text : group_ms) {
    auto period = gpu::parse_group_period(text);
    if (!period) return core::Error(core::ErrorKind::kUsage, "--period " + period.error().message());
    periods[gpu::index(period->first)] = period->second;
  }
  return core::ok_status();
}

core::Result<SamplerConfig> SamplerConfig::with_periods(
    const std::array<std::chrono::milliseconds, gpu::kMetricGroupCount>& defaults,
    const std::vector<std::string>& group_ms, const std::vector<int>& gpus, bool read_events) {
  SamplerConfig c;
  c.periods = defaults;
  c.gpus = gpus;
  c.read_events = read_events;
  if (auto st = c.set_periods(group_ms); !st) return st.error();
  return c;
}

}  // namespace gpudoc::telemetry
