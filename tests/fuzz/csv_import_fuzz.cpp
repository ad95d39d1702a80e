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

#include "fuzz_support.hpp"
#include "telemetry/import_nvidia_smi.hpp"
#include "telemetry/trace.hpp"

namespace {

using namespace gpudoc;  // NOLINT: a test program
using fuzz::check_round_trip;
using fuzz::fail;
using telemetry::Trace;

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
    FUZZ_CHECK(valid_utf8(d.name) && valid_utf8(d.uuid) && valid_utf8(d.pci_bus_id),
               d.name + " " + d.uuid + " " + d.pci_bus_id);
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view content(reinterpret_cast<const char*>(data), size);
  (void)telemetry::looks_like_nvidia_smi_csv(content.substr(0, content.find('\n')));
  auto t = telemetry::parse_nvidia_smi_csv(content, "fuzz.csv");
  if (!t.ok()) {
    FUZZ_CHECK(t.error().kind() == core::ErrorKind::kBadInput, t.error().message());
    FUZZ_CHECK(t.error().message().rfind("fuzz.csv", 0) == 0, t.error().message());
    FUZZ_CHECK(valid_utf8(t.error().message()), t.error().message());  // --json prints it
    return 0;
  }
  check_well_formed(*t);
  check_round_trip(*t);
  return 0;
}
