#include "baseline/metrics_protocol.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>

#include "core/utf8.hpp"

namespace gpudoc::baseline {

namespace {
// Not figures: the progress counters, and "rank" (which process of a distributed job printed the
// line: python/gpudoc adds it, so that ranks can be told apart in one output).
bool is_progress_key(std::string_view k) { return k == "step" || k == "n" || k == "t" || k == "epoch" || k == "rank"; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

std::string excerpt(std::string_view s) {
  constexpr std::size_t kMax = 60;
  if (s.size() <= kMax) return std::string(s);
  std::size_t cut = kMax;  // not inside a multi-byte character: the note stays valid UTF-8
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return std::string(s.substr(0, cut)) + "…";
}
}  // namespace

void MetricsCollector::note(std::string_view source, std::size_t line, std::string message) {
  if (notes_.size() >= kMaxNotes) {
    ++notes_dropped_;
    return;
  }
  notes_.push_back({std::string(source), line, std::move(message)});
}

void MetricsCollector::add_stdout_line(std::string_view line, std::size_t line_number) {
  if (line.substr(0, kMetricsPrefix.size()) != kMetricsPrefix) return;
  add_json(line.substr(kMetricsPrefix.size()), line_number, "stdout");
}

void MetricsCollector::add_oversized_stdout_line(std::string_view head, std::size_t line_number, std::size_t bytes) {
  if (head.substr(0, kMetricsPrefix.size()) != kMetricsPrefix) return;
  ++malformed_lines_;
  note("stdout", line_number,
       fmt::format(
           "a ::gpudoc line of {} bytes, over the {} MiB limit for one line: ignored (print fewer figures per line)",
           bytes, kMaxMetricsLineBytes >> 20));
}

void MetricsCollector::add_file_line(std::string_view line, std::size_t line_number, std::string_view source) {
  line = trim(line);
  if (line.empty()) return;
  // A workload may write the same prefixed lines to the file as to stdout.
  if (line.substr(0, kMetricsPrefix.size()) == kMetricsPrefix) line.remove_prefix(kMetricsPrefix.size());
  add_json(line, line_number, source);
}

void MetricsCollector::add_file_text(std::string_view text, std::string_view source) {
  std::size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const auto nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    // A last line without its newline may be half-written by a workload that was killed: still tried.
    add_file_line(line, line_number, source);
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

void MetricsCollector::add_doubtful_note_once(const std::string& key, std::size_t line_number, std::string_view source,
                                              std::string message) {
  if (doubted_names_.insert(key).second) note(source, line_number, std::move(message));
}

void MetricsCollector::note_doubtful(const std::string& key, double v, std::size_t line_number,
                                     std::string_view source) {
  // Kept (the workload said so), but said: a time, a size, a count or a rate is never negative, and
  // no figure a job measures comes near 1e18; either is more often a bug in the report.
  if (v < 0)
    add_doubtful_note_once(key, line_number, source,
                           fmt::format("\"{}\" = {:g} is negative: kept, but a time, size, count or rate cannot be "
                                       "(check what the workload reports)",
                                       key, v));
  else if (std::fabs(v) >= kDoubtfulMagnitude)
    add_doubtful_note_once(key, line_number, source,
                           fmt::format("\"{}\" = {:g} is beyond any measured figure: kept, but check what the "
                                       "workload reports",
                                       key, v));
}

void MetricsCollector::add_json(std::string_view json_in, std::size_t line_number, std::string_view source) {
  std::string_view json = trim(json_in);
  // JSON must be UTF-8: a stray byte (a Latin-1 name, a cut multi-byte character) would make the
  // whole line unreadable, so it is replaced and the line is still read.
  std::string repaired;
  if (!core::is_valid_utf8(json)) {
    std::size_t n = 0;
    repaired = core::to_valid_utf8(json, &n);
    json = repaired;
    ++invalid_utf8_lines_;
    note(source, line_number,
         fmt::format("{} byte sequence{} not valid UTF-8, replaced by U+FFFD", n, n == 1 ? "" : "s"));
  }
  nlohmann::json j = nlohmann::json::parse(json.begin(), json.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    ++malformed_lines_;
    note(source, line_number, fmt::format("not valid JSON, line ignored: {}", excerpt(json)));
    return;
  }
  if (!j.is_object()) {
    ++malformed_lines_;
    note(source, line_number,
         fmt::format("expected a JSON object {{\"name\": number, ...}}, line ignored: {}", excerpt(json)));
    return;
  }
  if (j.contains("event")) {
    ++event_lines_;
    return;
  }
  for (const std::string& key : work_.add(j))
    note(source, line_number, fmt::format("\"{}\" is not a number >= 0: not counted as work", key));
  bool any = false;
  for (const auto& [key, value] : j.items()) {
    if (is_progress_key(key) || telemetry::is_work_key(key)) continue;
    if (value.is_number() && std::isfinite(value.get<double>())) {
      const double v = value.get<double>();
      figures_[key].push_back(v);
      any = true;
      note_doubtful(key, v, line_number, source);
      continue;
    }
    ++ignored_values_;
    if (!noted_names_[key]) {
      noted_names_[key] = true;
      note(source, line_number,
           fmt::format("\"{}\" is not a finite number ({}): ignored{}", key, excerpt(value.dump()),
                       value.is_string() ? " (put numbers in figures, names in events)" : ""));
    }
  }
  if (any) ++metric_lines_;
}

}  // namespace gpudoc::baseline
