// gpudoc::baseline metrics protocol — how a workload reports its own figures to gpudoc.
//
// On stdout, a line that starts with `::gpudoc ` followed by one JSON object:
//   ::gpudoc {"step_ms": 41.2, "accuracy": 0.9451}
// or, in the file named by $GPUDOC_METRICS, one JSON object per line (no prefix).
// Every numeric value is one sample of the figure with that name; a name printed again adds a
// sample (the figure's value is the median of its samples). Rules (README "The ::gpudoc metrics
// protocol"):
//   * a line with an "event" key is an event (start, end, phase...), not figures: it is counted,
//     its values are not samples;
//   * the progress keys "step", "n", "t" and "epoch" are counters, and "rank" (the process of a
//     distributed job that printed the line) is a label: none of them is a figure;
//   * the work keys "samples" and "tokens" (processed since the previous line) are not figures
//     either: with "step" they are the job's work (work(): telemetry/work.hpp, docs/cost.md);
//   * a non-numeric value (string, bool, null, array, object) is ignored with a note, once per name;
//   * a line that is not valid JSON, or not an object, is counted and named with its line number
//     in a note; it never stops the run;
//   * a negative value, or one of magnitude kDoubtfulMagnitude or more, is kept with a note, once per
//     name (a time, size, count or rate is never negative; no measured figure comes near 1e18);
//   * bytes that are not valid UTF-8 are replaced by U+FFFD (noted) and the line is read;
//   * a stdout line longer than kMaxMetricsLineBytes is not read; a ::gpudoc line of that size is
//     counted as malformed and named in a note.
//
//   baseline::MetricsCollector c;
//   c.add_stdout_line(R"(::gpudoc {"step_ms": 41.2})", 1);
//   c.figures().at("step_ms");          // {41.2}
//
// Not thread-safe: one collector per reader.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "telemetry/work.hpp"

namespace gpudoc::baseline {

using telemetry::kMetricsPrefix;
inline constexpr double kDoubtfulMagnitude = 1e18;
inline constexpr std::size_t kMaxNotes = 20;                               // notes kept; the rest are only counted
inline constexpr std::size_t kMaxMetricsLineBytes = std::size_t{1} << 20;  // 1 MiB

struct MetricsNote {
  std::string source;    // "stdout" or the metrics file's name
  std::size_t line = 0;  // 1-based line number in that source
  std::string message;
};

class MetricsCollector {
 public:
  // A line of the workload's stdout (without the newline). Lines without the prefix are ignored.
  void add_stdout_line(std::string_view line, std::size_t line_number);
  // A stdout line longer than kMaxMetricsLineBytes, of which only `head` (its start) was kept:
  // noted when it is a ::gpudoc line. `bytes`: its whole length.
  void add_oversized_stdout_line(std::string_view head, std::size_t line_number, std::size_t bytes);
  // A line of the $GPUDOC_METRICS file. Blank lines are ignored.
  void add_file_line(std::string_view line, std::size_t line_number, std::string_view source);
  // Every line of a whole metrics file's text.
  void add_file_text(std::string_view text, std::string_view source);

  // Samples per figure name, in the order they arrived.
  [[nodiscard]] const std::map<std::string, std::vector<double>>& figures() const { return figures_; }
  [[nodiscard]] const std::vector<MetricsNote>& notes() const { return notes_; }
  [[nodiscard]] std::size_t metric_lines() const { return metric_lines_; }  // lines that carried figures
  [[nodiscard]] std::size_t event_lines() const { return event_lines_; }
  [[nodiscard]] std::size_t malformed_lines() const { return malformed_lines_; }
  [[nodiscard]] std::size_t ignored_values() const { return ignored_values_; }
  [[nodiscard]] std::size_t notes_dropped() const { return notes_dropped_; }
  [[nodiscard]] std::size_t invalid_utf8_lines() const { return invalid_utf8_lines_; }  // read with bytes replaced
  // The work the lines reported: the largest "step", the sum of "samples" and of "tokens".
  [[nodiscard]] const telemetry::Work& work() const { return work_.work(); }

 private:
  void add_json(std::string_view json, std::size_t line_number, std::string_view source);
  void note(std::string_view source, std::size_t line, std::string message);
  void note_doubtful(const std::string& key, double v, std::size_t line_number, std::string_view source);
  void add_doubtful_note_once(const std::string& key, std::size_t line_number, std::string_view source,
                              std::string message);

  std::map<std::string, std::vector<double>> figures_;
  telemetry::WorkCounter work_;
  std::vector<MetricsNote> notes_;
  std::map<std::string, bool> noted_names_;
  std::set<std::string> doubted_names_;
  std::size_t metric_lines_ = 0, event_lines_ = 0, malformed_lines_ = 0, ignored_values_ = 0, notes_dropped_ = 0,
              invalid_utf8_lines_ = 0;
};

}  // namespace gpudoc::baseline
