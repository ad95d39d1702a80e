#include "serve/history.hpp"

#include <algorithm>
#include <cmath>

#include "telemetry/trace_builder.hpp"

namespace gpudoc::serve {
namespace {

// Metrics the dashboard plots (the diagnosis reads the whole trace the window holds).
constexpr std::array<gpu::Metric, 9> kPlotted = {gpu::Metric::kGpuUtilizationPercent,
                                                 gpu::Metric::kGpmSmActivityPercent,
                                                 gpu::Metric::kGpmTensorActivityPercent,
                                                 gpu::Metric::kPowerWatts,
                                                 gpu::Metric::kPowerLimitWatts,
                                                 gpu::Metric::kGpuTemperatureCelsius,
                                                 gpu::Metric::kSmClockMhz,
                                                 gpu::Metric::kMemoryUsedBytes,
                                                 gpu::Metric::kMemoryTemperatureCelsius};

template <typename Deque>
void drop_before(Deque& d, std::int64_t cutoff_ns) {
  while (!d.empty() && d.front().t_ns < cutoff_ns) d.pop_front();
}

}  // namespace

History::History(std::vector<gpu::DeviceInfo> devices, std::chrono::seconds span) : span_(span) {
  for (auto& d : devices) {
    Gpu g;
    g.info = std::move(d);
    gpus_.push_back(std::move(g));
  }
}

std::optional<std::size_t> History::slot_of(int gpu_index) const {
  for (std::size_t i = 0; i < gpus_.size(); ++i)
    if (gpus_[i].info.index == gpu_index) return i;
  return std::nullopt;
}

void History::apply(const telemetry::SamplerRecord& record) {
  using Kind = telemetry::SamplerRecord::Kind;
  std::lock_guard lock(mu_);
  const auto slot = slot_of(record.gpu);
  if (record.kind == Kind::kEvent) {
    if (record.event_kind == "xid" && record.event_fields.contains("code") &&
        record.event_fields["code"].is_number_unsigned()) {
      auto& x = xid_counts_[{record.gpu, static_cast<int>(record.event_fields["code"].get<std::uint64_t>())}];
      ++x.count;
      x.last_unix_ns = std::max(x.last_unix_ns, record.time_unix_ns);
    }
    if (events_.size() >= kMaxEvents) events_.pop_front();
    events_.push_back({record.time_unix_ns, slot, record.event_kind, record.event_fields});
    return;
  }
  if (!slot) return;
  Gpu& g = gpus_[*slot];
  if (record.kind == Kind::kSamples) {
    for (const auto& s : record.samples) {
      auto& series = g.series[gpu::index(s.metric)];
      if (series.size() >= kMaxPointsPerSeries) series.pop_front();
      // Buffered samples (utilization) may arrive after newer ones of other reads: keep time order.
      if (series.empty() || series.back().t_ns <= s.time_unix_ns) {
        series.push_back({s.time_unix_ns, s.value});
      } else {
        auto at = std::upper_bound(series.begin(), series.end(), s.time_unix_ns,
                                   [](std::int64_t t, const Point& p) { return t < p.t_ns; });
        series.insert(at, {s.time_unix_ns, s.value});
      }
    }
    return;
  }
  for (const auto& p : record.processes) {
    if (g.processes.size() >= kMaxProcessPointsPerGpu) g.processes.pop_front();
    g.processes.emplace_back(p.time_unix_ns != 0 ? p.time_unix_ns : record.time_unix_ns, p);
  }
}

void History::prune(std::int64_t now_unix_ns) {
  const std::int64_t cutoff = now_unix_ns - std::chrono::duration_cast<std::chrono::nanoseconds>(span_).count();
  std::lock_guard lock(mu_);
  for (auto& g : gpus_) {
    for (auto& s : g.series) drop_before(s, cutoff);
    while (!g.processes.empty() && g.processes.front().first < cutoff) g.processes.pop_front();
  }
  drop_before(events_, cutoff);
}

telemetry::Trace History::window(const telemetry::TraceHeader& header, std::int64_t now_unix_ns, double seconds) const {
  telemetry::TraceHeader h = header;
  const auto span_ns = static_cast<std::int64_t>(std::min(seconds, static_cast<double>(span_.count())) * 1e9);
  const std::int64_t start = now_unix_ns - span_ns;
  h.start_unix_ns = start;
  const auto inside = [&](std::int64_t ns) { return ns >= start && ns <= now_unix_ns; };
  // The window is built as a recording of it would read back (telemetry::TraceBuilder), so the
  // sliding diagnosis sees what `gpudoc diagnose` of that recording would.
  telemetry::TraceBuilder builder(h);
  std::lock_guard lock(mu_);
  for (const auto& g : gpus_) {
    for (std::size_t m = 0; m < gpu::kMetricCount; ++m)
      for (const auto& p : g.series[m])
        if (inside(p.t_ns)) {
          const gpu::MetricSample s{static_cast<gpu::Metric>(m), p.v, p.t_ns};
          builder.add_samples(g.info.index, {&s, 1});
        }
    for (const auto& [ns, p] : g.processes) {
      if (!inside(ns)) continue;
      gpu::ProcessSample at = p;
      at.time_unix_ns = ns;
      builder.add_processes(g.info.index, {&at, 1});
    }
  }
  for (const auto& e : events_) {
    if (!inside(e.t_ns)) continue;
    std::optional<int> gpu;
    if (e.slot) gpu = gpus_[*e.slot].info.index;
    builder.add_event({static_cast<double>(e.t_ns - start) * 1e-9, e.kind, gpu, e.fields});
  }
  telemetry::Trace t = builder.finish();
  t.duration_s = static_cast<double>(now_unix_ns - start) * 1e-9;  // the whole window, sampled or not
  return t;
}

nlohmann::json History::to_json(std::int64_t now_unix_ns, double seconds) const {
  const double span = std::clamp(seconds, 1.0, static_cast<double>(span_.count()));
  // Whole half-seconds, so that consecutive answers share their grid.
  const double step = std::max(0.5, std::ceil(span / static_cast<double>(kMaxHistoryPoints) * 2) / 2);
  const auto cells = static_cast<std::size_t>(std::ceil(span / step));
  const double now_s = static_cast<double>(now_unix_ns) * 1e-9;
  const double first = (std::floor(now_s / step) - static_cast<double>(cells) + 1) * step;  // the oldest cell's start
  nlohmann::json out = {{"step_s", step}, {"gpus", nlohmann::json::array()}};
  std::lock_guard lock(mu_);
  for (const auto& g : gpus_) {
    nlohmann::json t = nlohmann::json::array();
    for (std::size_t c = 0; c < cells; ++c) t.push_back(first + static_cast<double>(c) * step);
    nlohmann::json series = nlohmann::json::object();
    for (gpu::Metric m : kPlotted) {
      const auto& s = g.series[gpu::index(m)];
      if (s.empty()) continue;
      std::vector<double> sum(cells, 0);
      std::vector<int> n(cells, 0);
      for (const auto& p : s) {
        const double x = (static_cast<double>(p.t_ns) * 1e-9 - first) / step;
        if (x < 0 || x >= static_cast<double>(cells)) continue;
        const auto c = static_cast<std::size_t>(x);
        sum[c] += p.v;
        ++n[c];
      }
      nlohmann::json values = nlohmann::json::array();
      for (std::size_t c = 0; c < cells; ++c)
        values.push_back(n[c] > 0 ? nlohmann::json(sum[c] / n[c]) : nlohmann::json(nullptr));
      series[std::string(gpu::info(m).name)] = std::move(values);
    }
    out["gpus"].push_back({{"gpu", g.info.index}, {"t", std::move(t)}, {"series", std::move(series)}});
  }
  return out;
}

std::vector<XidSeries> History::xids() const {
  std::lock_guard lock(mu_);
  std::vector<XidSeries> out;
  for (const auto& [key, x] : xid_counts_)
    out.push_back({.gpu = key.first, .xid = key.second, .count = x.count, .last_unix_ns = x.last_unix_ns});
  return out;
}

}  // namespace gpudoc::serve
