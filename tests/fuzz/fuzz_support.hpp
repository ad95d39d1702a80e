// What the libFuzzer targets share: the invariant check that aborts with its reason (libFuzzer
// then reports the input), and the round trip of an accepted trace through TraceWriter and
// parse_trace, which must read back the same header, samples, processes, events and end line.
// Header-only: each target is compiled whole into its own fuzzer and its own gcc corpus test.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "telemetry/trace.hpp"

namespace gpudoc::fuzz {

using telemetry::Trace;

[[noreturn]] inline void fail(const char* what, const std::string& detail = "") {
  std::fprintf(stderr, "fuzz: invariant broken: %s %s\n", what, detail.c_str());
  std::abort();
}

#define FUZZ_CHECK(cond, ...)                                            \
  do {                                                                   \
    if (!(cond)) ::gpudoc::fuzz::fail(#cond __VA_OPT__(, ) __VA_ARGS__); \
  } while (false)

inline std::int64_t unix_ns(const Trace& t, double s) { return t.header.start_unix_ns + std::llround(s * 1e9); }

// The number TraceWriter knows GPU position g by: its DeviceInfo::index when the header's
// indices are distinct, else the position itself (see TraceWriter::write_samples).
inline int writer_gpu(const Trace& t, std::size_t g) {
  std::vector<int> idx;
  for (const auto& d : t.header.gpus) idx.push_back(d.index);
  std::sort(idx.begin(), idx.end());
  bool distinct = std::adjacent_find(idx.begin(), idx.end()) == idx.end();
  return distinct ? t.header.gpus[g].index : static_cast<int>(g);
}

// Writes `t` with TraceWriter into memory and returns the text.
inline std::string write_back(const Trace& t) {
  char* buf = nullptr;
  std::size_t len = 0;
  std::FILE* f = open_memstream(&buf, &len);
  FUZZ_CHECK(f != nullptr);
  {
    auto w = telemetry::TraceWriter::wrap(f, t.header);
    FUZZ_CHECK(w.ok(), w.ok() ? "" : w.error().message());
    for (std::size_t g = 0; g < t.gpus.size(); ++g) {
      std::vector<gpu::MetricSample> samples;
      for (gpu::Metric m : gpu::all_metrics()) {
        const auto& s = t.gpus[g].metric(m);
        for (std::size_t i = 0; i < s.size(); ++i) samples.push_back({m, s.v[i], unix_ns(t, s.t[i])});
      }
      auto st = w->write_samples(writer_gpu(t, g), samples);
      FUZZ_CHECK(st.ok(), st.ok() ? "" : st.error().message());
      std::vector<gpu::ProcessSample> procs;
      for (const auto& p : t.gpus[g].processes) {
        procs.push_back(p.sample);
        procs.back().time_unix_ns = unix_ns(t, p.t);
      }
      FUZZ_CHECK(w->write_processes(writer_gpu(t, g), procs).ok());
    }
    for (telemetry::Event e : t.events) {
      if (e.gpu) e.gpu = writer_gpu(t, static_cast<std::size_t>(*e.gpu));
      auto st = w->write_event(e);
      FUZZ_CHECK(st.ok(), st.ok() ? "" : st.error().message());
    }
    if (t.end) FUZZ_CHECK(w->close(*t.end).ok());
  }  // without an end line, the writer's destructor writes one ("destroyed")
  std::fclose(f);
  std::string out(buf, len);
  std::free(buf);
  return out;
}

inline bool near(double a, double b) { return std::fabs(a - b) <= 1e-6 + 1e-12 * std::fabs(a); }

inline void check_round_trip(const Trace& a) {
  std::string text = write_back(a);
  auto r = telemetry::parse_trace(text, "roundtrip.jsonl");
  FUZZ_CHECK(r.ok(), r.ok() ? "" : r.error().message() + "\n" + text);
  const Trace& b = *r;
  const auto& ha = a.header;
  const auto& hb = b.header;
  FUZZ_CHECK(ha.start_unix_ns == hb.start_unix_ns && ha.host == hb.host && ha.command == hb.command);
  FUZZ_CHECK(ha.gpudoc_version.empty() || ha.gpudoc_version == hb.gpudoc_version);
  FUZZ_CHECK(ha.system.driver_version == hb.system.driver_version && ha.system.backend == hb.system.backend);
  FUZZ_CHECK(ha.extra == hb.extra, ha.extra.dump() + " vs " + hb.extra.dump());
  FUZZ_CHECK(ha.metrics.size() == hb.metrics.size());
  for (std::size_t i = 0; i < ha.metrics.size(); ++i)
    FUZZ_CHECK(ha.metrics[i].name == hb.metrics[i].name && ha.metrics[i].period_ms == hb.metrics[i].period_ms);
  FUZZ_CHECK(ha.gpus.size() == hb.gpus.size());
  for (std::size_t i = 0; i < ha.gpus.size(); ++i) {
    const auto& x = ha.gpus[i];
    const auto& y = hb.gpus[i];
    FUZZ_CHECK(x.index == y.index && x.name == y.name && x.uuid == y.uuid && x.pci_bus_id == y.pci_bus_id &&
               x.memory_total_bytes == y.memory_total_bytes && x.sm_clock_max_mhz == y.sm_clock_max_mhz &&
               x.mig_enabled == y.mig_enabled && x.compute_capability_major == y.compute_capability_major &&
               x.mig_instances.size() == y.mig_instances.size());
  }
  for (std::size_t g = 0; g < a.gpus.size(); ++g) {
    for (std::size_t m = 0; m < gpu::kMetricCount; ++m) {
      const auto& sa = a.gpus[g].metrics[m];
      const auto& sb = b.gpus[g].metrics[m];
      FUZZ_CHECK(sa.size() == sb.size());
      for (std::size_t i = 0; i < sa.size(); ++i) FUZZ_CHECK(near(sa.t[i], sb.t[i]) && sa.v[i] == sb.v[i]);
    }
    const auto& pa = a.gpus[g].processes;
    const auto& pb = b.gpus[g].processes;
    FUZZ_CHECK(pa.size() == pb.size());
    for (std::size_t i = 0; i < pa.size(); ++i) {
      FUZZ_CHECK(near(pa[i].t, pb[i].t) && pa[i].sample.pid == pb[i].sample.pid &&
                 pa[i].sample.name == pb[i].sample.name &&
                 pa[i].sample.memory_used_bytes == pb[i].sample.memory_used_bytes &&
                 pa[i].sample.sm_utilization_percent == pb[i].sample.sm_utilization_percent);
    }
  }
  FUZZ_CHECK(a.events.size() == b.events.size());
  for (std::size_t i = 0; i < a.events.size(); ++i) {
    const auto& x = a.events[i];
    const auto& y = b.events[i];
    FUZZ_CHECK(near(x.t, y.t) && x.kind == y.kind && x.gpu == y.gpu);
    FUZZ_CHECK(x.fields == y.fields, x.fields.dump() + " vs " + y.fields.dump());
  }
  FUZZ_CHECK(b.end.has_value());
  if (a.end)
    FUZZ_CHECK(a.end->reason == b.end->reason && a.end->dropped_records == b.end->dropped_records);
  else
    FUZZ_CHECK(b.end->reason == "destroyed");
}

}  // namespace gpudoc::fuzz
