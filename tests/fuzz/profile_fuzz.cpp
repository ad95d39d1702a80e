// libFuzzer target for `gpudoc profile`'s reading and analysis of a records file (what the injection
// library wrote inside a job that may have crashed, been killed mid-line, or been handed a file that
// is no profile at all): read_records, analyse, and the four outputs — the terminal summary, the
// --json document, the Chrome/Perfetto trace and the --html page — as `gpudoc profile --input` makes
// them.
//
// read_records must return (never crash, throw or hang) with kBadInput naming the file on rejection.
// What it accepts must keep the reader's promises: every vector sorted by start, kernels and copies
// with valid times, the sampling windows in time order and disjoint (the analysis's look-ups rely on
// that). The analysis must then account for each step's time exactly (busy + idle = wall), keep its
// shares in [0, 1] and its predicted graph step no longer than the eager one; the Chrome trace must be
// JSON; the page must carry every name as text (as many <script, <img, ... as the page of an
// empty profile). A broken invariant aborts, which libFuzzer reports
// with the input.
//
//   cmake --preset fuzz -B build-fuzz && cmake --build build-fuzz --target fuzz_profile
//   build-fuzz/tests/fuzz/fuzz_profile tests/fuzz/corpus/profile -max_len=32768 -max_total_time=600
//
// The same entry point runs under gcc in CI (tests/unit/profile/profile_fuzz_corpus_test.cpp).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.hpp"
#include "profile/analysis.hpp"
#include "profile/chrome_trace.hpp"
#include "profile/records.hpp"
#include "view/profile_report.hpp"

namespace {

using namespace gpudoc;  // NOLINT: a test program
using profile::IdleCause;

std::size_t count(std::string_view text, std::string_view what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string_view::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

template <class V>
bool sorted_by_start(const V& v) {
  return std::is_sorted(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
}

void check_set(const profile::RecordSet& s) {
  FUZZ_CHECK(sorted_by_start(s.kernels) && sorted_by_start(s.copies) && sorted_by_start(s.api_calls));
  FUZZ_CHECK(sorted_by_start(s.syncs) && sorted_by_start(s.graph_launches) && sorted_by_start(s.ranges));
  for (const auto& k : s.kernels) FUZZ_CHECK(k.start_ns > 0 && k.end_ns >= k.start_ns, k.name);
  for (const auto& c : s.copies) FUZZ_CHECK(c.start_ns > 0 && c.end_ns >= c.start_ns);
  for (std::size_t i = 0; i < s.windows.size(); ++i) {
    const auto& w = s.windows[i];
    FUZZ_CHECK(w.end_ns >= w.start_ns, "a window closes before it opens");
    if (i + 1 < s.windows.size())
      FUZZ_CHECK(w.end_ns <= s.windows[i + 1].start_ns, "windows out of time order or overlapping");
  }
}

void check_profile(const profile::RecordSet& s, const profile::Profile& p) {
  FUZZ_CHECK(p.kernel_count <= s.kernels.size());
  std::size_t in_histogram = 0;
  for (std::size_t n : p.duration_histogram) in_histogram += n;
  FUZZ_CHECK(in_histogram == p.kernel_count, "every kernel in one bucket of the histogram");
  FUZZ_CHECK(p.top_kernels.size() <= 15);
  std::uint64_t span = 0;
  for (const auto& st : p.steps) {
    FUZZ_CHECK(st.end_ns >= st.start_ns && st.kernels > 0);
    std::uint64_t idle = 0;
    for (auto v : st.idle_ns) idle += v;
    FUZZ_CHECK(st.busy_ns + idle == st.wall_ns(), "a step's busy and idle time make up its wall time");
    span += st.wall_ns();
  }
  FUZZ_CHECK(span == p.span_ns);
  const auto& a = p.advice;
  FUZZ_CHECK(a.launch_share >= 0 && a.launch_share <= 1 && a.static_share >= 0 && a.static_share <= 1);
  FUZZ_CHECK(a.predicted_step_ns <= a.step_ns, "a graph step predicted longer than the eager one");
  FUZZ_CHECK(a.verdict != profile::Verdict::kFixFirst || !a.fix_first.empty(), "fix first, naming nothing");
  for (double b : a.blockers_per_step) FUZZ_CHECK(std::isfinite(b) && b >= 0);
  const auto& sm = p.sampling;
  FUZZ_CHECK(sm.windows == s.windows.size());
  if (!s.windows.empty()) {
    const std::uint64_t reach = std::max(profile::last_end_ns(s), s.windows.back().start_ns);
    FUZZ_CHECK(sm.traced_ns <= reach - s.windows.front().start_ns, "traced longer than the windows span");
  }
  FUZZ_CHECK(std::isfinite(sm.overhead()) && std::isfinite(sm.run_overhead()));
}

void check_outputs(const profile::RecordSet& s, const profile::Profile& p) {
  const std::vector<std::string> command = {"python3", "train.py"};
  (void)view::profile_text(p, command);
  try {
    (void)view::profile_json(p, command).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  } catch (const std::exception& e) {
    fuzz::fail("the profile's JSON does not serialise", e.what());
  }
  std::ostringstream trace;
  FUZZ_CHECK(profile::write_chrome_trace(s, trace));
  const auto doc = nlohmann::json::parse(trace.str(), nullptr, false);
  FUZZ_CHECK(!doc.is_discarded() && doc.contains("traceEvents") && doc["traceEvents"].is_array(),
             "the Chrome trace is not JSON");
  for (const auto& e : doc["traceEvents"])
    if (e.value("ph", "") == "X")
      FUZZ_CHECK(e["ts"].is_number() && e["ts"].get<double>() >= 0 && e["dur"].get<double>() >= 0,
                 "a span before the trace's origin or of negative length");
  const auto page = view::profile_html(p, command);
  if (!page) return;  // built without the plot library: --html says so
  // Tags no name may bring: as many of each as in the page of an empty profile.
  static const std::vector<std::string_view> kTags = {"<script", "</script", "<style",  "</style", "<img",
                                                      "<svg",    "<iframe",  "<object", "<a "};
  static const std::string empty = *view::profile_html(profile::Profile{}, command);
  for (std::string_view tag : kTags)
    FUZZ_CHECK(count(*page, tag) == count(empty, tag), "a name in the records became a tag: " + std::string(tag));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto set = profile::read_records_text(text, "records-fuzz.txt");
  if (!set) {
    FUZZ_CHECK(set.error().kind() == core::ErrorKind::kBadInput, set.error().message());
    FUZZ_CHECK(set.error().message().rfind("records-fuzz.txt", 0) == 0, set.error().message());
    return 0;
  }
  check_set(*set);
  profile::AnalysisOptions o;
  o.max_steps = size % 3 == 0 ? 0 : size % 7;
  const profile::Profile p = profile::analyse(*set, o);
  check_profile(*set, p);
  check_outputs(*set, p);
  return 0;
}
