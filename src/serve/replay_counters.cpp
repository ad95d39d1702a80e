// A recorded trace's fleet counters, scrape by scrape, as serve would have exported them
// (replay_counters.hpp): serve's History, sliding diagnosis, Accounting and exposition, fed offline.
#include "serve/replay_counters.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <string_view>
#include <utility>

#include "serve/accounting.hpp"
#include "serve/history.hpp"
#include "serve/service.hpp"

namespace gpudoc::serve {
namespace {

// The events serve's sampler reports (the only ones its History holds).
constexpr std::array<std::string_view, 4> kSamplerEvents = {"xid", "gpu_lost", "gpu_unresponsive", "gpu_recovered"};

std::int64_t at_ns(std::int64_t origin_ns, double t) { return origin_ns + std::llround(t * 1e9); }

// Indices of `items` in the time order of `time_of` (the reader keeps file order, nearly time order).
template <typename T, typename F>
std::vector<std::size_t> time_order(const std::vector<T>& items, F time_of) {
  std::vector<std::size_t> order(items.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return time_of(items[a]) < time_of(items[b]); });
  return order;
}

// Hands a trace's records to a History slice by slice, as serve's sampling loop hands it the
// sampler's: samples per GPU, processes, the sampler's events; each record once.
class Feeder {
 public:
  Feeder(const telemetry::Trace& trace, std::int64_t origin_ns) : trace_(trace), origin_(origin_ns) {
    const std::size_t n = std::min(trace.gpus.size(), trace.header.gpus.size());
    next_sample_.resize(n);
    next_process_.assign(n, 0);
    for (std::size_t pos = 0; pos < n; ++pos)
      process_order_.push_back(
          time_order(trace.gpus[pos].processes, [](const telemetry::ProcessPoint& p) { return p.t; }));
    event_order_ = time_order(trace.events, [](const telemetry::Event& e) { return e.t; });
  }

  // Everything at or before `until_ns` not handed yet.
  void feed(History& history, std::int64_t until_ns) {
    using Kind = telemetry::SamplerRecord::Kind;
    for (std::size_t pos = 0; pos < next_sample_.size(); ++pos) {
      const telemetry::GpuTrace& g = trace_.gpus[pos];
      const int index = trace_.header.gpus[pos].index;
      telemetry::SamplerRecord samples;
      samples.gpu = index;
      for (std::size_t m = 0; m < gpu::kMetricCount; ++m) {
        const telemetry::Series& s = g.metrics[m];
        for (std::size_t& i = next_sample_[pos][m]; i < s.size() && at_ns(origin_, s.t[i]) <= until_ns; ++i)
          samples.samples.push_back({static_cast<gpu::Metric>(m), s.v[i], at_ns(origin_, s.t[i])});
      }
      if (!samples.samples.empty()) history.apply(samples);
      telemetry::SamplerRecord procs;
      procs.kind = Kind::kProcesses;
      procs.gpu = index;
      procs.time_unix_ns = until_ns;
      const std::vector<std::size_t>& order = process_order_[pos];
      for (std::size_t& i = next_process_[pos]; i < order.size(); ++i) {
        const telemetry::ProcessPoint& p = g.processes[order[i]];
        const std::int64_t ns = at_ns(origin_, p.t);
        if (ns > until_ns) break;
        procs.processes.push_back(p.sample);
        procs.processes.back().time_unix_ns = ns;
      }
      if (!procs.processes.empty()) history.apply(procs);
    }
    for (; next_event_ < event_order_.size(); ++next_event_) {
      const telemetry::Event& e = trace_.events[event_order_[next_event_]];
      const std::int64_t ns = at_ns(origin_, e.t);
      if (ns > until_ns) break;
      if (std::find(kSamplerEvents.begin(), kSamplerEvents.end(), e.kind) == kSamplerEvents.end()) continue;
      const bool known = e.gpu && *e.gpu >= 0 && static_cast<std::size_t>(*e.gpu) < trace_.header.gpus.size();
      telemetry::SamplerRecord event;
      event.kind = Kind::kEvent;
      event.gpu = known ? trace_.header.gpus[static_cast<std::size_t>(*e.gpu)].index : -1;
      event.time_unix_ns = ns;
      event.event_kind = e.kind;
      event.event_fields = e.fields;
      history.apply(event);
    }
  }

 private:
  const telemetry::Trace& trace_;
  std::int64_t origin_;
  std::vector<std::array<std::size_t, gpu::kMetricCount>> next_sample_;
  std::vector<std::vector<std::size_t>> process_order_;
  std::vector<std::size_t> next_process_;
  std::vector<std::size_t> event_order_;
  std::size_t next_event_ = 0;
};

// The trace's newest sample or process point (seconds since its start), if any.
std::optional<double> last_time(const telemetry::Trace& trace) {
  std::optional<double> last;
  const auto see = [&](double t) { last = last ? std::max(*last, t) : t; };
  for (const auto& g : trace.gpus) {
    for (const auto& s : g.metrics)
      if (!s.empty()) see(s.t.back());
    for (const auto& p : g.processes) see(p.t);
  }
  return last;
}

core::Status check_options(const CounterReplayOptions& o) {
  auto whole_in = [](double v, double lo, double hi) { return v == std::floor(v) && v >= lo && v <= hi; };
  if (!whole_in(o.window_s, 2, 3600))
    return core::Error(core::ErrorKind::kUsage,
                       fmt::format("window {} s: expected whole seconds from 2 to 3600 (as serve's)", o.window_s));
  if (!whole_in(o.every_s, 1, 3600))
    return core::Error(core::ErrorKind::kUsage,
                       fmt::format("every {} s: expected whole seconds from 1 to 3600 (as serve's)", o.every_s));
  return core::ok_status();
}

// `name{labels}` with the instance label added as a scrape adds it.
std::string with_instance(std::string_view series, const std::string& instance_label) {
  if (instance_label.empty()) return std::string(series);
  if (!series.empty() && series.back() == '}')
    return fmt::format("{},{}}}", series.substr(0, series.size() - 1), instance_label);
  return fmt::format("{}{{{}}}", series, instance_label);
}

}  // namespace

core::Result<std::vector<CounterScrape>> replay_counter_scrapes(const telemetry::Trace& trace,
                                                                const CounterReplayOptions& options) {
  if (auto st = check_options(options); !st) return st.error();
  if (trace.header.gpus.empty() || trace.gpus.empty())
    return core::Error(core::ErrorKind::kBadInput, "the trace has no GPUs");
  const std::optional<double> last = last_time(trace);
  if (!last) return core::Error(core::ErrorKind::kBadInput, "the trace has no samples");
  const std::int64_t origin =
      options.start_unix_s ? std::llround(*options.start_unix_s * 1e9) : trace.header.start_unix_ns;
  // Serve's durations are whole seconds, and its first diagnosis comes after a fifth of the window
  // (std::chrono::seconds divided: whole seconds too).
  const std::chrono::seconds window(static_cast<long>(options.window_s));
  const std::chrono::seconds every(static_cast<long>(options.every_s));
  const auto ns = [](std::chrono::seconds s) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(s).count();
  };
  // The scrapes to come: up to the last sample, and about a window more (the last diagnoses).
  const double scrapes = (*last - static_cast<double>(window.count()) / 5 + options.window_s) / options.every_s + 3;
  if (scrapes * static_cast<double>(trace.header.gpus.size()) > kMaxScrapeGpus)
    return core::Error(core::ErrorKind::kBadInput,
                       fmt::format("the trace spans {:.1f} s: every {:.0f} s that is {:.0f} scrapes of {} GPU(s), more "
                                   "than the {:.0f} scrapes x GPUs one export holds (a larger --every, or a part of "
                                   "the trace)",
                                   *last, options.every_s, scrapes, trace.header.gpus.size(), kMaxScrapeGpus));
  History history(trace.header.gpus, window);
  Feeder feeder(trace, origin);
  Accounting accounting;
  const std::int64_t last_ns = at_ns(origin, *last);
  std::vector<CounterScrape> out;
  std::string previous;
  for (std::int64_t now = origin + ns(window / 5);; now += ns(every)) {
    feeder.feed(history, now);
    history.prune(now);
    const telemetry::Trace w = history.window(trace.header, now, options.window_s);
    const std::vector<findings::Finding> found = diagnose_window(w, options.window_s);
    if (w.first_sample_s) accounting.add_window(w, found, {});
    CounterScrape scrape{.time_unix_s = static_cast<double>(now) / 1e9, .series = accounting.series()};
    std::string text = render_account_families(scrape.series, Format::kOpenMetrics);
    out.push_back(std::move(scrape));
    if (now > last_ns && text == previous) break;  // standing still, every series shown
    previous = std::move(text);
  }
  return out;
}

std::string counters_openmetrics(const std::vector<CounterScrape>& scrapes, const std::string& instance) {
  const std::string instance_label =
      instance.empty() ? std::string() : fmt::format("instance=\"{}\"", escape_label_value(instance));
  struct Family {
    std::string meta;                 // its HELP, TYPE and UNIT lines
    std::vector<std::string> series;  // in the order first seen
  };
  std::vector<Family> families;
  std::map<std::string, std::size_t> family_at;
  std::map<std::string, std::vector<std::pair<double, std::string>>> points;  // series -> (time, value as rendered)
  for (const CounterScrape& scrape : scrapes) {
    const std::string text = render_account_families(scrape.series, Format::kOpenMetrics);
    std::size_t current = 0;
    bool new_family = false;
    for (std::size_t at = 0; at < text.size();) {
      const std::size_t eol = std::min(text.find('\n', at), text.size());
      const std::string_view line(text.data() + at, eol - at);
      at = eol + 1;
      if (line.empty() || line == "# EOF") continue;
      if (line.rfind("# ", 0) == 0) {
        if (line.rfind("# HELP ", 0) == 0) {
          const std::string name(line.substr(7, line.find(' ', 7) - 7));
          const auto [it, added] = family_at.emplace(name, families.size());
          if (added) families.emplace_back();
          current = it->second;
          new_family = added;
        }
        if (new_family) families[current].meta.append(line).push_back('\n');
        continue;
      }
      // name{labels} value: label values are escaped (no newline), the value has no space.
      const std::size_t space = line.rfind(' ');
      std::string series = with_instance(line.substr(0, space), instance_label);
      auto& p = points[series];
      if (p.empty()) families[current].series.push_back(series);
      p.emplace_back(scrape.time_unix_s, std::string(line.substr(space + 1)));
    }
  }
  std::string out;
  for (const Family& f : families) {
    out += f.meta;
    for (const std::string& series : f.series)
      for (const auto& [t, value] : points[series])
        fmt::format_to(std::back_inserter(out), "{} {} {:.3f}\n", series, value, t);
  }
  out += "# EOF\n";
  return out;
}

core::Result<std::string> replay_counters(const telemetry::Trace& trace, const CounterReplayOptions& options) {
  auto scrapes = replay_counter_scrapes(trace, options);
  if (!scrapes) return scrapes.error();
  return counters_openmetrics(*scrapes, options.instance);
}

}  // namespace gpudoc::serve
