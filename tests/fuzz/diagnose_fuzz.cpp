// libFuzzer target for the diagnosis: any input that the trace reader or the nvidia-smi CSV
// importer accepts is diagnosed, as `gpudoc diagnose` does (only the metrics the diagnosis
// reads, the one-recording check), with a window chosen by the input's size among the default
// 60 s, the shortest the CLI allows (2 s), an odd 7.5 s and one window for the whole span.
//
// diagnose() must return (never crash, throw or hang) on every accepted input, including those
// check_diagnosable rejects (the library is bounded on its own), with memory that follows the
// samples, not the time they span: run it under a memory limit, where a 0.1 s grid over a
// 10^8 s span (the bug this target was written for) is an out-of-memory report.
//
//   cmake --preset fuzz -B build-fuzz && cmake --build build-fuzz --target fuzz_diagnose
//   build-fuzz/tests/fuzz/fuzz_diagnose tests/fuzz/corpus/diagnose -max_len=24576 -rss_limit_mb=512
//       -malloc_limit_mb=256 -max_total_time=1200   (one command line)
//
// The result must be well-formed: every finding from the catalog with a severity, a finite
// confidence in [0, 1] and a finite window; GPU summaries for the trace's GPUs; the JSON document
// serialisable (valid UTF-8). A broken invariant aborts, which libFuzzer reports with the input.
// The same entry point runs under gcc in CI (tests/unit/diagnose/diagnose_fuzz_corpus_test.cpp).
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "diagnose/diagnose.hpp"
#include "findings/finding.hpp"
#include "telemetry/import_nvidia_smi.hpp"
#include "telemetry/input.hpp"

namespace {

using namespace gpudoc;  // NOLINT: a test program

[[noreturn]] void fail(const char* what, const std::string& detail = "") {
  std::fprintf(stderr, "fuzz: invariant broken: %s %s\n", what, detail.c_str());
  std::abort();
}

#define DIAGNOSE_CHECK(cond, ...)                        \
  do {                                                   \
    if (!(cond)) fail(#cond __VA_OPT__(, ) __VA_ARGS__); \
  } while (false)

core::Result<telemetry::Trace> read(std::string_view content) {
  if (telemetry::detect_format(content) == telemetry::InputFormat::kNvidiaSmiCsv)
    return telemetry::parse_nvidia_smi_csv(content, "fuzz.csv");
  return telemetry::parse_trace(content, "fuzz.jsonl", diagnose::read_options());
}

void check(const telemetry::Trace& t, const diagnose::Diagnosis& d) {
  DIAGNOSE_CHECK(!d.findings.empty(), "a diagnosis always says something");
  for (const auto& f : d.findings) {
    DIAGNOSE_CHECK(findings::find_entry(f.id) != nullptr, f.id);
    DIAGNOSE_CHECK(std::isfinite(f.confidence) && f.confidence >= 0 && f.confidence <= 1, f.id);
    DIAGNOSE_CHECK(std::isfinite(f.window.start_s) && std::isfinite(f.window.end_s), f.id);
    for (int g : f.gpus) DIAGNOSE_CHECK(g >= 0 && static_cast<std::size_t>(g) < t.gpus.size(), f.id);
  }
  DIAGNOSE_CHECK(d.gpus.empty() || d.gpus.size() == t.gpus.size());
  for (const auto& c : d.changes) DIAGNOSE_CHECK(std::isfinite(c.t_s) && c.from != c.to, c.from + " " + c.to);
  try {
    (void)diagnose::to_json(d).dump();
  } catch (const std::exception& e) {
    fail("the diagnosis' JSON does not serialise", e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view content(reinterpret_cast<const char*>(data), size);
  auto t = read(content);
  if (!t.ok()) {
    DIAGNOSE_CHECK(t.error().kind() == core::ErrorKind::kBadInput, t.error().message());
    return 0;
  }
  const auto ok = diagnose::check_diagnosable(*t, "fuzz");
  if (!ok) DIAGNOSE_CHECK(ok.error().kind() == core::ErrorKind::kBadInput, ok.error().message());
  constexpr double kWindows[] = {60, 2, 7.5, 0};
  diagnose::Options o;
  o.window_s = kWindows[size % 4];
  const diagnose::Diagnosis d = diagnose::diagnose(*t, o);
  check(*t, d);
  return 0;
}
