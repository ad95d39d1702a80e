// libFuzzer target for the trace reader (and, through a round trip, the writer).
//
// For any input, parse_trace must return (never crash, throw or hang) with kBadInput naming the
// file on rejection. When it accepts, the result must be well-formed (columns aligned, sorted,
// finite, within the documented bounds), the fast line parser must agree with nlohmann::json on
// every line it accepted, and writing the trace back with TraceWriter must give a file that reads
// back to the same data. A broken invariant aborts, which libFuzzer reports with the input.
//
//   cmake --preset fuzz -B build-trace-fuzz && cmake --build build-trace-fuzz --target fuzz_trace_reader
//   build-trace-fuzz/tests/fuzz/fuzz_trace_reader tests/fuzz/corpus/trace -max_total_time=120
//
// The same entry point runs under gcc in CI (tests/unit/telemetry/trace_fuzz_corpus_test.cpp).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "telemetry/trace.hpp"
#include "telemetry/trace_line.hpp"

namespace {

using namespace gpudoc;  // NOLINT: a test program
using telemetry::Trace;

[[noreturn]] void fail(const char* what, const std::string& detail = "") {
  std::fprintf(stderr, "trace_reader_fuzz: invariant broken: %s %s\n", what, detail.c_str());
  std::abort();
}

#define FUZZ_CHECK(cond, ...)                     \
  do {                                            \
    if (!(cond)) fail(#cond __VA_OPT__(, ) __VA_ARGS__); \
  } while (false)

// The fast path must read every line it accepts exactly as the reference parser does.
void check_flat_lines(std::string_view content) {
  std::vector<telemetry::detail::FlatField> fields;
  std::size_t pos = 0;
  while (pos < content.size()) {
    std::size_t nl = content.find('\n', pos);
    if (nl == std::string_view::npos) nl = content.size();
    std::string_view line = content.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.size() > telemetry::kMaxLineBytes) continue;
    if (telemetry::detail::parse_flat_line(line, fields) != telemetry::detail::FlatParse::kOk) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    FUZZ_CHECK(!j.is_discarded(), std::string(line));
    FUZZ_CHECK(j.is_object() && j.size() == fields.size(), std::string(line));
    for (const auto& f : fields) {
      auto it = j.find(std::string(f.key));
      FUZZ_CHECK(it != j.end(), std::string(line));
      using telemetry::detail::FlatKind;
      switch (f.value.kind) {
        case FlatKind::kNumber:
          FUZZ_CHECK(it->is_number(), std::string(line));
          if (f.value.exact_u64) FUZZ_CHECK(it->is_number_unsigned() && it->get<std::uint64_t>() == f.value.u64);
          else FUZZ_CHECK(it->get<double>() == f.value.number, std::string(line));
          break;
        case FlatKind::kString: FUZZ_CHECK(it->is_string() && it->get<std::string>() == f.value.text); break;
        case FlatKind::kTrue: FUZZ_CHECK(it->is_boolean() && it->get<bool>()); break;
        case FlatKind::kFalse: FUZZ_CHECK(it->is_boolean() && !it->get<bool>()); break;
        case FlatKind::kNull: FUZZ_CHECK(it->is_null()); break;
        case FlatKind::kNested: fail("the fast path returned a nested value"); break;
      }
    }
  }
}

void check_well_formed(const Trace& t) {
  FUZZ_CHECK(t.header.version == telemetry::kTraceFormatVersion);
  FUZZ_CHECK(t.gpus.size() == t.header.gpus.size() && t.gpus.size() <= telemetry::kMaxGpus);
  auto t_ok = [&](double x) { return std::isfinite(x) && x >= -1 && x <= telemetry::kMaxTraceSeconds && x <= t.duration_s; };
  for (const auto& g : t.gpus) {
    for (const auto& s : g.metrics) {
      FUZZ_CHECK(s.t.size() == s.v.size());
      for (std::size_t i = 0; i < s.t.size(); ++i) {
        FUZZ_CHECK(t_ok(s.t[i]) && std::isfinite(s.v[i]));
        if (i > 0) FUZZ_CHECK(s.t[i - 1] <= s.t[i]);
      }
    }
    for (std::size_t i = 0; i < g.processes.size(); ++i) {
      FUZZ_CHECK(t_ok(g.processes[i].t));
      if (i > 0) FUZZ_CHECK(g.processes[i - 1].t <= g.processes[i].t);
    }
  }
  for (const auto& e : t.events) {
    FUZZ_CHECK(t_ok(e.t) && !e.kind.empty() && e.fields.is_object());
    if (e.gpu) FUZZ_CHECK(*e.gpu >= 0 && static_cast<std::size_t>(*e.gpu) < t.gpus.size());
  }
  if (t.end) FUZZ_CHECK(t_ok(t.end->t));
}

std::int64_t unix_ns(const Trace& t, double s) { return t.header.start_unix_ns + std::llround(s * 1e9); }

// The number TraceWriter knows GPU position g by: its DeviceInfo::index when the header's
// indices are distinct, else the position itself (see TraceWriter::write_samples).
int writer_gpu(const Trace& t, std::size_t g) {
  std::vector<int> idx;
  for (const auto& d : t.header.gpus) idx.push_back(d.index);
  std::sort(idx.begin(), idx.end());
  bool distinct = std::adjacent_find(idx.begin(), idx.end()) == idx.end();
  return distinct ? t.header.gpus[g].index : static_cast<int>(g);
}

// Writes `t` with TraceWriter into memory and returns the text.
std::string write_back(const Trace& t) {
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
      FUZZ_CHECK(w->write_samples(writer_gpu(t, g), samples).ok());
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

bool near(double a, double b) { return std::fabs(a - b) <= 1e-6 + 1e-12 * std::fabs(a); }

void check_round_trip(const Trace& a) {
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
    FUZZ_CHECK(x.index == y.index && x.name == y.name && x.uuid == y.uuid && x.memory_total_bytes == y.memory_total_bytes &&
               x.sm_clock_max_mhz == y.sm_clock_max_mhz && x.mig_enabled == y.mig_enabled &&
               x.compute_capability_major == y.compute_capability_major &&
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
      FUZZ_CHECK(near(pa[i].t, pb[i].t) && pa[i].sample.pid == pb[i].sample.pid && pa[i].sample.name == pb[i].sample.name &&
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
  if (a.end) FUZZ_CHECK(a.end->reason == b.end->reason && a.end->dropped_records == b.end->dropped_records);
  else FUZZ_CHECK(b.end->reason == "destroyed");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view content(reinterpret_cast<const char*>(data), size);
  check_flat_lines(content);
  auto t = telemetry::parse_trace(content, "fuzz.jsonl");
  if (!t.ok()) {
    FUZZ_CHECK(t.error().kind() == core::ErrorKind::kBadInput, t.error().message());
    FUZZ_CHECK(t.error().message().rfind("fuzz.jsonl", 0) == 0, t.error().message());
    return 0;
  }
  check_well_formed(*t);
  check_round_trip(*t);
  return 0;
}
