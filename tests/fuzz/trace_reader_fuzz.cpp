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

#include "fuzz_support.hpp"
#include "telemetry/trace.hpp"
#include "telemetry/trace_line.hpp"

namespace {

using namespace gpudoc;  // NOLINT: a test program
using fuzz::check_round_trip;
using fuzz::fail;
using telemetry::Trace;

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
          if (f.value.exact_u64)
            FUZZ_CHECK(it->is_number_unsigned() && it->get<std::uint64_t>() == f.value.u64);
          else
            FUZZ_CHECK(it->get<double>() == f.value.number, std::string(line));
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
  auto t_ok = [&](double x) {
    return std::isfinite(x) && x >= -1 && x <= telemetry::kMaxTraceSeconds && x <= t.duration_s;
  };
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
