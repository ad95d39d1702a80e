// gpudoc::serve::History — the last minutes of every GPU's waveforms, processes and events, fed by
// the sampler's records. `gpudoc serve` reads it twice: as a telemetry::Trace of the last window for
// the sliding diagnosis (the same diagnose() a recorded trace gets), and as JSON for the dashboard's
// plots (/api/v1/history).
//
//   serve::History history(devices, std::chrono::minutes(10));
//   for (auto& rec : sampler.drain(250ms)) history.apply(rec);      // the sampling thread
//   history.prune(clock.unix_now_ns());                              // now and then
//   telemetry::Trace t = history.window(header, now_ns, 120.0);     // any thread
//   nlohmann::json j = history.to_json(now_ns, 300.0);               // any thread
//
// Memory is bounded whatever the sampler does: points older than `span` are pruned, and each series
// keeps at most kMaxPointsPerSeries (a GPU sampled far faster than the catalog's periods loses its
// oldest points first). XID events are also counted since the start (for gpudoc_xid_errors_total).
//
// Thread-safety: every member may be called from any thread (one mutex; window() and to_json()
// copy what they need under it).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu/backend.hpp"
#include "serve/exposition.hpp"
#include "telemetry/sampler.hpp"
#include "telemetry/trace.hpp"

namespace gpudoc::serve {

inline constexpr std::size_t kMaxPointsPerSeries = 20000;
inline constexpr std::size_t kMaxProcessPointsPerGpu = 20000;
inline constexpr std::size_t kMaxEvents = 10000;
// /api/v1/history answers on a grid of at most this many points a GPU (means of the samples in each
// cell), whatever the span asked for.
inline constexpr std::size_t kMaxHistoryPoints = 900;

class History {
 public:
  History(std::vector<gpu::DeviceInfo> devices, std::chrono::seconds span);

  // Keeps a record's samples, processes or event (an event of a GPU not in the list is kept without
  // its GPU; samples of such a GPU are ignored).
  void apply(const telemetry::SamplerRecord& record);
  // Drops what is older than `span` before `now_unix_ns`.
  void prune(std::int64_t now_unix_ns);

  // The last `seconds` before `now_unix_ns` as a trace: `header` with start_unix_ns moved to the
  // window's start, series and process points in time order, the events of the window; built by
  // telemetry::TraceBuilder (what a recording of the window reads back as), duration_s the window's.
  [[nodiscard]] telemetry::Trace window(const telemetry::TraceHeader& header, std::int64_t now_unix_ns,
                                        double seconds) const;
  // {"step_s": S, "gpus": [{"gpu": index, "t": [unix s...], "series": {"power_watts": [v|null...]}}]}
  // over the last `seconds` (clamped to the span), on a grid of at most kMaxHistoryPoints cells.
  [[nodiscard]] nlohmann::json to_json(std::int64_t now_unix_ns, double seconds) const;
  // XID errors counted per (GPU index, XID) since the start.
  [[nodiscard]] std::vector<XidSeries> xids() const;

 private:
  struct Point {
    std::int64_t t_ns;
    double v;
  };
  struct Gpu {
    gpu::DeviceInfo info;
    std::array<std::deque<Point>, gpu::kMetricCount> series;
    std::deque<std::pair<std::int64_t, gpu::ProcessSample>> processes;
  };
  struct StoredEvent {
    std::int64_t t_ns;
    std::optional<int> slot;  // position in gpus_
    std::string kind;
    nlohmann::json fields;
  };
  [[nodiscard]] std::optional<std::size_t> slot_of(int gpu_index) const;

  mutable std::mutex mu_;
  std::vector<Gpu> gpus_;
  std::chrono::seconds span_;
  std::deque<StoredEvent> events_;
  struct XidCount {
    std::uint64_t count = 0;
    std::int64_t last_unix_ns = 0;
  };
  std::map<std::pair<int, int>, XidCount> xid_counts_;
};

}  // namespace gpudoc::serve
