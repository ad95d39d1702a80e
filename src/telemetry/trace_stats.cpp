// Trace statistics as a TraceVisitor: each series' count, extremes and sum, and the set of its
// gaps, kept in a way that does not depend on the order samples arrive in (see Gaps).
#include "telemetry/trace_stats.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>

namespace gpudoc::telemetry {
namespace {

// The intervals longer than `threshold` between consecutive values of a set of times, kept as
// times arrive in any order: a new time inside a gap splits it (each part stays a gap only if it
// is still longer than the threshold); inside a short interval it changes nothing; beyond either
// end it adds the interval to that end. Memory: one entry per gap.
class Gaps {
 public:
  explicit Gaps(double threshold) : threshold_(threshold) {}

  void add(double t) {
    if (n_++ == 0) {
      min_ = max_ = t;
      return;
    }
    if (t >= max_) {
      add_gap(max_, t);
      max_ = t;
    } else if (t <= min_) {
      add_gap(t, min_);
      min_ = t;
    } else {
      auto it = gaps_.upper_bound(t);  // the first gap starting after t
      if (it == gaps_.begin()) return;
      --it;
      const double a = it->first, b = it->second;
      if (!(a < t && t < b)) return;
      gaps_.erase(it);
      add_gap(a, t);
      add_gap(t, b);
    }
  }
  [[nodiscard]] std::size_t count() const { return gaps_.size(); }
  [[nodiscard]] double longest() const {
    double out = 0;
    for (const auto& [a, b] : gaps_) out = std::max(out, b - a);
    return out;
  }
  [[nodiscard]] std::size_t samples() const { return n_; }
  [[nodiscard]] double first() const { return min_; }
  [[nodiscard]] double last() const { return max_; }

 private:
  void add_gap(double a, double b) {
    if (b - a > threshold_) gaps_.emplace(a, b);
  }
  double threshold_;
  std::size_t n_ = 0;
  double min_ = 0, max_ = 0;
  std::map<double, double> gaps_;  // start -> end
};

struct SeriesStats {
  Gaps gaps;
  double sum = 0, min = INFINITY, max = -INFINITY;
};

class StatsVisitor final : public TraceVisitor {
 public:
  void header(const TraceHeader& h) override {
    out_.header = h;
    for (gpu::Metric m : gpu::all_metrics()) {
      period_s_[gpu::index(m)] = static_cast<double>(gpu::info(gpu::info(m).group).default_period.count()) / 1000.0;
      for (const auto& col : h.metrics)
        if (col.name == gpu::info(m).name && col.period_ms > 0) {
          period_s_[gpu::index(m)] = static_cast<double>(col.period_ms) / 1000.0;
          from_header_[gpu::index(m)] = true;
        }
    }
    series_.resize(h.gpus.size());
    pids_.resize(h.gpus.size());
    out_.gpus.resize(h.gpus.size());
  }
  void sample(std::size_t gpu, gpu::Metric m, double t, double value) override {
    auto& slot = series_[gpu][gpu::index(m)];
    if (!slot) slot.emplace(SeriesStats{Gaps(kGapPeriods * period_s_[gpu::index(m)])});
    slot->gaps.add(t);
    slot->sum += value;
    slot->min = std::min(slot->min, value);
    slot->max = std::max(slot->max, value);
  }
  void process(std::size_t gpu, ProcessPoint&& p) override {
    ++out_.gpus[gpu].process_records;
    pids_[gpu].insert(p.sample.pid);
  }
  void event(Event&& e) override { ++out_.events[e.kind]; }
  void end(const TraceSummary& s) override { out_.end = s; }
  void warning(std::string message) override { out_.warnings.push_back(std::move(message)); }
  void finish(double duration_s) override {
    out_.duration_s = duration_s;
    for (std::size_t g = 0; g < series_.size(); ++g) {
      out_.gpus[g].process_ids = pids_[g].size();
      for (gpu::Metric m : gpu::all_metrics()) {
        const auto& slot = series_[g][gpu::index(m)];
        if (slot) out_.gpus[g].metrics.push_back(stats_of(m, *slot));
      }
    }
  }
  TraceStats take() { return std::move(out_); }

 private:
  MetricStats stats_of(gpu::Metric m, const SeriesStats& s) const {
    MetricStats st;
    st.metric = m;
    st.samples = s.gaps.samples();
    st.period_s = period_s_[gpu::index(m)];
    st.period_from_header = from_header_[gpu::index(m)];
    if (st.samples >= 2) st.mean_interval_s = (s.gaps.last() - s.gaps.first()) / static_cast<double>(st.samples - 1);
    st.gaps = s.gaps.count();
    st.longest_gap_s = s.gaps.longest();
    st.min = s.min;
    st.max = s.max;
    st.mean = s.sum / static_cast<double>(st.samples);
    return st;
  }

  TraceStats out_;
  std::array<double, gpu::kMetricCount> period_s_{};
  std::array<bool, gpu::kMetricCount> from_header_{};
  std::vector<std::array<std::optional<SeriesStats>, gpu::kMetricCount>> series_;
  std::vector<std::set<std::uint32_t>> pids_;
};

}  // namespace

core::Result<TraceStats> trace_stats_of_file(const std::string& path) {
  StatsVisitor v;
  auto format = visit_telemetry_file(path, v);
  if (!format) return format.error();
  TraceStats out = v.take();
  out.format = *format;
  return out;
}

TraceStats trace_stats(const Trace& trace) {
  StatsVisitor v;
  visit_trace(trace, v);
  return v.take();
}

}  // namespace gpudoc::telemetry
