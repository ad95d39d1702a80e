// libFuzzer target for the nvidia-smi CSV importer (and, through a round trip, the trace writer
// and reader on what it imports).
//
// For any input, looks_like_nvidia_smi_csv must return and parse_nvidia_smi_csv must return (never
// crash, throw or hang) with kBadInput naming the file on rejection. When it accepts, the result
// must meet the contract of a trace read by parse_trace: columns aligned, sorted per GPU, finite,
// within the documented bounds, GPUs in distinct index order, every string valid UTF-8 (JSON
// output of diagnose and trace info carries them); and writing it with TraceWriter must give a
// file that parse_trace reads back to the same data. A broken invariant aborts, which libFuzzer
// reports with the input.
//
//   cmake --preset fuzz -B build-fuzz && cmake --build build-fuzz --target fuzz_csv_import
//   build-fuzz/tests/fuzz/fuzz_csv_import tests/fuzz/corpus/csv -max_total_time=120
//
// The same entry point runs under gcc in CI (tests/unit/telemetry/csv_fuzz_corpus_test.cpp).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "telemetry/import_nvidia_smi.hpp"
#include "telemetry/trace.hpp"

namespace {

using namespace gpudoc;  // NOLINT: a test program
using telemetry::Trace;

[[noreturn]] void fail(const char* what, const std::string& detail = "") {
  std::fprintf(stderr, "csv_import_fuzz: invariant broken: %s %s\n", what, detail.c_str());
  std::abort();
}

#define FUZZ_CHECK(cond, ...)                            \
  do {                                                   \
    if (!(cond)) fail(#cond __VA_OPT__(, ) __VA_ARGS__); \
  } while (false)

// Strict JSON serialisation throws on invalid UTF-8; the trace reader's strings never hold any.
bool valid_utf8(const std::string& s) {
  try {
    (void)nlohmann::json(s).dump();
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

void check_well_formed(const Trace& t) {
  const auto& h = t.header;
  FUZZ_CHECK(h.version == telemetry::kTraceFormatVersion);
  FUZZ_CHECK(h.system.backend == "nvidia-smi-csv");
  FUZZ_CHECK(h.start_unix_ns >= 0);
  FUZZ_CHECK(!t.gpus.empty() && t.gpus.size() == h.gpus.size() && t.gpus.size() <= telemetry::kMaxGpus);
  FUZZ_CHECK(std::isfinite(t.duration_s) && t.duration_s >= 0 && t.duration_s <= telemetry::kMaxTraceSeconds);
  FUZZ_CHECK(t.events.empty() && !t.end.has_value());
  for (std::size_t g = 0; g < h.gpus.size(); ++g) {
    const auto& d = h.gpus[g];
    FUZZ_CHECK(d.index >= 0 && static_cast<std::size_t>(d.index) < telemetry::kMaxGpus);
    if (g > 0) FUZZ_CHECK(h.gpus[g - 1].index < d.index, "GPU indices must be distinct and ascending");
    FUZZ_CHECK(valid_utf8(d.name) && valid_utf8(d.uuid) && valid_utf8(d.pci_bus_id), d.name + " " + d.uuid + " " + d.pci_bus_id);
    if (d.sm_clock_max_mhz) FUZZ_CHECK(std::isfinite(*d.sm_clock_max_mhz));
  }
  // The header lists exactly the metrics that can have samples, each once.
  std::vector<std::string> listed;
  for (const auto& m : h.metrics) {
    FUZZ_CHECK(std::find(listed.begin(), listed.end(), m.name) == listed.end(), m.name);
    FUZZ_CHECK(m.period_ms >= 0);
    listed.push_back(m.name);
  }
  for (const auto& g : t.gpus) {
    for (gpu::Metric m : gpu::all_metrics()) {
      const auto& s = g.metric(m);
      FUZZ_CHECK(s.t.size() == s.v.size());
      if (!s.empty())
        FUZZ_CHECK(std::find(listed.begin(), listed.end(), std::string(gpu::info(m).name)) != listed.end(),
                   std::string(gpu::info(m).name));
      for (std::size_t i = 0; i < s.t.size(); ++i) {
        FUZZ_CHECK(std::isfinite(s.t[i]) && s.t[i] >= -1 && s.t[i] <= t.duration_s && std::isfinite(s.v[i]));
        if (i > 0) FUZZ_CHECK(s.t[i - 1] <= s.t[i]);
      }
    }
    FUZZ_CHECK(g.processes.empty());
  }
  try {
    (void)h.extra.dump();
  } catch (const std::exception& e) {
    fail("header.extra is not valid UTF-8 JSON", e.what());
  }
}

std::int64_t unix_ns(const Trace& t, double s) { return t.header.start_unix_ns + std::llround(s * 1e9); }

// Writes `t` with TraceWriter into memory and returns the text (indices are distinct, checked
// above, so the writer numbers GPUs by DeviceInfo::index).
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
      auto st = w->write_samples(t.header.gpus[g].index, samples);
      FUZZ_CHECK(st.ok(), st.ok() ? "" : st.error().message());
    }
  }  // the writer's destructor writes the end line ("destroyed")
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
  FUZZ_CHECK(a.header.start_unix_ns == b.header.start_unix_ns && a.header.system.backend == b.header.system.backend);
  FUZZ_CHECK(a.header.extra == b.header.extra, a.header.extra.dump() + " vs " + b.header.extra.dump());
  FUZZ_CHECK(a.header.metrics.size() == b.header.metrics.size());
  for (std::size_t i = 0; i < a.header.metrics.size(); ++i)
    FUZZ_CHECK(a.header.metrics[i].name == b.header.metrics[i].name &&
               a.header.metrics[i].period_ms == b.header.metrics[i].period_ms);
  FUZZ_CHECK(a.header.gpus.size() == b.header.gpus.size());
  for (std::size_t i = 0; i < a.header.gpus.size(); ++i) {
    const auto& x = a.header.gpus[i];
    const auto& y = b.header.gpus[i];
    FUZZ_CHECK(x.index == y.index && x.name == y.name && x.uuid == y.uuid && x.pci_bus_id == y.pci_bus_id &&
               x.memory_total_bytes == y.memory_total_bytes && x.sm_clock_max_mhz == y.sm_clock_max_mhz);
  }
  for (std::size_t g = 0; g < a.gpus.size(); ++g)
    for (std::size_t m = 0; m < gpu::kMetricCount; ++m) {
      const auto& sa = a.gpus[g].metrics[m];
      const auto& sb = b.gpus[g].metrics[m];
      FUZZ_CHECK(sa.size() == sb.size());
      for (std::size_t i = 0; i < sa.size(); ++i) FUZZ_CHECK(near(sa.t[i], sb.t[i]) && sa.v[i] == sb.v[i]);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view content(reinterpret_cast<const char*>(data), size);
  (void)telemetry::looks_like_nvidia_smi_csv(content.substr(0, content.find('\n')));
  auto t = telemetry::parse_nvidia_smi_csv(content, "fuzz.csv");
  if (!t.ok()) {
    FUZZ_CHECK(t.error().kind() == core::ErrorKind::kBadInput, t.error().message());
    FUZZ_CHECK(t.error().message().rfind("fuzz.csv", 0) == 0, t.error().message());
    FUZZ_CHECK(valid_utf8(t.error().message()), t.error().message());   // --json prints it
    return 0;
  }
  check_well_formed(*t);
  check_round_trip(*t);
  return 0;
}
